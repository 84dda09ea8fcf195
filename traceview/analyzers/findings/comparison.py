"""The rules that explain the gap between two traces' steady steps, each with its sentence.

Every finding has a row in :data:`~traceview.analyzers.findings.table.COMPARISON_FINDINGS`
(docs/findings.md shows it): the named causes of the gap (``gap_<bucket>``, the waits for the
interpreter lock, the pauses), whether named causes explain it (``gap_explained``), or that there
is no gap to explain (``gap``). Advice reads what the comparison found about the two runs (the
same work slower, dtypes, threads, input beside the step).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from traceview.analyzers.findings import table as spec
from traceview.analyzers.findings.diagnosis import HALF_PRECISION, INTRA_OP_POOL, SLOWER_DTYPE_WHY, oversubscribed
from traceview.analyzers.findings.spec import FindingSpec, Phrase
from traceview.analyzers.findings.spec import rephrased as spec_rephrased
from traceview.results import GIL_WAIT_DETAIL, BucketDelta, Comparison, Finding
from traceview.text import BUCKET_LABEL, fmt_batches, fmt_ns, fmt_pct, fmt_ratio

GAP_CAUSE_PREFIX = "gap_"  # gap_<bucket>: a named cause of a comparison's gap


def _gap_summary(e: Mapping[str, Any], explains: float) -> str:
    if e.get("significant") is False:
        return "the steady steps differ by no more than their own spread: no cause of a gap to name"
    if e.get("run_to_run"):
        measured = "without the profiler " if e["unprofiled"] else ""
        return (f"both traces run the same ops at the same counts per step and nothing they record tells the runs "
                f"apart; their steps, {fmt_ratio(e['run_spread'])} apart {measured}(slower / faster), differ no more "
                f"than separate captures of one unchanged program do (up to {fmt_ratio(e['run_to_run_bound'])}): no "
                "cause of the program's to name"
                + ("" if e.get("shapes_compared") else
                   " (the traces record no tensor shapes or types: inputs of another size or dtype would look "
                   "the same)"))
    if "batch_ratio" in e:
        return (f"a baseline step holds {fmt_batches(e['batches_per_step_baseline'])} and a candidate step "
                f"{fmt_batches(e['batches_per_step_candidate'])}: the per-step gap is no cause of a slowdown "
                f"(per batch the candidate takes {fmt_ratio(e['batch_ratio'])} the baseline's time)")
    return "the steady steps take the same time"


def _cause_summary(bucket: str) -> Phrase:
    """The sentence of a named cause of the gap (gap_<bucket>, gap_paused)."""
    def phrase(e: Mapping[str, Any], explains: float) -> str:
        delta = e["delta_ns"]
        slower = "candidate" if delta > 0 else "baseline"
        return (f"{BUCKET_LABEL.get(bucket, bucket)}: {fmt_ns(abs(delta))} more per step in the {slower} "
                f"({fmt_pct(e['share_of_gap'])} of the gap)")
    return phrase


def _gap_gil_contention_summary(e: Mapping[str, Any], explains: float) -> str:
    delta = e["delta_ns"]
    return (f"waits for Python's interpreter lock: {fmt_ns(abs(delta))} more per step in the "
            f"{'candidate' if delta > 0 else 'baseline'} ({fmt_pct(e['share_of_gap'])} of the gap)")


def _gap_explained_summary(e: Mapping[str, Any], explains: float) -> str:
    return (f"named causes explain {fmt_pct(e['explained_share'])} of the gap; {fmt_ns(e['unexplained_ns'])} per "
            "step is time in which the traces record nothing")


# The sentence of each finding but the named buckets' (gap_<bucket>: _cause_summary of the bucket).
SUMMARIES: dict[str, Phrase] = {spec.GAP.name: _gap_summary, spec.GAP_GIL_CONTENTION.name: _gap_gil_contention_summary,
                                spec.GAP_PAUSED.name: _cause_summary("paused"),
                                spec.GAP_EXPLAINED.name: _gap_explained_summary}


def _summary_of(rule: str) -> Phrase:
    return SUMMARIES.get(rule) or _cause_summary(rule[len(GAP_CAUSE_PREFIX):])


def _found(row: FindingSpec, grade: str, evidence: Mapping[str, Any], advice: str = "") -> Finding:
    return row.finding(grade, evidence, advice, 0.0, _summary_of(row.name)(evidence, 0.0))


def _cause(bucket: str, grade: str, evidence: Mapping[str, Any], advice: str) -> Finding:
    """A bucket named as a cause of the gap: its row (``gap_<bucket>``) with the bucket's name."""
    finding = spec.GAP_CAUSE.finding(grade, evidence, advice, 0.0, _cause_summary(bucket)(evidence, 0.0))
    return replace(finding, rule=f"{GAP_CAUSE_PREFIX}{bucket}",
                   detects=spec.GAP_CAUSE.detects.replace("<bucket>", BUCKET_LABEL[bucket]))


def rephrased(finding: Finding) -> Finding:
    """A comparison's finding with its summary phrased anew from its evidence."""
    return spec_rephrased(finding, _summary_of(finding.rule))


# At most this many buckets are named as causes of a gap (gap_<bucket>), largest first; each when it
# explains more of the gap than its row's moderate threshold.
MOST_GAP_CAUSES = 3


# The same compute ops (by name, at the same count per step) are "the same work, slower" on one side
# when together they take at least this many times as long there and make up at least this share
# of the kernel delta: the math did not grow, the CPU each op got (or the size of its tensors) did.
SAME_WORK_SLOWER = (1.3, 0.5)
SIDES = ("baseline", "candidate")
# The slower side computes in another dtype when it runs at least this many times the other's dtype
# casts a step, and at least this many more (Keras mixed_float16 on CPU: 35 Cast ops against 12 a
# step, the same ops 77x as long).
MORE_DTYPE_CASTS = (2.0, 4.0)
# The slower side's input pipeline takes the cores from its math when it runs on other threads, a
# step, more than the other side's by at least this share of the same ops' extra time (tf.data
# mapping a Python function: 8.6 ms a step beside the step's math, the tf-input-pyfunc
# ground-truth pair; reading TFRecords: ~2.7 ms of map and parse beside 0.4 ms more of the same
# matmuls).
INPUT_BESIDE_SHARE = 0.5


def _same_work_slower(comparison: Comparison, kernel_delta: float) -> tuple[str, dict[str, object]]:
    """The gap_kernel advice where the kernel delta is the same ops at the same counts running
    slower (SAME_WORK_SLOWER), naming what the trace shows of why, and the evidence."""
    same = comparison.same_count_compute_ns
    if same is None or kernel_delta == 0:
        return "", {}
    slower = 1 if kernel_delta > 0 else 0
    fast, slow = same[1 - slower], same[slower]
    ratio = slow / fast if fast > 0 else 0.0
    share = (slow - fast) / abs(kernel_delta)
    evidence: dict[str, object] = {"same_ops_ratio": ratio, "same_ops_share_of_delta": share}
    if ratio < SAME_WORK_SLOWER[0] or share < SAME_WORK_SLOWER[1]:
        return "", evidence
    facts = [(d.timeline.meta.extra.get("capture") or {}).get("intra_op_threads") for d in
             (comparison.baseline, comparison.candidate)]
    workers = comparison.dataloader_workers
    casts = comparison.dtype_casts_per_step
    inputs = comparison.input_beside_step_ns
    if facts[0] and facts[1] and facts[0] != facts[1]:
        evidence["intra_op_threads"] = facts
        slow_side = comparison.candidate if slower else comparison.baseline
        over = oversubscribed(slow_side)
        why = (f"the {SIDES[slower]} ran {over[0]} (the {SIDES[1 - slower]} {facts[1 - slower]}): {over[1]}" if over[0] else
               f"the {SIDES[slower]} ran {facts[slower]} intra-op thread(s) against {facts[1 - slower]}: give "
               + INTRA_OP_POOL.get(slow_side.timeline.meta.framework, INTRA_OP_POOL[""]))
    elif "input dtypes" in comparison.known_differences:
        dtypes = comparison.input_dtype_changes[0][:2]  # (the change of the most ops)
        evidence["input_dtypes"] = list(dtypes)
        evidence["ops_on_other_dtypes_per_step"] = sum(calls for _, _, calls in comparison.input_dtype_changes)
        why = (f"the {SIDES[slower]}'s ops take {dtypes[slower]} inputs where the {SIDES[1 - slower]}'s take "
               f"{dtypes[1 - slower]} (the same ops, by the input types both traces record): "
               + _slower_dtype_why([d for d in dtypes[slower].split("+") if d not in dtypes[1 - slower].split("+")],
                                   comparison))
    elif workers[slower] and not workers[1 - slower]:
        evidence["own_dataloader_workers"] = True
        why = (f"the {SIDES[slower]}'s DataLoader worker processes (num_workers > 0; the other side has none) share "
               "the cores with its steps: fewer workers, or fewer intra-op threads, so that together they fit the cores")
    elif casts[slower] >= max(MORE_DTYPE_CASTS[0] * casts[1 - slower], casts[1 - slower] + MORE_DTYPE_CASTS[1]):
        evidence["dtype_casts_per_step"] = casts
        on_cpu = not (comparison.baseline.timeline.has_device or comparison.candidate.timeline.has_device)
        why = (f"the {SIDES[slower]} casts dtypes {casts[slower]:.0f} times a step against {casts[1 - slower]:.0f}: "
               "its math runs in another dtype (mixed precision); "
               + ("float16 / bfloat16 math on a CPU without native half-precision units runs slower than float32 — "
                  "keep float32 there, or " if on_cpu else "")
               + "check which ops got the new dtype")
    elif inputs[slower] - inputs[1 - slower] >= INPUT_BESIDE_SHARE * (slow - fast):
        evidence["input_beside_step_ns"] = inputs
        why = (f"the {SIDES[slower]}'s input pipeline runs {fmt_ns(inputs[slower])} a step on other threads beside "
               f"its math ({fmt_ns(inputs[1 - slower])} on the other side), on the same cores: give it fewer threads, "
               "cache or lighten its per-element work, or leave it cores the step's ops do not use")
    else:
        why = ("compare the two runs' intra-op threads, dtype (float64; float16 / bfloat16 on a CPU without fast "
               "half precision), tensor shapes, debug modes that work inside each op (torch.autograd.detect_anomaly "
               "records a Python stack per op), and what else ran on the machine")
        if comparison.gap_in_same_ops and not comparison.known_differences:
            # Nothing recorded tells the runs apart: a run the machine slowed is as likely as any.
            evidence["same_work"] = True
            why = (f"both traces run the same work and nothing else they record tells the runs apart (a run the "
                   f"machine slowed looks just like this: capture both again, alternating, on an otherwise idle "
                   f"machine); else {why}")
    return (f"the same compute ops, at the same counts per step, took {ratio:.1f}x as long in the {SIDES[slower]}: "
            f"not more ops but slower ones; {why}"), evidence


def _slower_dtype_why(slower_only: list[str], comparison: Comparison) -> str:
    """What a dtype only the slower side computes in costs (SLOWER_DTYPE_WHY; half precision only on
    a CPU)."""
    on_device = comparison.baseline.timeline.has_device or comparison.candidate.timeline.has_device
    for dtype in slower_only:
        if dtype in SLOWER_DTYPE_WHY and not (on_device and dtype in HALF_PRECISION):
            return SLOWER_DTYPE_WHY[dtype]
    return "the same ops run in another dtype: check which ops got it and whether they need it"


def _same_ops_dispatched_slower(comparison: Comparison, launch: BucketDelta) -> tuple[str, dict[str, object]]:
    """The gap_launch_overhead advice where the gap is the same ops running slower
    (Comparison.gap_in_same_ops): each dispatched slower on one side; and the evidence."""
    if not comparison.gap_in_same_ops or launch.delta_ns == 0:
        return "", {}
    slower = 1 if launch.delta_ns > 0 else 0
    times = (launch.baseline_ns, launch.candidate_ns)
    ratio = times[slower] / times[1 - slower] if times[1 - slower] > 0 else 0.0
    differ = comparison.known_differences
    told = (f"the traces differ in {', '.join(differ)}" if differ else
            "nothing else the traces record tells the two runs apart")
    return (f"both traces run the same ops at the same counts per step; each took {ratio:.1f}x as long to dispatch "
            f"in the {SIDES[slower]}: not more ops but slower host work per op ({told}); compare the two runs' "
            "framework versions, debug modes and tracers that work around each op (torch.autograd.detect_anomaly, "
            "a debugger or coverage tool: sys.settrace), profiler options, and what else ran on the machine"), \
        {"same_work": True, "dispatch_ratio": ratio, "known_differences": list(differ)}


def _anomaly_detection_on_one_side(comparison: Comparison, delta: BucketDelta) -> tuple[str, dict[str, object]]:
    """The advice of a launch/dispatch or kernel delta that grows on the only side running torch's
    autograd anomaly detection (its checks are dispatch, its stacks Python inside the forward ops,
    in the ops' own time without Python events); and the evidence."""
    on = comparison.anomaly_detection
    grew = 1 if delta.delta_ns > 0 else 0
    if delta.bucket not in ("kernel", "launch_overhead") or not on[grew] or on[1 - grew]:
        return "", {}
    return (f"the {SIDES[grew]} runs torch's autograd anomaly detection — NaN checks after each backward node, a "
            f"Python stack stored by each forward op (anomaly_detection in the {SIDES[grew]}'s findings) — and the "
            f"{SIDES[1 - grew]}'s trace shows none of it: it is part of this; turn it off outside debugging"), \
        {"anomaly_detection_only": SIDES[grew]}


def comparison_findings(comparison: Comparison) -> list[Finding]:
    """What explains the gap, as findings: the top causes and whether the gap is explained."""
    out: list[Finding] = []
    gap = comparison.gap_ns
    if gap == 0:
        return [_found(spec.GAP, "none", {})]
    if not comparison.significant:
        # The ratio's interval holds 1: the per-cause deltas are step-time noise, no cause to name.
        return [_found(spec.GAP, "none", {"significant": False})]
    if comparison.batch_ratio is not None:
        # A step holds a different number of batches on each side: a per-step gap is mostly the
        # extra batches, no cause of a slowdown (the headline gives the ratio per batch).
        a, b = comparison.batches_per_step
        return [_found(spec.GAP, "none", {"batches_per_step_baseline": a, "batches_per_step_candidate": b,
                                          "batch_ratio": comparison.batch_ratio},
                       f"capture both with the same batches per step ({a} vs {b}) to compare their causes")]
    if comparison.run_to_run:
        # The same ops at the same counts, nothing recorded that tells the runs apart, and a gap
        # that separate runs of one unchanged program also show: no cause of the program's to name.
        spread, bound, unprofiled = comparison.run_spread
        return [_found(spec.GAP, "none",
                       {"same_work": True, "run_to_run": True, "run_spread": spread, "run_to_run_bound": bound,
                        "unprofiled": unprofiled, "shapes_compared": comparison.shapes_compared},
                       ("" if comparison.shapes_compared else
                        "if the two runs feed inputs of another size (batch, sequence, model width) or dtype, that "
                        "is the difference: these traces record no tensor shapes or types to show it; else ")
                       + "capture each side several times, alternating between them, on an otherwise idle machine, "
                       "and compare their medians: one capture a side cannot tell a difference this small from "
                       "the runs' own")]
    for d in comparison.ranked()[:MOST_GAP_CAUSES]:
        share = d.delta_ns / gap
        if spec.GAP_CAUSE.grade(share) == "none":
            break
        evidence: dict[str, object] = {"delta_ns": d.delta_ns, "share_of_gap": share}
        if d.bucket == GIL_WAIT_DETAIL:
            out.append(_found(
                spec.GAP_GIL_CONTENTION, spec.GAP_GIL_CONTENTION.grade(share), evidence,
                f"the {SIDES[1 if d.delta_ns > 0 else 0]}'s step thread waits for Python's interpreter lock while "
                "another thread of its process runs Python: diagnose that side (its gil_contention finding says how "
                "to find and move that thread)"))
            continue
        words, more = _anomaly_detection_on_one_side(comparison, d)
        if words:
            evidence.update(more)
        elif d.bucket == "kernel":
            words, more = _same_work_slower(comparison, d.delta_ns)
            evidence.update(more)
        elif d.bucket == "launch_overhead":
            words, more = _same_ops_dispatched_slower(comparison, d)
            evidence.update(more)
        out.append(_cause(d.bucket, spec.GAP_CAUSE.grade(share), evidence, words))
    paused = comparison.paused_delta_ns
    if spec.GAP_PAUSED.grade(abs(paused / gap)) != "none":
        # Pauses (the machine took the core) are an explanation neither framework owns, unless the
        # paused side's own DataLoader workers are what took it.
        share = paused / gap
        paused_side = 1 if paused > 0 else 0
        own_workers = comparison.dataloader_workers[paused_side] and not comparison.dataloader_workers[1 - paused_side]
        # (Listed for the pauses' size either way; graded high only where they grew with the gap.)
        out.append(_found(
            spec.GAP_PAUSED, "high" if spec.GAP_PAUSED.grade(share) == "high" else "moderate",
            {"delta_ns": paused, "share_of_gap": share, "own_dataloader_workers": own_workers},
            (f"the {SIDES[paused_side]}'s own DataLoader worker processes (num_workers > 0; the other side has none) "
             "run beside its steps and take cores from them: fewer workers, or fewer intra-op threads, so that "
             "together they fit the cores" if own_workers else
             "the machine took the core during one trace's steps: capture both traces on an otherwise idle "
             "machine before comparing them")))
    explained = comparison.explained_share
    grade = spec.GAP_EXPLAINED.grade(explained)
    out.append(_found(
        spec.GAP_EXPLAINED, grade, {"explained_share": explained, "unexplained_ns": comparison.unexplained_ns},
        "" if grade == "none" else "profile with the Python tracer to see what the host does in the unrecorded time"))
    return out
