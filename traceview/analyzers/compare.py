"""Explain why one trace's steady-state step is slower than another's.

``compare(baseline, candidate)`` takes two diagnoses and returns a :class:`Comparison`:

- step times and ratio: mean steady-state step of each (the per-bucket means sum to it exactly,
  so the bucket deltas sum exactly to the gap) and the median, which the diagnose report shows;
- bucket deltas: candidate − baseline per bucket, in ns per step and as a share of the gap.
  ``idle`` (time in which the trace records nothing) is not an explanation: its delta is reported
  as *unexplained*; ``explained_share`` = 1 − unexplained / gap; the pauses in it
  (``idle.paused``: the machine took the step thread's core) are explained, as neither
  framework's doing (a ``gap_paused`` finding when they matter);
- op families: framework ops and kernels mapped to common families (matmul, conv, elementwise,
  reduction, normalization, loss, optimizer, copy, other; patterns in ``categories.OP_FAMILIES``)
  with, per steady step: top-level op count, compute time (device kernels on device traces, each
  in its launcher's family; compute ops on CPU traces by their own time as math, each in its
  top-level op's family where that op's name has one — a multi-tensor optimizer op computes
  through ``aten::add`` — else its own) and host dispatch time per op (inclusive host time of
  the top-level op minus the compute inside it);
- per-op diff: the ops and kernels of both traces aligned by exact name (the diagnose report's
  kernel and framework-op tables, every row), count and time per steady step on each side,
  largest absolute difference first. Names are matched exactly or not at all: across frameworks
  the same math runs under other names (``aten::mm``, ``MatMul``), and a loose match could pair
  unrelated ops — the op families above are where frameworks meet;
- cold start: first cold step, its graph-build time, and how many steady steps it takes for the
  trace with the faster steady state to pay back a larger cold step.

The result is a :class:`~traceview.results.Comparison`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from traceview import categories as cat
from traceview.analyzers.gaps import driver_rows
from traceview.analyzers.modes import compiled_regions_per_step, dataloader_workers
from traceview.analyzers.findings.comparison import comparison_findings
from traceview.analyzers.findings.diagnosis import anomaly_detection_on
from traceview.analyzers.unprofiled import unprofiled_buckets
from traceview.analyzers.top import TOP_N, top_kernels, top_ops
from traceview.arrays import column_codes, first_of_each, membership
from traceview.capture_facts import declared_cold_steps
from traceview.normalize import (compute_ops, compute_self_time, math_ops, nearest_ancestor, op_name_codes,
                                 outermost_rows, top_level_ops)
from traceview.results import (OP_DIFF_COLUMNS, PAUSED_DETAIL, BucketDelta, ColdStart, Comparison, Diagnosis,
                               shown_buckets)
from traceview.roles import Role
from traceview.schema import Kind
from traceview.table import Table
from traceview.text import THIN_COLD_ONLY, THIN_ONE_STEP, fmt_ratio

FAMILIES: tuple[str, ...] = tuple(f for f, _ in cat.OP_FAMILIES) + ("other",)


BOOTSTRAP_RESAMPLES = 2000
# Cold and steady steps that differ by no more than this share are the same (a trace against
# itself, or two captures of the same program).
SAME_COLD_SHARE = 0.02
INTERVAL = 0.95


def steady_durations(diag: Diagnosis, without_pauses: bool = False) -> np.ndarray:
    """The steady steps' durations; ``without_pauses``: less their pauses (``idle.paused``: the
    machine took the step thread's core)."""
    positions = diag.steady_positions
    duration = diag.steps.table["duration"][positions].astype(np.float64)
    details = diag.attribution.details
    if without_pauses and PAUSED_DETAIL in details.columns:
        duration -= details[PAUSED_DETAIL][positions].astype(np.float64)
    return duration


def ratio_interval(baseline: Diagnosis, candidate: Diagnosis) -> tuple[tuple[float, float] | None, bool]:
    """The ratio's 95 % interval, and whether it leaves the pauses out.

    Pauses are the machine's, not the program's: one paused step widens the interval until a real
    difference reads as noise (a 2.2 ms pause in one of five foreach-Adam steps hid an 18 % faster
    optimizer). So where the steps paused, the interval of their durations less the pauses is taken
    when it excludes 1 on the side the ratio of the means is on; otherwise (or with no pause) the
    interval of the durations as they are."""
    base, cand = steady_durations(baseline), steady_durations(candidate)
    plain = _bootstrap(base, cand)
    base_less, cand_less = steady_durations(baseline, True), steady_durations(candidate, True)
    if plain is None or (base_less == base).all() and (cand_less == cand).all():
        return plain, False
    clean = _bootstrap(base_less, cand_less)
    if clean is not None and not clean[0] <= 1.0 <= clean[1] and (clean[0] > 1.0) == (cand.mean() > base.mean()):
        return clean, True
    return plain, False


def _bootstrap(base: np.ndarray, cand: np.ndarray) -> tuple[float, float] | None:
    """Percentile bootstrap of mean(candidate steps) / mean(baseline steps), steps resampled with
    replacement on each side independently (seed 0)."""
    if len(base) < 2 or len(cand) < 2 or base.sum() <= 0:
        return None
    rng = np.random.default_rng(0)
    base_means = base[rng.integers(0, len(base), (BOOTSTRAP_RESAMPLES, len(base)))].mean(axis=1)
    cand_means = cand[rng.integers(0, len(cand), (BOOTSTRAP_RESAMPLES, len(cand)))].mean(axis=1)
    ratios = cand_means / np.maximum(base_means, 1.0)
    tail = (1.0 - INTERVAL) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def compare(baseline: Diagnosis, candidate: Diagnosis, top: int | None = TOP_N) -> Comparison:
    """Explain the candidate's steady step against the baseline's; ``top`` rows of the per-op
    diff (``None``: all of them)."""
    a = baseline.steady_attribution()
    b = candidate.steady_attribution()
    # The buckets either report shows (communication only where a trace has collectives).
    shown = shown_buckets(baseline.communication is not None or candidate.communication is not None)
    buckets = tuple(BucketDelta(bucket, a.get(bucket, 0.0), b.get(bucket, 0.0)) for bucket in shown)
    unprofiled_a, unprofiled_b = unprofiled_buckets(baseline), unprofiled_buckets(candidate)
    unprofiled = tuple(BucketDelta(bucket, unprofiled_a.get(bucket, 0.0), unprofiled_b.get(bucket, 0.0))
                       for bucket in shown) if unprofiled_a is not None and unprofiled_b is not None else ()
    fam_a = op_families(baseline)
    fam_b = op_families(candidate)
    families = pd.concat([fam_a.add_prefix("baseline_"), fam_b.add_prefix("candidate_")], axis=1).fillna(0.0)
    families = families.reindex([f for f in FAMILIES if f in families.index])
    interval, without_pauses = ratio_interval(baseline, candidate)
    aligned = op_diff(baseline, candidate, None)
    elements = (input_elements_per_step(baseline), input_elements_per_step(candidate))
    dtypes = dtype_changes(baseline, candidate)
    recorded = (recorded_extras(baseline), recorded_extras(candidate))
    result = Comparison(baseline, candidate, buckets, families, aligned if top is None else aligned.head(top),
                        _cold_start(baseline, candidate, interval), interval, interval_without_pauses=without_pauses,
                        thin_sides=_thin_sides(baseline, candidate),
                        compiled_regions=_compiled_regions(baseline, candidate),
                        same_count_compute_ns=(None if _runs_compiled_code(baseline) or _runs_compiled_code(candidate)
                                               else same_count_compute(aligned)),
                        dataloader_workers=(dataloader_workers(baseline.timeline), dataloader_workers(candidate.timeline)),
                        dtype_casts_per_step=dtype_casts_per_step(aligned),
                        recorded=recorded, unprofiled_buckets=unprofiled,
                        input_beside_step_ns=(input_beside_step_ns(baseline), input_beside_step_ns(candidate)),
                        same_work_shares=same_work_shares(aligned),
                        known_differences=known_differences(baseline, candidate, recorded, elements, dtypes),
                        shapes_compared=None not in elements, input_dtype_changes=dtypes,
                        anomaly_detection=(anomaly_detection_on(baseline), anomaly_detection_on(candidate)))
    return concluded(result)


# The two sides' profiler inflations (profiled / unprofiled step) differ by more than this factor:
# the compare headline says so beside the unprofiled ratio.
UNEVEN_INFLATION = 1.25

# Two traces run the same work when the ops and kernels at the same count per step on both sides
# hold at least this share of each side's op and kernel time (Comparison.same_work_shares).
SAME_WORK_SHARE = 0.95
# Separate runs of one unchanged program differ in mean steady step by up to this ratio (slower /
# faster), as profiled: benchmarks/run_to_run.py captured 5 framework modes x 2 workloads 4 times
# each, every capture its own process, on a shared 2-core VM; with the three same-program
# ground-truth pairs, 69 pairs of captures of one program, the largest 1.44x (a run the machine
# slowed: each of its kernels ~2x as long; the profiler's own inflation of one program varied
# 1.8x-2.9x between runs), 64 within 1.25x. A gap of the same work within it is no difference one
# pair of captures can show.
RUN_TO_RUN_RATIO = 1.45
# The same without the profiler, where both captures timed their steps unprofiled (traceview
# collect's manifests): those 60 pairs were within 1.19x. That ratio, which no profiler distorts,
# then decides.
UNPROFILED_RUN_TO_RUN_RATIO = 1.25
# The buckets a run's speed moves for the same work: the ops' compute, transfers and dispatch,
# and the host's waits on them. Where the same work's gap is at least OPS_GAP_SHARE of them, it is
# the same ops running slower; elsewhere (Python, input, graph building, pauses) it is work the
# per-op alignment does not see.
OPS_BUCKETS = ("kernel", "communication", "memcpy", "sync_wait", "launch_overhead")
OPS_GAP_SHARE = 0.75


def concluded(result: Comparison) -> Comparison:
    """The comparison with what the analysis concludes of its gap (the verdict fields: significant,
    same_work, gap_in_same_ops, run_to_run …) and the findings that follow from them."""
    interval = result.ratio_interval
    gap = result.gap_ns
    same_work = min(result.same_work_shares) >= SAME_WORK_SHARE
    ops_gap_share = sum(d.delta_ns for d in result.buckets if d.bucket in OPS_BUCKETS) / gap if gap else 0.0
    gap_in_same_ops = same_work and ops_gap_share >= OPS_GAP_SHARE
    unprofiled = result.unprofiled_ratio
    ratio, bound = ((unprofiled, UNPROFILED_RUN_TO_RUN_RATIO) if unprofiled is not None
                    else (result.ratio, RUN_TO_RUN_RATIO))
    spread = (max(ratio, 1 / ratio) if 0 < ratio < math.inf else math.inf), bound, unprofiled is not None
    inflations = result.baseline.profiler_inflation, result.candidate.profiler_inflation
    verdict = dataclasses.replace(
        result,
        significant=interval is None or not interval[0] <= 1.0 <= interval[1],
        same_work=same_work, ops_gap_share=ops_gap_share, gap_in_same_ops=gap_in_same_ops, run_spread=spread,
        # The gap is no more than separate runs of one program show: the same work, nothing recorded
        # that tells the runs apart, the gap in the ops' own time, and the ratio within the runs' own
        # variation either way (unprofiled where both captures timed their steps).
        run_to_run=(gap_in_same_ops and not result.known_differences and result.batch_ratio is None
                    and spread[0] <= bound),
        uneven_inflation=bool(inflations[0] and inflations[1]
                              and max(inflations) / min(inflations) > UNEVEN_INFLATION))
    return dataclasses.replace(verdict, findings=tuple(comparison_findings(verdict)))


# Compute ops whose counts per steady step differ by no more than this share are the same work
# on both sides (same_count_compute).
SAME_COUNT_SHARE = 0.1


def _runs_compiled_code(diag: Diagnosis) -> bool:
    """Whether the trace runs compiled programs (XLA, inductor): their ops are named by the compiler
    per program (``dot.3``, ``fusion.2``), so the same name on two sides is no sign of the same work."""
    return bool(membership(diag.timeline.table["role"])([Role.COMPILED_CODE.value]).any())


def same_count_compute(aligned: pd.DataFrame) -> tuple[float, float] | None:
    """The time per steady step, (baseline, candidate), of the compute ops (``kernel`` rows of the
    full per-op diff) that run as many times a step on both sides: the same work, by name and
    count. ``None`` where no compute op is in both traces at the same count."""
    rows = aligned[aligned["kind"] == "kernel"]
    same = _at_same_count(rows)
    if not same.any():
        return None
    return (float(rows["baseline_time_per_step_ns"].to_numpy(dtype=np.float64)[same].sum()),
            float(rows["candidate_time_per_step_ns"].to_numpy(dtype=np.float64)[same].sum()))


def _at_same_count(rows: pd.DataFrame) -> np.ndarray:
    """Which rows of the per-op diff run on both sides, as many times a step (SAME_COUNT_SHARE)."""
    count_a = rows["baseline_count_per_step"].to_numpy(dtype=np.float64)
    count_b = rows["candidate_count_per_step"].to_numpy(dtype=np.float64)
    return (count_a > 0) & (np.abs(count_b - count_a) <= SAME_COUNT_SHARE * count_a)  # (NaN: not both)


def same_work_shares(aligned: pd.DataFrame) -> tuple[float, float]:
    """The share of each side's op and kernel time per steady step, (baseline, candidate), held by
    the names (rows of the full per-op diff) that run as many times a step on both sides
    (SAME_COUNT_SHARE): 1.0 on both sides where the two traces run the same ops and kernels."""
    same = _at_same_count(aligned)
    shares = []
    for side in ("baseline", "candidate"):
        time = np.nan_to_num(aligned[f"{side}_time_per_step_ns"].to_numpy(dtype=np.float64))
        total = float(time.sum())
        shares.append(float(time[same].sum()) / total if total > 0 else 0.0)
    return shares[0], shares[1]


def known_differences(baseline: Diagnosis, candidate: Diagnosis,
                      recorded: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
                      elements: tuple[float | None, float | None] | None = None,
                      dtypes: tuple[tuple[str, str, float], ...] | None = None) -> tuple[str, ...]:
    """What the two traces record differently about how they ran, beside their ops
    (Comparison.known_differences): the framework, the host, the devices, what the profiler
    recorded (RECORDED_EXTRAS), the ops' input shapes and input dtypes where both record them,
    whether either trace shows torch's autograd anomaly detection (rules.anomaly_detection_on, the
    whole trace), and the capture facts both manifests state (CAPTURE_FACTS_COMPARED); ``recorded``,
    ``elements`` and ``dtypes``: each side's recorded_extras and input_elements_per_step, and the
    dtype_changes, when the caller has them. Empty where nothing recorded tells the two runs
    apart."""
    differ: list[str] = []
    a, b = baseline.timeline.meta, candidate.timeline.meta
    if a.framework != b.framework:
        differ.append("framework")
    if a.host_name and b.host_name and a.host_name != b.host_name:
        differ.append("host")
    if sorted(d.name for d in a.devices) != sorted(d.name for d in b.devices):
        differ.append("devices")
    recorded_a, recorded_b = recorded or (recorded_extras(baseline), recorded_extras(candidate))
    if recorded_a != recorded_b:
        differ.append("recorded")
    first, second = elements or (input_elements_per_step(baseline), input_elements_per_step(candidate))
    if first is not None and second is not None and abs(first - second) > SAME_ELEMENTS_SHARE * max(first, second):
        differ.append("input shapes")
    if dtypes if dtypes is not None else dtype_changes(baseline, candidate):
        differ.append("input dtypes")
    if anomaly_detection_on(baseline, steady=False) != anomaly_detection_on(candidate, steady=False):
        differ.append("anomaly detection")
    facts_a, facts_b = a.extra.get("capture") or {}, b.extra.get("capture") or {}
    differ.extend(fact for fact in CAPTURE_FACTS_COMPARED
                  if fact in facts_a and fact in facts_b and facts_a[fact] != facts_b[fact])
    return tuple(differ)


def input_elements_per_step(diag: Diagnosis) -> float | None:
    """The input elements of the ops a steady step runs, summed (torch record_shapes); None where
    the trace records no input shapes."""
    ev = diag.timeline.table
    if "elements" not in ev.columns:
        return None
    elements = ev["elements"]
    rows = diag.steps.in_steady(ev) & (elements >= 0)
    if not rows.any():
        return None
    return float(elements[rows].sum()) / max(len(diag.steady_positions), 1)


def dtype_changes(baseline: Diagnosis, candidate: Diagnosis) -> tuple[tuple[str, str, float], ...]:
    """The ops both traces run whose input dtypes changed (torch record_shapes' ``Input type``, as
    kineto_fields.input_dtypes_label): for each op name both run with recorded types, its calls
    per steady step on dtypes the other side never gives it, as many on each side (the fewer),
    count for the pair (baseline dtypes, candidate dtypes) most such calls take. Pairs with the
    most calls first; empty unless they add up to DTYPE_CHANGE_SHARE of the calls both run with
    recorded types. Calls one side adds on other dtypes change nothing (TorchScript's extra bool
    casts beside eager's float ones); float64 for float32 changes every op."""
    sides = [_dtypes_by_op(baseline), _dtypes_by_op(candidate)]
    changed: dict[tuple[str, str], float] = {}
    total = 0.0
    for name in sorted(sides[0].keys() & sides[1].keys()):
        calls_a, calls_b = sides[0][name], sides[1][name]
        total += min(sum(calls_a.values()), sum(calls_b.values()))
        only_a = {dtypes: calls for dtypes, calls in calls_a.items() if dtypes not in calls_b}
        only_b = {dtypes: calls for dtypes, calls in calls_b.items() if dtypes not in calls_a}
        moved = min(sum(only_a.values()), sum(only_b.values()))
        if moved > 0:
            pair = (_most_calls(only_a), _most_calls(only_b))
            changed[pair] = changed.get(pair, 0.0) + moved
    if not changed or sum(changed.values()) < DTYPE_CHANGE_SHARE * total:
        return ()
    return tuple((a, b, calls) for (a, b), calls in sorted(changed.items(), key=lambda item: (-item[1], item[0])))


def _most_calls(calls: dict[str, float]) -> str:
    """The dtypes most calls take (ties: the first in sorted order, whatever the categories' order)."""
    return min(calls.items(), key=lambda item: (-item[1], item[0]))[0]


def _dtypes_by_op(diag: Diagnosis) -> dict[str, dict[str, float]]:
    """Each op name a steady step runs with recorded input types: its calls per steady step on each
    dtypes label."""
    ev = diag.timeline.table
    if "input_dtypes" not in ev.columns:
        return {}
    labels, names = ev["input_dtypes"], ev["name"]
    label_codes = np.asarray(labels.codes, dtype=np.int64)
    empty = labels.categories.tolist().index("") if "" in labels.categories.tolist() else -1
    rows = diag.steps.in_steady(ev) & (label_codes >= 0) & (label_codes != empty)
    if not rows.any():
        return {}
    width = len(labels.categories)
    pairs, calls = np.unique(np.asarray(names.codes, dtype=np.int64)[rows] * width + label_codes[rows],
                             return_counts=True)
    steps = max(len(diag.steady_positions), 1)
    name_values, label_values = names.categories.tolist(), labels.categories.tolist()
    by_op: dict[str, dict[str, float]] = {}
    for pair, count in zip(pairs.tolist(), calls.tolist()):
        by_op.setdefault(name_values[pair // width], {})[label_values[pair % width]] = count / steps
    return by_op


# Two traces' ops take inputs of other shapes when their input elements per step differ by more
# than this share (a batch of 64 against 128 doubles them; the same program's steps repeat them).
SAME_ELEMENTS_SHARE = 0.01
# Two traces run in other dtypes when at least this share of the calls of the ops both run take
# inputs of dtypes the other side never gives that op (dtype_changes).
DTYPE_CHANGE_SHARE = 0.01
# Capture facts (the manifest's, capture_facts.py) that tell two runs apart when they differ.
CAPTURE_FACTS_COMPARED = ("workload", "intra_op_threads")


# What a trace can record beside its ops that changes how they read (Comparison.recorded):
# ``python_events``: the Python tracer's frames (torch with_stack=True, JAX's default tracer, TF's
# python_tracer_level), whose own cost lands in the host time around every op; ``input_shapes``:
# torch record_shapes=True, by which an op on a tiny input counts as dispatch (roles.TINY_OP_ELEMENTS).
RECORDED_EXTRAS = ("python_events", "input_shapes")


def recorded_extras(diag: Diagnosis) -> tuple[str, ...]:
    """Which of RECORDED_EXTRAS the diagnosis's trace holds."""
    ev = diag.timeline.table
    python = bool(membership(ev["kind"])([Kind.PYTHON.value]).any())
    shapes = "elements" in ev.columns and bool((ev["elements"] >= 0).any())
    return tuple(extra for extra, held in zip(RECORDED_EXTRAS, (python, shapes)) if held)


def input_beside_step_ns(diag: Diagnosis) -> float:
    """Input pipeline work (role input) on threads other than the step's, per steady step: the
    outermost such events' time (tf.data's map and parse on its own threads, a DataLoader's
    in-process pin-memory thread), which shares the machine's cores with the step's math."""
    ev = diag.timeline.table
    if not diag.steps.driver_track:
        return 0.0
    work = membership(ev["role"])([Role.INPUT.value]) & ~driver_rows(ev, diag.steps) & diag.steps.in_steady(ev)
    return float(ev["dur"][outermost_rows(ev, work)].sum()) / max(len(diag.steady_positions), 1)


def dtype_casts_per_step(aligned: pd.DataFrame) -> tuple[float, float]:
    """Dtype casts (categories.DTYPE_CAST) a steady step runs on each side, (baseline, candidate),
    from the full per-op diff: each name counted once, at the larger of its kernel and op rows."""
    casts = aligned[aligned["name"].str.contains(cat.DTYPE_CAST)]
    per_name = casts.groupby("name", sort=True)[["baseline_count_per_step", "candidate_count_per_step"]].max()
    return (float(per_name["baseline_count_per_step"].fillna(0.0).sum()),
            float(per_name["candidate_count_per_step"].fillna(0.0).sum()))


def _compiled_regions(baseline: Diagnosis, candidate: Diagnosis) -> tuple[float, float] | None:
    """torch.compile regions per steady step on each side, where either side ran torch.compile."""
    if "torch-compile" not in (baseline.mode, candidate.mode):
        return None
    return (compiled_regions_per_step(baseline.timeline, baseline.steps),
            compiled_regions_per_step(candidate.timeline, candidate.steps))


def _thin_sides(baseline: Diagnosis, candidate: Diagnosis) -> tuple[tuple[str, str], ...]:
    """The sides whose steady state is too thin for the ratio's usual weight (Comparison.thin_sides):
    every profiled step declared cold or warm-up by the capture's manifest (one stands in), else
    fewer than two steady steps (one step is no measure of its noise)."""
    thin: list[tuple[str, str]] = []
    for side, diag in (("baseline", baseline), ("candidate", candidate)):
        declared = declared_cold_steps(diag.timeline.meta.extra.get("capture") or {})
        numbers = set(int(n) for n in diag.steps.table["number"])
        if declared and numbers and numbers <= declared:
            thin.append((side, THIN_COLD_ONLY))
        elif len(diag.steady_positions) < 2:
            thin.append((side, THIN_ONE_STEP))
    return tuple(thin)


# Per-op diff rows: (kind, the table of one trace it comes from). ``kernel``: device kernels, or on
# a CPU-only trace the compute ops by self time (what the attribution counts as kernel time);
# ``op``: top-level framework ops by inclusive host time. The same tables as the diagnose report's.
OP_DIFF_SOURCES = (("kernel", top_kernels), ("op", top_ops))


def op_diff(baseline: Diagnosis, candidate: Diagnosis, top: int | None = TOP_N) -> pd.DataFrame:
    """Ops and kernels of the two traces aligned by exact name: count and time per steady step on
    each side and the time difference (candidate − baseline), largest absolute difference first;
    ``top`` rows (``None``: all). A name on one side only has NaN on the other: names are never
    matched loosely, so no op is paired with an unrelated one."""
    keep = ["name", "count_per_step", "time_per_step_ns"]
    sides = []
    for kind, table in OP_DIFF_SOURCES:
        a = table(baseline.timeline, baseline.steps, None, baseline.attribution.paused_events).to_pandas()[keep]
        b = table(candidate.timeline, candidate.steps, None, candidate.attribution.paused_events).to_pandas()[keep]
        merged = a.merge(b, on="name", how="outer", suffixes=("_a", "_b"))
        sides.append(pd.DataFrame({
            "name": merged["name"].astype(str),
            "kind": kind,
            "baseline_count_per_step": merged["count_per_step_a"].astype(float),
            "candidate_count_per_step": merged["count_per_step_b"].astype(float),
            "baseline_time_per_step_ns": merged["time_per_step_ns_a"].astype(float),
            "candidate_time_per_step_ns": merged["time_per_step_ns_b"].astype(float),
        }))
    frame = pd.concat(sides, ignore_index=True)
    frame["delta_ns"] = (frame["candidate_time_per_step_ns"].fillna(0.0)
                         - frame["baseline_time_per_step_ns"].fillna(0.0))
    frame["_size"] = -frame["delta_ns"].abs()
    frame = frame.sort_values(["_size", "kind", "name"], kind="stable").drop(columns="_size")
    frame = frame if top is None else frame.head(top)
    return frame.reset_index(drop=True)[list(OP_DIFF_COLUMNS)]


def op_families(diag: Diagnosis) -> pd.DataFrame:
    """Per family, per steady step: top-level ops, compute time, host dispatch time per op."""
    ev = diag.timeline.table
    steady = diag.steps.in_steady(ev)
    n = max(len(diag.steady_positions), 1)
    # Families as positions in FAMILIES, each name's decided once per distinct name.
    codes, values = op_name_codes(ev)
    family = _family_codes([str(value) for value in values] + [str(np.nan)])[codes]  # (the last: code -1, no name)
    family[_under_optimizer_scope(ev)] = FAMILIES.index("optimizer")
    inclusive = ev["dur"]

    named = family  # (each row's family by its own name, optimizer scope applied)
    compute = compute_ops(ev)
    family = _family_from_first_compute(ev, family, compute)
    top = steady & top_level_ops(ev)
    if diag.timeline.has_device:
        compute_rows = steady & membership(ev["kind"])([Kind.KERNEL.value])
        # A kernel takes its launcher's family; one without a launcher (an empty name), its own name's.
        launcher_codes, launchers = column_codes(ev["launcher"])
        launcher_names = [str(x) for x in launchers] + [str(np.nan)]
        has_launcher = np.array([name != "" for name in launcher_names], dtype=bool)[launcher_codes]
        compute_family = np.where(has_launcher, _family_codes(launcher_names)[launcher_codes], family)
        compute_time = inclusive
        compute_inside = np.zeros(len(ev), dtype=np.int64)  # device work does not block host dispatch
    else:
        compute_rows = steady & math_ops(ev)
        compute_family = _family_of_named_owner(ev, named, compute_rows)
        compute_time = compute_self_time(ev)  # on CPU an op computes during its self time
        compute_inside = _compute_inside_top(ev, compute, compute_time)
    rows = []
    for position, fam in enumerate(FAMILIES):
        ops = top & (family == position)
        comp = compute_rows & (compute_family == position)
        count = int(ops.sum())
        dispatch = float((inclusive[ops] - compute_inside[ops]).sum())
        rows.append(
            {
                "family": fam,
                "ops_per_step": count / n,
                "compute_ns": float(compute_time[comp].sum()) / n,
                "dispatch_ns_per_op": dispatch / count if count else 0.0,
            }
        )
    frame = pd.DataFrame(rows).set_index("family")
    return frame[(frame != 0).any(axis=1)]


def _family_codes(names: list[str]) -> np.ndarray:
    """Each name's family (:func:`categories.op_family`) as its position in FAMILIES."""
    return np.array([FAMILIES.index(cat.op_family(name)) for name in names], dtype=np.int8)


def _under_optimizer_scope(ev: Table) -> np.ndarray:
    """Rows inside (or being) torch's Optimizer.step / zero_grad annotations."""
    scope = np.array([n.startswith(cat.TORCH_OPTIMIZER_RANGES) for n in ev["name"].categories] + [False])[
        ev["name"].codes]
    return nearest_ancestor(ev, np.arange(len(ev)), scope) >= 0


def _top_owner(ev: Table, rows: np.ndarray) -> np.ndarray:
    """For each row, its top-level op ancestor (or itself if it is one); -1 when none."""
    return nearest_ancestor(ev, rows, top_level_ops(ev))


def _compute_inside_top(ev: Table, compute: np.ndarray, compute_time: np.ndarray) -> np.ndarray:
    """For each top-level op row, the summed compute (self) time of compute ops at or below it."""
    out = np.zeros(len(ev), dtype=np.int64)
    rows = np.flatnonzero(compute)
    owner = _top_owner(ev, rows)
    ok = owner >= 0
    np.add.at(out, owner[ok], compute_time[rows[ok]])
    return out


def _family_of_named_owner(ev: Table, named: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """The family of each ``selected`` row on a CPU trace (others keep their own): its top-level
    op's, where that op's own name has one (not ``other``), as a device kernel takes its
    launcher's — a multi-tensor optimizer op (``aten::_foreach_add_``, Keras' Adam on torch)
    computes through ``aten::add`` / ``aten::sqrt``, whose own names read as elementwise; else
    the row's own."""
    rows = np.flatnonzero(selected)
    owner = _top_owner(ev, rows)
    owner_family = np.where(owner >= 0, named[np.maximum(owner, 0)], FAMILIES.index("other"))
    family = named.copy()
    family[rows] = np.where(owner_family != FAMILIES.index("other"), owner_family, named[rows])
    return family


def _family_from_first_compute(ev: Table, family: np.ndarray, compute: np.ndarray) -> np.ndarray:
    """Top-level ops named generically (TF eager's TFE_Py_FastPathExecute_C) take the family of
    the first compute op they run."""
    rows = np.flatnonzero(compute)  # rows are in ts order, so the first hit per owner is the earliest
    owner = _top_owner(ev, rows)
    ok = owner >= 0
    rows, owner = rows[ok], owner[ok]
    first = first_of_each(owner)
    first_family = np.full(len(family), -1, dtype=np.int8)  # per owner row; -1: runs no compute op
    first_family[owner[first]] = family[rows[first]]
    result = family.copy()
    generic = np.flatnonzero((family == FAMILIES.index("other")) & top_level_ops(ev))
    found = first_family[generic]
    has = found >= 0
    result[generic[has]] = found[has]
    return result


def _cold_start(baseline: Diagnosis, candidate: Diagnosis,
                interval: tuple[float, float] | None = None) -> ColdStart:
    """The first cold step of each side and the payback of the larger one; where the steady
    steps' ratio interval holds 1 (``interval``), their difference is noise and pays nothing back."""
    def cold_of(diag: Diagnosis) -> tuple[float | None, float]:
        table = diag.steps.table
        cold = np.flatnonzero(table["cold"])
        if not len(cold):
            return None, 0.0
        i = int(cold[0])
        return float(table["duration"][i]), float(diag.attribution.per_step["graph_build"][i])

    a_cold, a_build = cold_of(baseline)
    b_cold, b_build = cold_of(candidate)
    a_steady = sum(baseline.steady_attribution().values())
    b_steady = sum(candidate.steady_attribution().values())
    payback: float | None = None
    note = "no cold step in one or both traces"
    if a_cold is not None and b_cold is not None:
        extra_cold = b_cold - a_cold
        saving = a_steady - b_steady  # > 0 when the candidate is faster per steady step
        steady_noise = interval is not None and interval[0] <= 1.0 <= interval[1]
        if abs(extra_cold) <= SAME_COLD_SHARE * max(a_cold, b_cold) and abs(saving) <= SAME_COLD_SHARE * max(
                a_steady, b_steady):
            note = "the cold and the steady steps take the same time on both sides"
        elif steady_noise and abs(extra_cold) > SAME_COLD_SHARE * max(a_cold, b_cold):
            larger = "candidate" if extra_cold > 0 else "baseline"
            note = (f"the {larger}'s cold step is larger and the steady steps differ by no more than their noise: "
                    "no measurable steady gain pays it back")
        elif steady_noise:
            note = "the cold steps take the same time and the steady steps differ by no more than their noise"
        elif extra_cold > 0 and saving > 0:
            payback = extra_cold / saving
            note = f"the candidate's larger cold step is paid back after {payback:.1f} steady steps"
        elif extra_cold < 0 and saving < 0:
            payback = -extra_cold / -saving
            note = f"the baseline's larger cold step is paid back after {payback:.1f} steady steps"
        elif extra_cold >= 0 and saving <= 0:
            note = "the candidate is slower both cold and steady: never paid back"
        else:
            note = "the candidate is faster both cold and steady: nothing to pay back"
    return ColdStart(a_cold, b_cold, a_build, b_build, payback, note)


# The workload names a manifest holds that say who captured a trace, not what it ran: `traceview run`
# (inject/launcher.py) writes "run", traceview.capture (collectors/capture.py) "user" for any loop.
# Their traces are grouped by their ops, as traces without a manifest.
CAPTURER_WORKLOADS = ("run", "user")
# Traces without a manifest naming their workload are of one workload where at least this share of
# their top framework ops' names (of the names either has) are the other's: float32 and float64
# captures of one model share all ten; two small MLPs with different losses 7 of 13.
SAME_OPS_SHARE = 0.8


def workload_comparisons(diagnoses: Sequence[Diagnosis], top: int | None = TOP_N) -> list[Comparison]:
    """A folder's traces compared within each workload: every trace of a workload, whatever its
    framework and mode, against the workload's baseline (:func:`_workload_baseline`). A trace's
    workload is the one its capture's manifest names (``traceview collect``), else that of the
    first trace of no named workload whose ops it shares (:data:`SAME_OPS_SHARE`); a trace
    alone in its workload is compared with none. Ranks of one run are left to their multi-rank
    section by the caller."""
    members_of: list[list[Diagnosis]] = []  # the workloads, in the order of their first trace
    named: dict[str, list[Diagnosis]] = {}
    unnamed: list[tuple[set[str], list[Diagnosis]]] = []  # each with its first trace's op names
    for diag in diagnoses:
        workload = (diag.timeline.meta.extra.get("capture") or {}).get("workload")
        name = str(workload) if workload and workload not in CAPTURER_WORKLOADS else None
        ops = {str(op) for op in diag.ops["name"]}
        members = named.get(name) if name else next(
            (group for names, group in unnamed if ops and len(ops & names) >= SAME_OPS_SHARE * len(ops | names)), None)
        if members is None:
            members = []
            members_of.append(members)
            if name:
                named[name] = members
            else:
                unnamed.append((ops, members))
        members.append(diag)
    if not any(len(members) > 1 for members in members_of):
        return []
    out: list[Comparison] = []
    for members in members_of:
        baseline = _workload_baseline(members)
        out += [compare(baseline, d, top) for d in members if d is not baseline]
    return out


def _workload_baseline(members: Sequence[Diagnosis]) -> Diagnosis:
    """The trace a workload's others are compared with: its torch eager capture, else its first
    torch trace, else its first trace (path order)."""
    torch = [d for d in members if d.timeline.meta.framework == "torch"]
    eager = [d for d in torch if "eager" in Path(d.timeline.meta.source).as_posix()]
    return (eager or torch or list(members))[0]


def regression_message(cmp: Comparison, limit_pct: float) -> str | None:
    """``--fail-if-slower``: the verdict when the candidate is slower than ``limit_pct`` % even at the
    low end of the ratio's 95 % interval (a slowdown the step-time noise explains does not fail);
    None when it passes. The interval measures the steps' spread within each capture only: where
    the comparison finds no difference beyond separate runs of one program (Comparison.run_to_run),
    the verdict says so — the gate still fails (a slowdown of the same ops is what it is there to
    catch), and one capture a side cannot tell it from the runs' own variation."""
    if cmp.baseline_step_ns <= 0:
        return None
    interval = cmp.ratio_interval
    low = interval[0] if interval else cmp.ratio
    if (low - 1.0) * 100.0 <= limit_pct:
        return None
    within = f"; at least {(low - 1.0) * 100.0:.1f} % with 95 % confidence" if interval else ""
    spread = ""
    if cmp.run_to_run:
        _, bound, unprofiled = cmp.run_spread
        spread = (f"; but separate runs of one unchanged program differ by up to {fmt_ratio(bound)}"
                  f"{' without the profiler' if unprofiled else ''}, and nothing else the traces record tells "
                  "these apart: capture each side several times, alternating, to confirm")
    return (f"candidate is {(cmp.ratio - 1.0) * 100.0:.1f} % slower than the baseline{within} "
            f"(limit {limit_pct:g} %){spread}")
