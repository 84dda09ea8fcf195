"""The rules that grade one trace: each measures its finding and states the evidence in a sentence.

Every rule has a row in :data:`~traceview.analyzers.findings.table.DIAGNOSIS_FINDINGS` (what
it detects, its thresholds and where they come from; docs/findings.md shows that table) and a
function here that measures the steady steps, grades the measure with its row and returns a
:class:`~traceview.results.Finding`: grade ``high`` / ``moderate`` / ``none`` ("no problem"),
or ``skipped`` with what the trace lacks; or ``None`` where the trace has nothing the rule is
about (``exposed_communication`` on a trace without collectives: not listed at all). The
sentence that states a finding's evidence (``Finding.summary``) is registered with its rule.

Findings are ranked by the time they explain per steady step (``Finding.explains_ns``: the
bucket they grade; the mean gap for ``host_between_steps``; the cold step's extra time spread
over max(captured steps, ``COLD_RUN_STEPS``) for ``cold_compile``: a one-time cost weighed
against per-step causes over a short run); ``low_utilization`` and ``short_kernels`` restate
other buckets and explain no time of their own. The first graded finding is the largest cause.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview.analyzers.findings import table as spec
from traceview.analyzers.findings.spec import FindingSpec, Phrase
from traceview.analyzers.findings.spec import rephrased as spec_rephrased
from traceview.analyzers.gaps import driver_rows
from traceview.analyzers.gil_waits import SWITCH_INTERVAL_NS
from traceview.analyzers.hot_frames import RECORD_PYTHON_FRAMES, dispatching_lines, hot_frames
from traceview.analyzers.layers import INFERRED_GLUE
from traceview.analyzers.modes import (COMPILE_CUDAGRAPHS, COMPILE_WITH_BREAKS, DOUBLE_BACKWARD, advice,
                                      compiled_regions_per_step,
                                      dataloader_workers)
from traceview.arrays import codes_matching, column_codes, membership, rows_matching, values_matching
from traceview.normalize import compute_self_time, math_ops, nearest_ancestor, outermost_rows, self_time, top_level_ops
from traceview.results import GIL_WAIT_DETAIL, PAUSED_DETAIL, Diagnosis, Finding
from traceview.role_passes import anomaly_detection_rows, frames_name_paths
from traceview.roles import Role
from traceview.schema import Kind
from traceview.text import fmt_ns, fmt_pct, shorten

# cold_compile is ranked as its extra time spread over this many steps (or the captured steps,
# when more): the shortest run in which one compile is worth weighing against per-step causes.
COLD_RUN_STEPS = 100
# exposed_communication: advice to overlap communication with compute is given when compute hides
# less than this share of it; above, the exposed rest is what overlap could not hide.
LOW_OVERLAP = 0.5
# ... and to fuse collectives when a step runs at least this many, this short on average. DDP's
# default 25 MB gradient buckets give one collective per 25 MB of gradients (40 for a 1 GB model),
# each taking milliseconds; dozens of sub-millisecond ones mean one collective per tensor, each
# paying NCCL's fixed latency.
MANY_COLLECTIVES = 50
SHORT_COLLECTIVE_NS = 1_000_000


def _shares(diag: Diagnosis) -> tuple[dict[str, float], float]:
    buckets = diag.steady_attribution()
    total = sum(buckets.values())
    return {b: (v / total if total else 0.0) for b, v in buckets.items()}, total


Rule = Callable[[Diagnosis], "Finding | None"]  # None: the trace has nothing the rule is about
# The rules in the order they run (the table's), each with its row.
RULES: list[tuple[FindingSpec, Rule]] = []
# The sentence that states each rule's evidence, by name.
SUMMARIES: dict[str, Phrase] = {}


def rule(row: FindingSpec, summary: Phrase) -> Callable[[Rule], Rule]:
    """Register a rule with its row and the sentence of its evidence."""
    def register(fn: Rule) -> Rule:
        RULES.append((row, fn))
        SUMMARIES[row.name] = summary
        return fn
    return register


def found(row: FindingSpec, grade: str, evidence: Mapping[str, Any], advice: str = "", explains_ns: float = 0.0,
          where: str = "") -> Finding:
    """A rule's finding, its summary phrased from its evidence by the rule's sentence."""
    return row.finding(grade, evidence, advice, explains_ns, SUMMARIES[row.name](evidence, explains_ns), where)


# launch_bound's advice first says how to tell glue from the user's own code when the part of the
# overhead inferred from unrecorded gaps (attribution.INFERRED_GLUE) is above this share of it and,
# per op, above this multiple of the overhead the trace records (dispatch, calls, bindings). On the
# sample and ground-truth captures the inferred part is at most 2.3x the recorded one per op (TF eager
# Keras glue: cnn-infer); a torch loop building its batch from Python lists made it 3.6x and 17x.
INFERRED_GLUE_CAVEAT = (0.5, 3.0)

# launch_bound first names a framework op or range whose own time — no op inside — is this long a
# call on average and holds at least this share of the overhead: far beyond any op's dispatch
# (2-30 µs a call on CPU; the autograd engine's node ranges ≤ 65 µs at the 99th percentile, see
# attribution.ENGINE_BOOKKEEPING_NS). Without Python events, hooks or Python the trace does not
# record run there: a hook on the optimizer's step doing 1.8 ms of Python read as 94 µs of
# dispatch per op, with "fuse the ops" advice.
HEAVY_OWN_TIME = (100_000, 0.3)


# launch_bound first advises a foreach / fused optimizer where, none of them a multi-tensor op,
# more than this share of a step's outermost framework ops run inside torch.optim's update range
# (``Optimizer.step#``) and they number at least this many a step. On CPU a foreach update pays off
# only over many parameter tensors: Adam over 200 of them (foreach=False: 1,800 of 2,505 ops a step)
# ran 18 % faster with foreach=True, over 18 of them 5-7 % faster, over 4 of them 11 % slower.
PER_TENSOR_OPTIMIZER = (0.5, 400)
# torch's multi-tensor optimizer kernels (torch/optim/_functional, native_functions.yaml).
MULTI_TENSOR_OP = ("aten::_foreach_", "aten::_fused_")


def _per_tensor_optimizer_ops(diag: Diagnosis) -> tuple[float, float]:
    """The share of the steady steps' outermost framework ops that run inside a torch.optim update
    range, and how many of them a steady step runs, where none of those is a multi-tensor (foreach
    / fused) op; zeros otherwise."""
    ev = diag.timeline.table
    codes, values = column_codes(ev["name"])
    update = codes_matching(codes, np.array([str(v).startswith(cat.TORCH_OPTIMIZER_UPDATE) for v in values],
                                            dtype=bool))
    ops = np.flatnonzero(diag.steps.in_steady(ev) & top_level_ops(ev)) if update.any() else np.array([], int)
    if not len(ops):
        return 0.0, 0.0
    inside = ops[nearest_ancestor(ev, ops, update, include_self=False) >= 0]
    multi = np.array([str(v).startswith(MULTI_TENSOR_OP) for v in values], dtype=bool)
    if codes_matching(codes[inside], multi).any():
        return 0.0, 0.0
    return len(inside) / len(ops), len(inside) / max(len(diag.steady_positions), 1)


def _glue_or_your_code(diag: Diagnosis, overhead: float, ops_per_step: float) -> tuple[str, dict[str, object]]:
    """The advice's first words where the overhead may be the user's own code (INFERRED_GLUE_CAVEAT),
    and the evidence. The part inferred from unrecorded gaps between ops is framework glue by the
    gap rule, yet without Python events a user's Python between two ops (building a batch from
    Python lists, say) leaves the same gaps."""
    inferred = diag.steady_details().get(INFERRED_GLUE, 0.0)
    inferred_share = inferred / overhead if overhead else 0.0
    recorded_per_op = (overhead - inferred) / ops_per_step
    inferred_per_op = inferred / ops_per_step
    python_recorded = bool(membership(diag.timeline.table["kind"])([Kind.PYTHON.value]).any())
    evidence = {"inferred_share": inferred_share, "inferred_ns_per_op": inferred_per_op,
                "recorded_ns_per_op": recorded_per_op, "python_events": python_recorded}
    if (inferred_share <= INFERRED_GLUE_CAVEAT[0] or inferred_per_op <= INFERRED_GLUE_CAVEAT[1] * recorded_per_op
            or python_recorded):
        return "", evidence
    return ("first tell glue from your code: most of this is unrecorded time between ops, which Python of your own "
            "between them (building tensors from Python lists, say) also leaves; profile with Python events "
            "(torch.profiler with_stack=True, JAX / TF's Python tracer) to see which it is; then ", evidence)


def _heavy_own_time(diag: Diagnosis, overhead: float) -> tuple[str, dict[str, object]]:
    """The advice's first words where one framework op or range holds much of the overhead in its
    own time, call after call (HEAVY_OWN_TIME), in an eager torch trace without Python events, and
    the evidence. (Not in compiled modes: there a runtime range around compiled code — JAX's PjRt
    execution, torch.compile's region — holds unrecorded work of the framework's own.)"""
    ev = diag.timeline.table
    if not overhead or diag.mode != "torch-eager" or membership(ev["kind"])([Kind.PYTHON.value]).any():
        return "", {}
    framework = membership(ev["role"])([Role.DISPATCH.value, Role.PYTHON_FRAMEWORK.value, Role.VIEW_ALLOC.value])
    framework[diag.attribution.hooked_nodes] = False  # (counted as the hooks they ran already)
    rows = framework & driver_rows(ev, diag.steps) & diag.steps.in_steady(ev)
    if not rows.any():
        return "", {}
    own = self_time(ev)
    name_codes, name_values = column_codes(ev["name"])
    total = np.bincount(name_codes[rows], weights=own[rows], minlength=len(name_values))
    calls = np.bincount(name_codes[rows], minlength=len(name_values))
    top = int(np.argmax(total))
    steps = max(len(diag.steady_positions), 1)
    per_step, per_call = total[top] / steps, total[top] / max(calls[top], 1)
    if per_call < HEAVY_OWN_TIME[0] or per_step < HEAVY_OWN_TIME[1] * overhead:
        return "", {}
    name = str(name_values[top])
    return (f"first see what runs inside '{shorten(name, 80)}': {fmt_ns(per_step)} of its own time a step "
            f"({fmt_ns(per_call)} a call), with no op inside — more than any op's dispatch costs: hooks or Python "
            "that the trace does not record (profile with Python events, torch.profiler with_stack=True, to see "
            "whose); then ", {"heavy_own_op": name, "heavy_own_ns_per_step": per_step,
                             "heavy_own_ns_per_call": per_call})


def _per_tensor_update(diag: Diagnosis) -> tuple[str, dict[str, object]]:
    """The advice's words on a foreach / fused optimizer (PER_TENSOR_OPTIMIZER), and the evidence."""
    share, per_step = _per_tensor_optimizer_ops(diag)
    evidence = {"optimizer_op_share": share, "optimizer_ops_per_step": per_step}
    if share <= PER_TENSOR_OPTIMIZER[0] or per_step < PER_TENSOR_OPTIMIZER[1]:
        return "", evidence
    return ("most of the step's ops are the optimizer's update run one parameter tensor at a time (no _foreach_ / "
            "_fused_ op): a foreach or fused optimizer (foreach=True, fused=True) updates them all in a few ops; "
            "besides, ", evidence)


# Modes whose launch advice assumes the step's overhead is inside its compiled calls
# (analyzers/modes.ADVICE "fuse": let XLA fuse the tf.function, capture torch.compile's graph in
# CUDA graphs). Where most of the steady steps' launch/dispatch time lies on the step's thread
# outside those calls (OUTSIDE_CALLS_SHARE), compiling the function further cannot reach it and the
# advice says where it is instead, per mode ({share}: that part; {device}: the GPU-only words).
# A Keras callback writing weights each batch put 15 of a step's 18 ms of overhead in eager ops
# and gaps after fit's train function returned; every torch.compile sample and ground-truth
# capture (CPU) has 75-85 % of it outside its compiled code: torch.compile's wrappers around each
# region (guards, the runtime prologue) and the eager loss / optimizer step between regions.
OUTSIDE_CALLS_ADVICE = {
    "tensorflow-function": "{share} of this overhead lies outside the step's tf.function calls — eager ops and "
                           "the gaps between them before or after the calls (a callback saving weights or computing "
                           "metrics each batch, the loop's own TF calls), which compiling the function cannot reach: "
                           "move that work out of the step, run it every N steps, or put it in the function",
    "torch-compile": "{share} of this overhead lies outside the compiled code — torch.compile's wrappers around "
                     "each compiled region (guards, the runtime prologue) and the eager ops between regions (the "
                     "loss or the optimizer step when not compiled with the model): compile the whole step, loss "
                     "and optimizer.step included, so that one compiled graph runs its ops{device}, or grow the "
                     "batch so each op does more work",
}
OUTSIDE_CALLS_ADVICE["tensorflow-xla"] = OUTSIDE_CALLS_ADVICE["tensorflow-function"]
def _compiled_mode(diag: Diagnosis) -> str:
    """The trace's mode, told apart as COMPILE_CUDAGRAPHS where a torch.compile step's regions
    already replay as CUDA graphs (graph launches in its steps)."""
    if diag.mode == "torch-compile" and diag.launch.graph_launches_per_step:
        return COMPILE_CUDAGRAPHS
    return diag.mode


OUTSIDE_CALLS_DEVICE = " (then capture it in CUDA graphs: mode='reduce-overhead')"
OUTSIDE_CALLS_GRAPHED = " (its compiled regions already replay as CUDA graphs)"
OUTSIDE_CALLS_SHARE = 0.5


ANOMALY_FIRST = ("autograd anomaly detection is on (anomaly_detection): turn that debugging switch off before "
                 "anything else — its checks and stored stacks are part of this time; then ")


def anomaly_work(diag: Diagnosis, steady: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The work of torch's autograd anomaly detection (roles.anomaly_detection_rows): the rows that
    begin its NaN checks and its stored stacks, in the steady steps (``steady``) or anywhere."""
    ev = diag.timeline.table
    check, stack = anomaly_detection_rows(ev)
    if not steady:
        return check, stack
    in_steady = diag.steps.in_steady(ev)
    return check & in_steady, stack & in_steady


def anomaly_detection_on(diag: Diagnosis, steady: bool = True) -> bool:
    """Whether the steady steps (``steady``) or the trace hold the work of autograd anomaly detection."""
    return any(rows.any() for rows in anomaly_work(diag, steady))


def _anomaly_first(diag: Diagnosis) -> str:
    """ANOMALY_FIRST where the steady steps hold the work of autograd anomaly detection (the advice
    to fuse ops or speed up the math comes after turning it off), else ""."""
    return ANOMALY_FIRST if anomaly_detection_on(diag) else ""


def _differentiates_twice(diag: Diagnosis) -> bool:
    """Whether the trace runs autograd nodes of a backward's backward (categories.TORCH_DOUBLE_BACKWARD)."""
    _, names = column_codes(diag.timeline.table["name"])
    return bool(values_matching(names, cat.TORCH_DOUBLE_BACKWARD).any())


def _launch_outside_calls(diag: Diagnosis) -> float:
    """The share of the steady steps' launch/dispatch time that lies outside the outermost compiled
    calls on the step's thread (Attribution.launch_in_calls)."""
    positions = diag.steady_positions
    total = float(diag.attribution.per_step["launch_overhead"][positions].sum())
    inside = diag.attribution.launch_in_calls
    if not total or len(inside) != len(diag.attribution.per_step):
        return 0.0
    return max(0.0, 1.0 - float(inside[positions].sum()) / total)


def _launch_bound_summary(e: Mapping[str, Any], explains: float) -> str:
    ops = e["ops_per_step"]
    # The overhead per op (the host time per op in the evidence holds each op's math too).
    per_op = f"{ops:.0f} framework ops per step, {fmt_ns(explains / ops)} of it per op" if ops else "no framework ops"
    return (f"launch/dispatch overhead is {fmt_pct(e['launch_overhead_share'])} of the step ({fmt_ns(explains)}); "
            f"{per_op}" + _hot_frames_phrase(e, "the user's lines it is spent under (a step)"))


@rule(spec.LAUNCH_BOUND, _launch_bound_summary)
def launch_bound(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    share = shares["launch_overhead"]
    s = diag.launch
    if s.ops_per_step == 0:
        # No framework op in the steps: no dispatch to fuse (the overhead there is the profiler's or
        # a runtime's own Python, outside any training work).
        return spec.LAUNCH_BOUND.skipped()
    grade = spec.LAUNCH_BOUND.grade(share)
    where = "the device waits for the host" if diag.timeline.has_device else "framework dispatch outside the math"
    glue, glue_evidence = _glue_or_your_code(diag, share * total, s.ops_per_step)
    heavy, heavy_evidence = _heavy_own_time(diag, share * total)
    glue = heavy or glue  # (one "first": the op that holds the time, where there is one)
    optimizer, optimizer_evidence = _per_tensor_update(diag)
    mode, regions = diag.mode, {}
    if mode == "torch-eager" and _differentiates_twice(diag):
        mode, regions = DOUBLE_BACKWARD, {"double_backward": True}
    if mode == "torch-compile":
        regions = {"compiled_regions_per_step": compiled_regions_per_step(diag.timeline, diag.steps)}
        mode = COMPILE_WITH_BREAKS if regions["compiled_regions_per_step"] > 1 else _compiled_mode(diag)
    words = advice(spec.LAUNCH_BOUND.advice_key, mode)
    outside_mode = "torch-compile" if mode == COMPILE_CUDAGRAPHS else mode
    if outside_mode in OUTSIDE_CALLS_ADVICE and grade != "none":
        outside = _launch_outside_calls(diag)
        regions["launch_outside_calls_share"] = outside
        if outside >= OUTSIDE_CALLS_SHARE:
            device = "" if not diag.timeline.has_device else \
                OUTSIDE_CALLS_GRAPHED if mode == COMPILE_CUDAGRAPHS else OUTSIDE_CALLS_DEVICE
            words = OUTSIDE_CALLS_ADVICE[outside_mode].format(share=fmt_pct(outside), device=device)
    return found(
        spec.LAUNCH_BOUND, grade,
        {"launch_overhead_share": share, "ops_per_step": s.ops_per_step, "host_ns_per_op": s.host_ns_per_op,
         **glue_evidence, **heavy_evidence, **optimizer_evidence, **regions, **_dispatching_lines(diag, grade)},
        _anomaly_first(diag) + glue + optimizer + words, share * total, where)


def _dispatching_lines(diag: Diagnosis, grade: str) -> dict[str, Any]:
    """launch_bound's ``hot_frames``: the user's lines under which the dispatch is spent
    (analyzers/hot_frames.dispatching_lines), where graded and the trace records Python frames."""
    frames = dispatching_lines(diag) if grade != "none" else []
    return {"hot_frames": [{"frame": f.frame, "ns_per_step": f.ns_per_step} for f in frames]} if frames else {}


def _anomaly_detection_summary(e: Mapping[str, Any], explains: float) -> str:
    parts = []
    if e["nan_checked_nodes_per_step"]:
        parts.append(f"its NaN checks after {e['nan_checked_nodes_per_step']:.0f} backward nodes a step take "
                     f"{fmt_ns(e['nan_check_ns_per_step'])}")
    if e["stacks_per_step"]:
        parts.append(f"the {e['stacks_per_step']:.0f} Python stacks forward ops store a step take "
                     f"{fmt_ns(e['stack_ns_per_step'])}")
    elif not e["python_events"]:
        parts.append("each forward op that records a backward node also stores a Python stack, inside that op's "
                     "own time (not timed apart: the trace has no Python events)")
    return (f"autograd anomaly detection is on: {fmt_pct(e['anomaly_share'])} of the step ({fmt_ns(explains)}) is "
            f"its work; " + "; ".join(parts))


# anomaly_detection is moderate wherever the steady steps hold its work (a debugging switch left on
# in training is worth turning off whatever it costs), high from its row's share of the step.
@rule(spec.ANOMALY_DETECTION, _anomaly_detection_summary)
def anomaly_detection(diag: Diagnosis) -> Finding | None:
    ev = diag.timeline.table
    check, stack = anomaly_work(diag)
    if not (check.any() or stack.any()):
        return None  # (not in the steady steps: nothing of theirs to time)
    steps = max(len(diag.steady_positions), 1)
    dur = ev["dur"]
    nodes = len(np.unique(ev["parent"][check]))
    check_ns, stack_ns = (float(dur[rows].sum()) / steps for rows in (check, stack))
    _, total = _shares(diag)
    share = (check_ns + stack_ns) / total if total else 0.0
    python = bool(membership(ev["kind"])([Kind.PYTHON.value]).any())
    return found(
        spec.ANOMALY_DETECTION, spec.ANOMALY_DETECTION.grade(share),
        {"anomaly_share": share, "nan_checked_nodes_per_step": nodes / steps, "nan_check_ns_per_step": check_ns,
         "stacks_per_step": float(stack.sum()) / steps, "stack_ns_per_step": stack_ns,
         "python_events": python},
        "turn it off outside debugging (torch.autograd.set_detect_anomaly(False), or no detect_anomaly() context "
        "around training); to find where a NaN first appears, turn it on only around the step that fails",
        check_ns + stack_ns)


def _short_kernels_summary(e: Mapping[str, Any], explains: float) -> str:
    graphs = ""
    if e.get("graph_kernel_share"):
        # A graph's kernels are counted against the one call that replays them all (HTA's count).
        graphs = (f"; {fmt_pct(e['graph_kernel_share'])} of them are replayed by CUDA graphs, "
                  f"{e['kernels_per_graph_launch']:.0f} kernels a graph launch under one launch call, and "
                  f"{fmt_pct(e['short_kernel_share_outside_graphs'])} of those launched one by one are short")
    return (f"{fmt_pct(e['short_kernel_share'])} of kernels run for less time than their launch call "
            f"({e['short_kernels_per_step']:.0f} per step){graphs}")


@rule(spec.SHORT_KERNELS, _short_kernels_summary)
def short_kernels(diag: Diagnosis) -> Finding:
    if diag.launch.launches_per_step == 0:
        return spec.SHORT_KERNELS.skipped()
    share = diag.launch.short_kernel_share
    # A graph replays its kernels under one launch call: the call is no cost of each kernel, so
    # the grade goes by the kernels launched one by one (none: nothing to graph or fuse here).
    graded = diag.launch.short_kernel_share_outside_graphs if diag.launch.graph_launches_per_step else share
    return found(spec.SHORT_KERNELS, spec.SHORT_KERNELS.grade(graded),
                 {"short_kernel_share": share, "short_kernels_per_step": diag.launch.short_kernels_per_step,
                  **({"graph_kernel_share": diag.launch.graph_kernel_share,
                      "kernels_per_graph_launch": diag.launch.kernels_per_graph_launch,
                      "short_kernel_share_outside_graphs": diag.launch.short_kernel_share_outside_graphs}
                     if diag.launch.graph_launches_per_step else {})},
                 advice(spec.SHORT_KERNELS.advice_key, _compiled_mode(diag)))


def _steady_graph_build_summary(e: Mapping[str, Any], explains: float) -> str:
    return (f"graph building is {fmt_pct(e['graph_build_share'])} of the steady step ({fmt_ns(explains)}), "
            f"{e['graph_build_events']} build/compile events across {e['steady_steps']} steady steps")


@rule(spec.STEADY_GRAPH_BUILD, _steady_graph_build_summary)
def steady_graph_build(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    # One-time runtime start-up has its own finding (startup).
    startup_ns = diag.steady_details().get("graph_build.startup", 0.0)
    share = max(shares["graph_build"] - (startup_ns / total if total else 0.0), 0.0)
    table = diag.steps.table
    steady_events = int(table["graph_build_events"][diag.steady_positions].sum())
    return found(
        spec.STEADY_GRAPH_BUILD, spec.STEADY_GRAPH_BUILD.grade(share),
        {"graph_build_share": share, "graph_build_events": steady_events, "steady_steps": len(diag.steady_positions)},
        advice(spec.STEADY_GRAPH_BUILD.advice_key, diag.mode), share * total)


def _cold_compile_summary(e: Mapping[str, Any], explains: float) -> str:
    return (f"the cold step #{e['cold_step']} takes {fmt_ns(e['cold_extra_ns'])} more than a steady step "
            f"({e['steady_steps_worth']:.1f} steady steps' worth); {fmt_ns(e['cold_graph_build_ns'])} of it is "
            "marked graph building/compilation")


@rule(spec.COLD_COMPILE, _cold_compile_summary)
def cold_compile(diag: Diagnosis) -> Finding:
    table = diag.steps.table
    cold = np.flatnonzero(table["cold"])
    if not len(cold):
        return spec.COLD_COMPILE.skipped()
    i = int(cold[0])
    steady = diag.steady_step_ns
    extra = max(float(table["duration"][i]) - steady, 0.0)
    build = float(diag.attribution.per_step["graph_build"][i])
    worth = extra / steady if steady else 0.0
    # Graded on the cold step's whole extra time (compilation the profiler does not mark — function
    # instantiation, lazy backward compilation — is part of it), but only when the cold step shows
    # graph building: a cold eager step is slow for other reasons (allocator warm-up, lazy
    # initialisation) that no compilation setting changes.
    grade = spec.COLD_COMPILE.grade(worth) if build > 0 else "none"
    # A one-time cost, ranked by its extra time spread over a run of COLD_RUN_STEPS steps (or the
    # captured steps, when more): a cause repeated every step outweighs it within such a run.
    amortized = extra / max(len(table), COLD_RUN_STEPS)
    return found(
        spec.COLD_COMPILE, grade,
        {"cold_step": int(table["number"][i]), "cold_extra_ns": extra, "steady_steps_worth": worth,
         "cold_graph_build_ns": build, "amortized_over_steps": max(len(table), COLD_RUN_STEPS)},
        advice(spec.COLD_COMPILE.advice_key, diag.mode), amortized if grade != "none" else 0.0)


def _startup_summary(e: Mapping[str, Any], explains: float) -> str:
    if "startup_share" not in e:
        return "no runtime call long enough to be start-up (context creation, module loading)"
    return (f"{fmt_ns(e['startup_ns'])} ({fmt_pct(e['startup_share'])} of the analysed time) is one-time device "
            "runtime start-up: runtime calls too long for steady state (context creation, lazy module / library "
            "loading)")


@rule(spec.STARTUP, _startup_summary)
def startup(diag: Diagnosis) -> Finding:
    table = diag.steps.table
    per = diag.attribution.details
    column = "graph_build.startup"
    if column not in per.columns or not per[column].any():
        return found(spec.STARTUP, "none", {"startup_ns": 0})
    startup_ns = float(per[column].sum())
    total = float(table["duration"].sum())
    share = startup_ns / total if total else 0.0
    return found(
        spec.STARTUP, spec.STARTUP.grade(share),
        {"startup_ns": startup_ns, "startup_share": share, "step_rule": diag.steps.rule},
        "a one-time cost, not the training step's: profile steps after warm-up (torch.profiler "
        "schedule(wait=…, warmup=…, active=…) with prof.step() per iteration) so the trace has steady steps",
        startup_ns / max(len(table), 1))


def _sync_each_step_summary(e: Mapping[str, Any], explains: float) -> str:
    return (f"the host waits on the device for {fmt_pct(e['sync_wait_share'])} of the step ({fmt_ns(explains)}), "
            f"{e['sync_calls_per_step']:.1f} sync calls per step")


@rule(spec.SYNC_EACH_STEP, _sync_each_step_summary)
def sync_each_step(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    ev = diag.timeline.table
    steady = diag.steps.in_steady(ev)
    calls = int((steady & membership(ev["kind"])([Kind.SYNC.value])).sum()) / max(len(diag.steady_positions), 1)
    share = shares["sync_wait"]
    return found(
        spec.SYNC_EACH_STEP, spec.SYNC_EACH_STEP.grade(share), {"sync_wait_share": share, "sync_calls_per_step": calls},
        "avoid .item(), .cpu(), print(tensor) and blocking copies inside the step; log every N steps", share * total)


MEMCPY_PART = "memcpy."  # evidence keys memcpy.<direction>_ns: the copy time per direction


# The memcpy detail that is host time (layers: memcpy.pageable), not a copy direction on the device.
PAGEABLE_STAGING = "memcpy.pageable_ns"


def _memcpy_summary(e: Mapping[str, Any], explains: float) -> str:
    parts = ", ".join(f"{k[len(MEMCPY_PART):-len('_ns')]} {fmt_ns(v)}" for k, v in sorted(e.items())
                      if k.startswith(MEMCPY_PART) and k.endswith("_ns") and k != PAGEABLE_STAGING)
    if e.get(PAGEABLE_STAGING):
        parts += (", " if parts else "") + f"the host in pageable copy calls {fmt_ns(e[PAGEABLE_STAGING])}"
    holds = "hold the device alone" if not e.get(PAGEABLE_STAGING) else \
        "hold the device alone, or keep the host in pageable copy calls,"
    return (f"copies/memsets {holds} for {fmt_pct(e['memcpy_share'])} of the step ({fmt_ns(explains)}"
            + (f": {parts}" if parts else "") + f"); {e['pageable_copies']} pageable copies")


@rule(spec.MEMCPY, _memcpy_summary)
def memcpy(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    share = shares["memcpy"]
    ev = diag.timeline.table
    copies = np.flatnonzero(diag.timeline.kind_mask(Kind.MEMCPY) & diag.steps.in_steady(ev))
    pageable = int(np.count_nonzero(rows_matching(ev["name"].take(copies), cat.PAGEABLE_COPY)))
    # Copy time per direction (memcpy.H2D …), as memcpy.<direction>_ns.
    directions = {f"{k}_ns": v for k, v in diag.steady_details().items() if k.startswith(MEMCPY_PART)}
    grade = spec.MEMCPY.grade(share)
    if pageable and grade == "none":  # (the row's note: any pageable copy is at least moderate)
        grade = "moderate"
    return found(
        spec.MEMCPY, grade, {"memcpy_share": share, "pageable_copies": pageable, **directions},
        "keep data on the device; use pinned memory (DataLoader(pin_memory=True)) and non_blocking copies",
        share * total)


def _exposed_communication_summary(e: Mapping[str, Any], explains: float) -> str:
    return (f"exposed communication is {fmt_pct(e['communication_share'])} of the step ({fmt_ns(explains)}): "
            f"{e['collectives_per_step']:.0f} collectives per step take {fmt_ns(e['comm_ns'])}, "
            f"{fmt_pct(e['overlap_share'])} of it overlapped by compute")


@rule(spec.EXPOSED_COMMUNICATION, _exposed_communication_summary)
def exposed_communication(diag: Diagnosis) -> Finding | None:
    comm = diag.communication
    if comm is None:
        return None
    shares, total = _shares(diag)
    share = shares.get("communication", 0.0)
    steady = comm.steady(diag.steady_positions)
    n = steady["collectives"]
    mean = steady["comm_ns"] / n if n else 0.0
    overlap = steady["overlap_share"]
    advice = []
    if overlap < LOW_OVERLAP:
        advice.append("start the collectives while the backward pass still computes so kernels hide them "
                      "(DDP all-reduces each gradient bucket as soon as it is ready; FSDP prefetches), "
                      "not after it")
    if n >= MANY_COLLECTIVES and mean < SHORT_COLLECTIVE_NS:
        advice.append("fuse the many short collectives into fewer, larger ones "
                      "(gradient bucketing, DDP bucket_cap_mb): each pays the fixed latency once")
    if overlap >= LOW_OVERLAP:
        advice.append("compute already hides most of it; the exposed rest shrinks with fewer bytes "
                      "(bf16 gradient communication hooks) or a faster interconnect")
    # A collective lasts until the slowest rank joins: its time may be another rank's work.
    advice.append("a collective also waits for the slowest rank to join it: compare the ranks "
                  "(traceview diagnose on the folder of all ranks' traces)")
    return found(
        spec.EXPOSED_COMMUNICATION, spec.EXPOSED_COMMUNICATION.grade(share),
        {"communication_share": share, "comm_ns": steady["comm_ns"], "overlapped_ns": steady["overlapped_ns"],
         "overlap_share": overlap, "collectives_per_step": n},
        "; ".join(advice), share * total)


def tf_data_components(diag: Diagnosis) -> frozenset[str]:
    """The datasets of the trace's tf.data pipelines, read from their iterators' names
    (categories.TF_DATA_ITERATOR: "Iterator::Root::Prefetch::Map::…"; a repeat's "[n]" dropped)."""
    _, names = column_codes(diag.timeline.table["name"])
    parts: set[str] = set()
    for name in names:
        text = str(name)
        if cat.TF_DATA_ITERATOR.match(text):
            parts.update(part.split("[", 1)[0] for part in text.split("::")[2:])
    return frozenset(parts)


def _tf_data_advice(components: frozenset[str]) -> str:
    """input_bound's advice from what a tf.data pipeline already does; "" when the trace names no
    tf.data iterator (a Python generator, a PyDataset: the mode's general advice)."""
    if not components:
        return ""
    parallel = bool(components & cat.TF_DATA_PARALLEL)
    steps = []
    if components & cat.TF_DATA_SEQUENTIAL_MAP and not parallel:
        steps.append("its map runs one element at a time (Iterator::…::Map): .map(f, num_parallel_calls="
                     "tf.data.AUTOTUNE)")
    if not components & cat.TF_DATA_PREFETCH:
        steps.append("nothing prefetches (no Iterator::…::Prefetch): end it with .prefetch(tf.data.AUTOTUNE) so the "
                     "next batch is made while the step runs")
    if steps:
        return "the tf.data pipeline waits on the step's thread: " + "; ".join(steps)
    cached = bool(components & cat.TF_DATA_CACHE)
    return ("the tf.data pipeline already prefetches" + (" and maps in parallel" if parallel else "")
            + (" from a cache" if cached else "") + ", yet the step still waits for it: its producer is slower "
            "than the step — " + ("" if cached else ".cache() the result of deterministic preprocessing, ")
            + "make the per-element work lighter, or leave the input threads cores the step does not use "
            "(the step's intra-op pool and the input threads share the machine)")


def _input_bound_summary(e: Mapping[str, Any], explains: float) -> str:
    return f"input is {fmt_pct(e['input_share'])} of the step ({fmt_ns(explains)})" + _hot_frames_phrase(e)


@rule(spec.INPUT_BOUND, _input_bound_summary)
def input_bound(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    share = shares["input"]
    grade = spec.INPUT_BOUND.grade(share)
    components = tf_data_components(diag) if diag.timeline.meta.framework == "tensorflow" else frozenset()
    pipeline = {"tf_data_datasets": sorted(components)} if components else {}
    # (Only a torch pipeline runs the user's Python as frames: a tf.data map is a graph function.)
    frames = _hot_frames_evidence(diag, Role.INPUT.value, grade, hint=diag.timeline.meta.framework == "torch")
    return found(spec.INPUT_BOUND, grade, {"input_share": share, **pipeline, **frames},
                 _tf_data_advice(components) or advice(spec.INPUT_BOUND.advice_key, diag.mode), share * total)


def _hot_frames_evidence(diag: Diagnosis, role: str, grade: str, hint: bool = True) -> dict[str, Any]:
    """Evidence naming the user's hottest lines of ``role`` (analyzers/hot_frames.py) for a
    finding that is graded: ``hot_frames`` where the trace records Python frames, else
    ``record_frames``, how to record them in the trace's framework (when ``hint``)."""
    if grade == "none":
        return {}
    if membership(diag.timeline.table["kind"])([Kind.PYTHON.value]).any():
        frames = hot_frames(diag, role)
        return {"hot_frames": [{"frame": f.frame, "ns_per_step": f.ns_per_step} for f in frames]} if frames else {}
    how = RECORD_PYTHON_FRAMES.get(diag.timeline.meta.framework or "")
    return {"record_frames": how} if how and hint else {}


def _hot_frames_phrase(e: Mapping[str, Any],
                       what: str = "the hottest lines (self time a step, builtins charged to the line calling them)"
                       ) -> str:
    """The summary's words for ``_hot_frames_evidence`` (``what``: what the lines' times are)."""
    if e.get("hot_frames"):
        return (f"; {what}: "
                + ", ".join(f"'{shorten(f['frame'], TOP_KERNEL_CHARS)}' {fmt_ns(f['ns_per_step'])}"
                            for f in e["hot_frames"]))
    if e.get("record_frames"):
        return f"; to have the lines named, record Python frames: {e['record_frames']}"
    return ""


# Names are cut in the middle to this many characters inside a finding's sentence (the start names
# the scope, the end the op type: a TF op's `…/MatMul/MatMul:_MklMatMul`).
TOP_KERNEL_CHARS = 60


def _named(names: list[str] | None, label: str, lead: str = " — ") -> str:
    """``lead`` + ``label``: the names quoted, or nothing where there are none."""
    return f"{lead}{label}: " + ", ".join(f"'{shorten(str(n), TOP_KERNEL_CHARS)}'" for n in names) if names else ""


def _host_compute_summary(e: Mapping[str, Any], explains: float) -> str:
    caveat = ("; the trace records no Python calls, so that unrecorded time may also be the framework's own "
              "Python around its calls" if e["inferred_ns"] and not e.get("python_events", True) else "")
    if e["python_ns"] and e.get("python_events", True) and not e.get("python_paths", True):
        caveat += ("; the trace names Python files without their folders (JAX's and TensorFlow's Python tracers), so "
                   "the framework's own Python is told from yours only by what runs inside its API calls, and the rest "
                   "of it is counted here")
    # (Without Python frames in the trace, the user's Python is what ops running it recorded.)
    frames_or_ops = "in the user's Python" if e["python_ns"] and not e.get("python_events", True) else \
        "in the user's Python frames"
    parts = [(e["python_ns"], frames_or_ops),
             (e["inferred_ns"], "in unrecorded stretches longer than the dispatch-gap threshold"),
             (e.get("range_ns", 0.0), "inside user ranges, outside every recorded op"),
             (e.get("other_threads_ns", 0.0), "in the user's work run by the framework on another thread "
                                               "(a tf.py_function's Python, a tf.print's formatting) while the step "
                                               "waits"),
             (e.get("hooks_ns", 0.0), "in hooks the autograd engine runs around its nodes (tensor.register_hook, "
                                      "module backward hooks)" + _named(e.get("hooked_nodes"), "hooked nodes")),
             (e.get("other_host_ns", 0.0), "in other recorded host work while the device idles")]
    # Every part that holds time (the first two, at zero, when none does): they add up to the total.
    shown = [(ns, where) for ns, where in parts if ns >= 0.5] or parts[:2]
    if e["python_ns"] or e.get("other_threads_ns", 0.0):
        # (A Python autograd.Function's forward / backward, a tf.py_function's or a tf.print's kernel.)
        caveat += _named(e.get("python_ops"), "the ops that run it", "; ")
    return (f"host work outside the framework is {fmt_pct(e['host_compute_share'])} of the step ({fmt_ns(explains)}): "
            + ", ".join(f"{fmt_ns(ns)} {where}" for ns, where in shown) + caveat + _hot_frames_phrase(e))


@rule(spec.HOST_COMPUTE, _host_compute_summary)
def host_compute(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    share = shares["host_compute"]
    details = diag.steady_details()
    python = details.get("host_compute.python", 0.0)
    inferred = details.get("host_compute.inferred", 0.0)
    in_ranges = details.get("host_compute.annotation", 0.0)
    other_threads = details.get("host_compute.other_threads", 0.0)
    hooks = details.get("host_compute.hooks", 0.0)
    # (Traces with device activity: recorded host work of any thread while the device idles.)
    other_host = max(0.0, share * total - python - inferred - in_ranges - other_threads - hooks)
    # Without Python calls in the trace, unrecorded time on the step's thread is the user's code or
    # the framework's own Python around its calls (TF's Session.run wrapper, Keras layers): the
    # summary says so (the grade stays the share's).
    ev = diag.timeline.table
    python_rows = membership(ev["kind"])([Kind.PYTHON.value])
    python_events = bool(python_rows.any())
    # Frames named without folders (JAX's and TensorFlow's Python tracers): the framework's own Python
    # is told from the user's only by what runs inside its API calls (roles.py); the summary says so.
    name_codes, name_values = column_codes(ev["name"])
    return found(
        spec.HOST_COMPUTE, spec.HOST_COMPUTE.grade(share),
        {"host_compute_share": share, "python_ns": python, "inferred_ns": inferred, "range_ns": in_ranges,
         "other_threads_ns": other_threads, "other_host_ns": other_host, "python_events": python_events,
         "python_paths": python_events and frames_name_paths(name_values, name_codes, python_rows),
         "python_ops": _python_ops(diag), "hooks_ns": hooks, "hooked_nodes": _hooked_nodes(diag) if hooks else [],
         **_hot_frames_evidence(diag, Role.PYTHON_USER.value, spec.HOST_COMPUTE.grade(share))},
        "move per-step Python work (metrics, logging, data munging, object churn that triggers garbage "
        "collection) out of the step, vectorize it, or run it in the input pipeline", share * total)


# Ops named in host_compute's summary as the ones that run the user's Python, at most.
PYTHON_OPS_NAMED = 3


def _python_ops(diag: Diagnosis) -> list[str]:
    """The ops of the steady steps that run the user's Python (role python_user: a Python
    autograd.Function's forward and backward, a tf.py_function's kernel, a tf.print), longest in
    total first: where the user's Python time is when the trace records no frames."""
    ev = diag.timeline.table
    ops = membership(ev["kind"])([Kind.HOST_OP.value]) & membership(ev["role"])([Role.PYTHON_USER.value])
    return _names_by_time(diag, ops & diag.steps.in_steady(ev), ev["dur"])


def _hooked_nodes(diag: Diagnosis) -> list[str]:
    """The autograd nodes around which the engine ran hooks in the steady steps
    (Attribution.hooked_nodes), most own time first, named as the engine names them
    (``torch::autograd::AccumulateGrad``: a tensor hook on a weight)."""
    ev = diag.timeline.table
    nodes = np.zeros(len(ev), dtype=bool)
    nodes[diag.attribution.hooked_nodes] = True
    return [cat.TORCH_ENGINE_NODE.sub("", name, count=1)
            for name in _names_by_time(diag, nodes & diag.steps.in_steady(ev), self_time(ev))]


def _names_by_time(diag: Diagnosis, rows: np.ndarray, time: np.ndarray) -> list[str]:
    """The event names of the ``rows`` (a mask), most ``time`` in total first (then by name), at
    most PYTHON_OPS_NAMED of them."""
    if not rows.any():
        return []
    name_codes, name_values = column_codes(diag.timeline.table["name"])
    total = np.bincount(name_codes[rows], weights=time[rows], minlength=len(name_values))
    order = sorted((-total[c], name_values[c]) for c in np.flatnonzero(total > 0).tolist())
    return [str(name) for _, name in order[:PYTHON_OPS_NAMED]]


def _low_utilization_summary(e: Mapping[str, Any], explains: float) -> str:
    return f"kernels run for {fmt_pct(e['kernel_share'])} of the step"


@rule(spec.LOW_UTILIZATION, _low_utilization_summary)
def low_utilization(diag: Diagnosis) -> Finding:
    shares, _ = _shares(diag)
    share = shares["kernel"]
    return found(spec.LOW_UTILIZATION, spec.LOW_UTILIZATION.grade(share), {"kernel_share": share},
                 "see the largest non-kernel cause above; the device is waiting for it")


# compute_bound's words on CPU threads, per framework: how each sizes the pool its math runs on
# (torch.set_num_threads; tf.config.threading; XLA's CPU backend takes XLA_FLAGS, where
# --xla_cpu_multi_thread_eigen=false or intra_op_parallelism_threads=1 keep it to one thread).
# How to set the intra-op pool's size, by framework (oversubscribed). Only frameworks whose pool
# takes a thread count: XLA's CPU pool has one thread per core (or one, by XLA_FLAGS), whatever a
# JAX capture's manifest says it requested.
SET_INTRA_OP_THREADS = {
    "torch": "torch.set_num_threads({cores})",
    "tensorflow": "tf.config.threading.set_intra_op_parallelism_threads({cores})",
}


def oversubscribed(diag: Diagnosis) -> tuple[str, str]:
    """Where the capture's manifest says the intra-op pool ran more threads than the machine has
    cores (capture_facts: intra_op_threads, cores): how many on how many, and why that costs and
    what to set; else ("", "").
    Threads beyond the cores take turns on them, and each op waits for its slowest thread: the
    mlp2 step with 8 threads on 2 cores ran 15x as long as with 2 (3.99 against 0.27 ms unprofiled,
    tests/data/torch_cpu_oversubscribed), and read as "give the intra-op pool every core"."""
    facts = diag.timeline.meta.extra.get("capture") or {}
    threads, cores = facts.get("intra_op_threads"), facts.get("cores")
    setting = SET_INTRA_OP_THREADS.get(diag.timeline.meta.framework)
    if not threads or not cores or threads <= cores or setting is None:
        return "", ""
    setting = setting.format(cores=cores)
    return (f"{threads} intra-op threads on {cores} cores",
            "the threads beyond the cores take turns on them and every op waits for its slowest thread — set the "
            f"pool to the core count ({setting})")


INTRA_OP_POOL = {
    "torch": "the intra-op pool every core (torch.set_num_threads)",
    "tensorflow": "the intra-op pool every core (tf.config.threading.set_intra_op_parallelism_threads)",
    "jax": "XLA's thread pool every core (no --xla_cpu_multi_thread_eigen=false or intra_op_parallelism_threads=1 "
           "in XLA_FLAGS)",
    "": "the intra-op pool every core (torch.set_num_threads, TF intra_op_parallelism_threads)",
}


# What math in these dtypes costs, by the names torch writes in record_shapes' "Input type": why the
# side of a comparison computing in one (and the other not) is slower, or a step's math is.
SLOWER_DTYPE_WHY = {
    "double": "float64 math runs at half float32's speed or less (far less on most GPUs) and moves twice the "
              "bytes: keep the model and data in float32 (model.float(), float32 tensors, "
              "torch.set_default_dtype) unless the precision is needed",
    "c10::Half": "float16 math runs slower than float32 on a CPU without half-precision units (AVX512-FP16, "
                 "AMX-FP16), and autocast casts the weights to it every step",
    "c10::BFloat16": "bfloat16 math runs slower than float32 on a CPU without bfloat16 units (AVX512-BF16, AMX), "
                     "and autocast casts the weights to it every step",
}
HALF_PRECISION = ("c10::Half", "c10::BFloat16")


# The math of a step runs in a slow dtype when the compute ops taking inputs of it hold at least this
# share of the steady steps' math time with recorded input types. Slow on every CPU: float64. Not
# half precision: on a CPU with bfloat16 / float16 units (AVX512-BF16, AMX) it is the faster one,
# and the trace does not say which CPU ran it (autocast to bfloat16 here: 89 % of the math, the
# step 1.13x float32's, most of it the casts).
SLOW_DTYPE_SHARE = 0.5
SLOW_ON_EVERY_CPU = ("double",)


def _slow_math_dtype(diag: Diagnosis) -> tuple[str, float]:
    """The dtype of SLOW_ON_EVERY_CPU that at least SLOW_DTYPE_SHARE of a CPU trace's steady math
    takes as an input, by the compute ops' own time among those with recorded input types (torch
    record_shapes), and that share; ("", 0.0) where none does. (On a GPU the math is the kernels,
    not the host ops the types are recorded on.)"""
    ev = diag.timeline.table
    if "input_dtypes" not in ev.columns or diag.timeline.has_device:
        return "", 0.0
    codes, labels = column_codes(ev["input_dtypes"])
    typed = math_ops(ev) & diag.steps.in_steady(ev) & (codes >= 0)
    typed &= codes != (labels.index("") if "" in labels else -2)
    own = compute_self_time(ev)
    total = float(own[typed].sum())
    if total <= 0:
        return "", 0.0
    for dtype in SLOW_ON_EVERY_CPU:
        holding = [i for i, label in enumerate(labels) if dtype in str(label).split("+")]
        share = float(own[typed & np.isin(codes, holding)].sum()) / total
        if share >= SLOW_DTYPE_SHARE:
            return dtype, share
    return "", 0.0


def _compute_bound_summary(e: Mapping[str, Any], explains: float) -> str:
    top = str(e.get("top_kernel", ""))
    share = fmt_pct(e["top_kernel_share"]) if top else ""
    where = f"; the top one, '{shorten(top, TOP_KERNEL_CHARS)}', is {share} of it" if top else ""
    threads = e.get("intra_op_threads")
    cores = f" on {e['cores']} cores" if e.get("cores") else ""
    thread_note = f"; captured with {threads} intra-op thread(s){cores}" if threads else ""
    return f"kernels / compute ops are {fmt_pct(e['kernel_share'])} of the step ({fmt_ns(explains)}){where}{thread_note}"


@rule(spec.COMPUTE_BOUND, _compute_bound_summary)
def compute_bound(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    share = shares["kernel"]
    kernels = diag.kernels
    if kernels is not None and diag.communication is not None:
        # The kernel bucket is compute: name the top compute kernel, not a collective.
        ev = diag.timeline.table
        collective = ev["name"].at(membership(ev["role"])([Role.DEVICE_COMMUNICATION.value]))
        kernels = kernels.take(~np.isin(kernels["name"].astype(str), np.unique(collective.astype(str))))
    top = "" if kernels is None or not len(kernels) else str(kernels["name"][0])
    top_share = 0.0 if kernels is None or not len(kernels) else float(kernels["share"][0])
    facts = diag.timeline.meta.extra.get("capture") or {}
    threads, cores = facts.get("intra_op_threads"), facts.get("cores")
    dtype, dtype_share = _slow_math_dtype(diag)
    over = oversubscribed(diag)
    return found(
        spec.COMPUTE_BOUND, spec.COMPUTE_BOUND.grade(share),
        {"kernel_share": share, "top_kernel_share": top_share, **({"top_kernel": top} if top else {}),
         **({"intra_op_threads": threads} if threads else {}),
         **({"cores": cores} if threads and cores else {}),
         **({"math_dtype": dtype, "math_dtype_share": dtype_share} if dtype else {})},
        # (Not "overhead is not the bottleneck" beside a launch/dispatch share that launch_bound grades high.)
        _anomaly_first(diag) + (f"the capture ran {over[0]}: {over[1]}; then " if over[0] else "")
        + ("framework overhead is not the bottleneck: " if spec.LAUNCH_BOUND.grade(shares["launch_overhead"]) != "high"
           else "")
        + (f"{fmt_pct(dtype_share)} of the math takes {dtype} inputs (the input types the trace records): "
           f"{SLOWER_DTYPE_WHY[dtype]}; else " if dtype else "")
        + "speed up the math (dtype, shapes, algorithm, fusion)"
        + ("" if over[0] else "; on CPU give " + INTRA_OP_POOL.get(diag.timeline.meta.framework, INTRA_OP_POOL[""])),
        share * total)


# Between-step time is "occasional" when one gap holds at least this share of it and is at least
# this many times the median gap: an epoch boundary (a validation pass, the input pipeline set up
# again), not work done after every step. Keras fit with validation_data: one 75 ms gap among six
# of 20 µs averaged to "10.8 ms between steps, move logging out of the loop".
OCCASIONAL_GAP = (0.5, 10.0)
# What the step thread runs between steps, by role, and what to do about it when most of the
# between-step time is in it (the rest: the user's own work, logging, checkpoints).
BETWEEN_STEPS_WORK = (
    ((Role.CALL.value, Role.CALL_TRACING.value, Role.COMPILED_CODE.value), "compiled_calls",
     "the loop calls compiled functions between training steps — an evaluation or validation pass (Keras "
     "validation_data: validation_freq, validation_steps), a callback calling the model: run it less often"),
    ((Role.INPUT.value,), "input",
     "the input pipeline is set up again between steps (a new iterator each epoch; a DataLoader restarting its "
     "workers without persistent_workers=True): keep one iterator, or persistent workers"),
)
BETWEEN_STEPS_DEFAULT = "move logging, metrics and checkpoint work out of the loop or do it every N steps"


def _between_steps_work(diag: Diagnosis, gap_start: np.ndarray, gap_end: np.ndarray) -> dict[str, float]:
    """Time per kind of BETWEEN_STEPS_WORK that the step thread's outermost events spend inside the
    gaps between step windows."""
    ev = diag.timeline.table
    out = {key: 0.0 for _, key, _ in BETWEEN_STEPS_WORK}
    if not len(gap_start):
        return out
    outside = driver_rows(ev, diag.steps) & (ev["step"] < 0)
    ts, end = ev["ts"], ev["ts"] + ev["dur"]
    for roles, key, _ in BETWEEN_STEPS_WORK:
        rows = outermost_rows(ev, outside & membership(ev["role"])(list(roles)))
        gap = np.searchsorted(gap_start, ts[rows], side="right") - 1
        inside = (gap >= 0) & (end[rows] <= gap_end[np.maximum(gap, 0)])
        out[key] = float((end[rows] - ts[rows])[inside].sum())
    return out


def _host_between_steps_summary(e: Mapping[str, Any], explains: float) -> str:
    gap = f"{fmt_ns(e['mean_gap_ns'])} between consecutive steps on average ({fmt_pct(e['gap_share'])} of a steady step)"
    if e.get("profiler_step_transition"):
        return (gap + ": torch.profiler's own step() call — ProfilerStep#N runs from one prof.step() to the next, "
                "so the loop's own work is inside the steps")
    if "largest_gap_ns" in e:
        gap += (f", most of it in one gap of {fmt_ns(e['largest_gap_ns'])} (the median gap is "
                f"{fmt_ns(e['median_gap_ns'])}: occasional work — an epoch's end, say — not work after every step)")
    kinds = {"compiled_calls": "calls of compiled functions", "input": "input pipeline work"}
    named = sorted(((e[f"between_steps_{key}_ns"], what) for key, what in kinds.items()
                    if f"between_steps_{key}_ns" in e), reverse=True)
    for time_in, what in named:
        gap += f"; {fmt_ns(time_in)} of the time between steps is {what}"
    return gap


@rule(spec.HOST_BETWEEN_STEPS, _host_between_steps_summary)
def host_between_steps(diag: Diagnosis) -> Finding:
    table = diag.steps.table
    if len(table) < 2:
        return spec.HOST_BETWEEN_STEPS.skipped()
    gap_start, gap_end = table["end"][:-1], table["start"][1:]
    gaps = np.maximum(gap_end - gap_start, 0)
    mean_gap = float(gaps.mean())
    share = mean_gap / diag.steady_step_ns if diag.steady_step_ns else 0.0
    # torch.profiler's ProfilerStep#N runs from one prof.step() call to the next: all the loop's own
    # work is inside the steps, and the time between them is step()'s own bookkeeping (30-110 µs a
    # step on the torch samples, read as "move logging out of the loop").
    transition = diag.steps.rule == "markers" and all(cat.TORCH_STEP.match(str(name)) for name in table["name"])
    evidence: dict[str, object] = {"mean_gap_ns": mean_gap, "gap_share": share,
                                   **({"profiler_step_transition": True} if transition else {})}
    total, largest, median = float(gaps.sum()), float(gaps.max()), float(np.median(gaps))
    grade = "none" if transition else spec.HOST_BETWEEN_STEPS.grade(share)
    if (grade != "none" and largest >= OCCASIONAL_GAP[0] * total
            and largest >= OCCASIONAL_GAP[1] * max(median, 1.0)):
        evidence.update(largest_gap_ns=largest, median_gap_ns=median)
    words = BETWEEN_STEPS_DEFAULT
    if grade != "none":
        # Each kind of work that holds a fifth of the between-step time is named; where the named
        # kinds hold half of it, the advice is theirs (largest first).
        work = _between_steps_work(diag, gap_start[gaps > 0], gap_end[gaps > 0])
        named = sorted(((t, k) for k, t in work.items() if t >= 0.2 * total), reverse=True)
        evidence.update({f"between_steps_{k}_ns": t for t, k in named})
        if sum(t for t, _ in named) >= 0.5 * total:
            words = "; ".join(next(a for _, key, a in BETWEEN_STEPS_WORK if key == k) for _, k in named)
    return found(spec.HOST_BETWEEN_STEPS, grade, evidence, words, mean_gap)


def _paused_summary(e: Mapping[str, Any], explains: float) -> str:
    if not e["steps_paused"]:
        return (f"the step's thread never stops longer than at the same place in the other steps of its shape "
                f"({e['steps_compared']} steady steps compared)")
    return (f"the step's thread stops for {fmt_pct(e['paused_share'])} of the step ({fmt_ns(explains)}) at places "
            f"where the other steps of the same shape do not, in {e['steps_paused']} of {e['steady_steps']} steady "
            f"steps (up to {fmt_ns(e['longest_step_pause_ns'])} in one)")


@rule(spec.PAUSED, _paused_summary)
def paused(diag: Diagnosis) -> Finding:
    compared = set(diag.attribution.compared_steps)
    if not any(int(p) in compared for p in diag.steady_positions):
        return spec.PAUSED.skipped()
    _, total = _shares(diag)
    per_step = _steady_detail(diag, PAUSED_DETAIL)
    paused_ns = float(per_step.mean()) if len(per_step) else 0.0
    share = paused_ns / total if total else 0.0
    # The program's own DataLoader workers compete for the cores: on a small machine they are the
    # "other process" (two workers on two cores slowed a step's ops 12-20x).
    workers = dataloader_workers(diag.timeline)
    own = ("the program's own DataLoader worker processes run beside the step (a DataLoader with num_workers > 0 "
           "is in the trace) and take cores from it: fewer workers, or fewer intra-op threads "
           "(torch.set_num_threads), so that together they fit the cores; else " if workers else "")
    return found(
        spec.PAUSED, spec.PAUSED.grade(share),
        {"paused_share": share, "steps_paused": int(np.count_nonzero(per_step)), "dataloader_workers": workers,
         "steady_steps": len(per_step), "steps_compared": len(compared),
         "longest_step_pause_ns": float(per_step.max()) if len(per_step) else 0.0},
        own + "time the machine took, not the step's work (unless the program does extra work in some steps only, "
        "such as a log line every N steps, seen once in the capture): another process had the core, or the hypervisor "
        "took the virtual CPU (CPU steal: 'st' in top or vmstat); capture on an otherwise idle machine and compare "
        "the step time without the profiler. The other causes exclude the pauses", paused_ns)


def _wait_places_text(e: Mapping[str, Any]) -> str:
    """Where the step's thread waited for the lock: the events named, and the gaps between them."""
    places = [f"'{shorten(str(name), TOP_KERNEL_CHARS)}'" for name in e.get("wait_places", [])]
    if e.get("gap_wait_share", 0.0) >= 0.05:
        places.append(f"the unrecorded gaps between events ({fmt_pct(e['gap_wait_share'])})")
    return "in " + (", ".join(places[:-1]) + " and " + places[-1] if len(places) > 1 else places[0]) if places else ""


def _gil_contention_summary(e: Mapping[str, Any], explains: float) -> str:
    return (f"the step's thread waits for Python's interpreter lock for {fmt_pct(e['gil_wait_share'])} of the step "
            f"({fmt_ns(explains)}), in {e['steps_waiting']} of {e['steady_steps']} steady steps: stretches outside "
            f"every op that last whole switch intervals ({fmt_ns(e['switch_interval_ns'])}, CPython's default), "
            f"after framework calls: {_wait_places_text(e)}"
            + (f"; meanwhile another thread runs Python in '{shorten(e['busy_thread_frame'], TOP_KERNEL_CHARS)}'"
               if e.get("busy_thread_frame") else ""))


@rule(spec.GIL_CONTENTION, _gil_contention_summary)
def gil_contention(diag: Diagnosis) -> Finding | None:
    """Only where the step's thread waited for the interpreter lock (analyzers/gil_waits.py)."""
    per_step = _steady_detail(diag, GIL_WAIT_DETAIL)
    if not per_step.any():
        return None
    _, total = _shares(diag)
    wait_ns = float(per_step.mean())
    share = wait_ns / total if total else 0.0
    # The shorter interval: 3-8x faster steps at 0.5 ms than at 5 ms (benchmarks/switch_interval.py).
    return found(
        spec.GIL_CONTENTION, spec.GIL_CONTENTION.grade(share),
        {"gil_wait_share": share, "steps_waiting": int(np.count_nonzero(per_step)), "steady_steps": len(per_step),
         "switch_interval_ns": SWITCH_INTERVAL_NS, **_wait_places(diag, float(per_step.sum())),
         "busy_thread_frame": _busy_python_thread(diag)},
        "another thread of this process runs Python while the step runs: after each framework call the step's "
        "thread waits to take the interpreter lock back, a whole switch interval at a time "
        "(sys.getswitchinterval()). Find that thread (py-spy dump --pid PID prints every thread's Python stack; "
        "threading.enumerate() lists them), then move its work to another process (multiprocessing, DataLoader "
        "workers) or make it block instead of computing or polling (queue.get, an Event, time.sleep); meanwhile a "
        "shorter interval (sys.setswitchinterval(0.0005)) shortens each wait. The other causes exclude the waits",
        wait_ns)


# The events named as where the step's thread waited for the lock, largest first.
MOST_WAIT_PLACES = 3


def _wait_places(diag: Diagnosis, total_ns: float) -> dict[str, object]:
    """Where the waits were: the events whose own time held the most (``wait_places``, at most
    MOST_WAIT_PLACES names), and the share in the unrecorded gaps between events
    (``gap_wait_share``: the rest of the waits)."""
    rows, ns = diag.attribution.gil_wait_events if len(diag.attribution.gil_wait_events) else ((), ())
    if not len(rows):
        return {"wait_places": [], "gap_wait_share": 1.0}
    codes, values = column_codes(diag.timeline.table["name"])
    per_name = np.bincount(codes[np.asarray(rows)].astype(np.int64), weights=np.asarray(ns, dtype=np.float64),
                           minlength=len(values))
    order = np.argsort(-per_name, kind="stable")[:MOST_WAIT_PLACES]
    places = [str(values[c]) for c in order.tolist() if per_name[c] > 0]
    return {"wait_places": places, "gap_wait_share": max(0.0, 1.0 - float(per_name.sum()) / total_ns) if total_ns else 0.0}


# The frame that is a thread's body: the deepest of its Python frames that spans at least this share
# of the thread's Python time in the steady steps (threading's bootstrap frames span it all; the
# function the thread was started with is the deepest that does).
THREAD_BODY_SHARE = 0.9


def _busy_python_thread(diag: Diagnosis) -> str | None:
    """With Python events, the body of the other host thread that ran Python longest during the
    steady steps (the thread that held the interpreter lock: ``build_batches``, a logger's loop);
    None without Python events on other threads."""
    ev = diag.timeline.table
    python = (membership(ev["kind"])([Kind.PYTHON.value]) & (ev["device"] < 0)
              & ~driver_rows(ev, diag.steps))
    rows = np.flatnonzero(python)
    steady = diag.steps.table.take(diag.steady_positions)
    if not len(rows) or not len(steady):
        return None
    lo, hi = int(steady["start"].min()), int(steady["end"].max())
    ts = ev["ts"][rows]
    inside = np.clip(ts + ev["dur"][rows], lo, hi) - np.clip(ts, lo, hi)
    track, _ = column_codes(ev["track"])
    track = track[rows].astype(np.int64)
    roots = ev["parent"][rows] < 0
    thread_ns = np.bincount(track[roots], weights=inside[roots], minlength=int(track.max()) + 1)
    busiest = int(np.argmax(thread_ns))
    if thread_ns[busiest] <= 0:
        return None
    body = np.flatnonzero((track == busiest) & (inside >= THREAD_BODY_SHARE * thread_ns[busiest]))
    if not len(body):  # (no one frame spans the thread's Python: several calls from outside Python)
        return None
    depth = ev["depth"][rows[body]]
    return str(ev["name"].at([int(rows[body[np.argmax(depth)]])])[0])  # (the first of the deepest)


def _steady_detail(diag: Diagnosis, detail: str) -> np.ndarray:
    """A detail column's ns in each steady step (zeros where the attribution has no such column)."""
    details = diag.attribution.details
    if detail not in details.columns:
        return np.zeros(len(diag.steady_positions), dtype=np.int64)
    return details[detail][diag.steady_positions]


def _unrecorded_summary(e: Mapping[str, Any], explains: float) -> str:
    return f"{fmt_pct(e['idle_share'])} of the step ({fmt_ns(explains)}) has no recorded event on any track"


@rule(spec.UNRECORDED, _unrecorded_summary)
def unrecorded(diag: Diagnosis) -> Finding:
    shares, total = _shares(diag)
    # Pauses and waits for the interpreter lock are idle time the paused and gil_contention rules
    # explain; this rule grades the rest.
    stopped_ns = sum(diag.steady_details().get(d, 0.0) for d in (PAUSED_DETAIL, GIL_WAIT_DETAIL))
    share = max(shares["idle"] - (stopped_ns / total if total else 0.0), 0.0)
    return found(
        spec.UNRECORDED, spec.UNRECORDED.grade(share), {"idle_share": share},
        "usually Python between framework calls; profile with the Python tracer (torch with_stack / "
        "python_tracer_level) or lower --dispatch-gap-us to see it", share * total)


def findings(diag: Diagnosis) -> list[Finding]:
    """Every rule's finding with what its fix would buy (:func:`predicted`), ranked
    (:func:`ranked`); a rule whose row needs device events is skipped on a trace without them."""
    has_device = diag.timeline.has_device
    found = [(row, row.skipped() if row.needs_device and not has_device else run(diag)) for row, run in RULES]
    return ranked([predicted(diag, row, finding) for row, finding in found if finding is not None])


# Where the waits the trace cannot tie to the work they wait for hold at least this share of the
# steady step, a prediction says that it keeps them as recorded.
UNSUPPORTED_NOTE_SHARE = 0.05


def predicted(diag: Diagnosis, row: FindingSpec, finding: Finding) -> Finding:
    """The finding with the mean steady step replayed without its cause (its row's fix) and what
    that saves; or, where the fix removes no work of the steps, why there is no prediction."""
    if finding.grade == "skipped":
        return finding
    if not row.fix:
        return replace(finding, prediction=row.no_fix)
    whatif, critical = diag.attribution.whatif, diag.attribution.critical
    positions = diag.steady_positions
    column = f"without.{row.fix}"
    if column not in whatif.columns or not len(positions):
        return replace(finding, prediction="the steps were not replayed")
    skewed = diag.quality.skewed_devices if diag.attribution.mode == "device" else ()
    if skewed:
        # The replay orders the host's and the device's work by their clocks.
        return replace(finding, prediction="no prediction: the clock of device " + ", ".join(map(str, skewed))
                       + " runs behind the host's (trace quality), so the replay cannot order their work")
    now = float(whatif["replayed"][positions].mean())
    step = float(whatif[column][positions].mean())
    unsupported = float(critical["unsupported"][positions].mean())
    words = f"the steps replayed along their recorded dependencies without {row.fix}"
    if now and unsupported >= UNSUPPORTED_NOTE_SHARE * now:
        words += (f"; {fmt_ns(unsupported)} a step of waits whose awaited work the trace does not record is kept "
                  "as recorded (predicted from fewer edges)")
    lost = diag.quality.counts()["dropped"]
    if lost:
        words += f"; {lost} events lost to broken data are not in it (trace quality)"
    finding = replace(finding, predicted_step_ns=step, predicted_saving_ns=now - step, prediction=words)
    after = next((c for c in whatif.columns if c.startswith("without.") and c.endswith(f"+{row.fix}")), None)
    if after is not None:
        first = after[len("without."):-len(row.fix) - 1]
        finding = replace(finding, first_fix=first, predicted_saving_after_ns=float(
            whatif[f"without.{first}"][positions].mean() - whatif[after][positions].mean()))
    elif any(c.startswith(f"without.{row.fix}+") for c in whatif.columns):
        finding = replace(finding, first_fix=row.fix)  # its fix is the first
    return graded_by_saving(row, finding, now, supported=unsupported < UNSUPPORTED_NOTE_SHARE * now)


_SEVERITY = {"none": 0, "moderate": 1, "high": 2}


def graded_by_saving(row: FindingSpec, finding: Finding, step_ns: float, supported: bool) -> Finding:
    """A problem graded by what its fix saves (alone, or once the first fix is made, whichever is
    more) where that grades it milder than its measure: a cause whose time runs beside the work
    that sets the step's length (a prefetching producer, the host's dispatch while the device is
    busy) is worth what leaves the critical path, and the report must not promise more. The row's
    thresholds grade the saving's share of the step, as they grade the cause's share. Kept as
    measured where the prediction rests on fewer edges (waits the trace cannot tie to their work:
    the replay may then undercount the saving)."""
    saving = finding.best_saving_ns
    if (finding.grade not in _SEVERITY or finding.grade == "none" or row.thresholds is None or step_ns <= 0
            or not supported or saving is None):
        return finding
    by_saving = row.grade(max(saving, 0.0) / step_ns)
    if _SEVERITY[by_saving] >= _SEVERITY[finding.grade]:
        return finding
    return replace(finding, grade=by_saving, measure_grade=finding.grade)


# Ranking tiers: problems, then the rules that found none, then those skipped.
_TIER = {"high": 0, "moderate": 0, "none": 1, "skipped": 2}


def ranked(results: list[Finding | None]) -> list[Finding]:
    """The findings (None: not listed) ranked: graded problems first, by the time fixing them saves
    per step, largest first (``Finding.saves_ns``: the replayed saving where predicted — the fix
    that saves most alone, then the others by what each saves once that one is made, never above
    it: the order to make them in —, else the time they explain); then the rules that found no
    problem, then those skipped. Ties keep the order of the rules, so the ranking is deterministic."""
    listed = [f for f in results if f is not None]

    def is_first(f: Finding) -> bool:
        return bool(f.first_fix) and f.predicted_saving_after_ns is None

    cap = max((f.saves_ns for f in listed if is_first(f)), default=math.inf)

    def key(i: int) -> tuple[int, float, bool, int]:
        f = listed[i]
        saves = min(f.saves_ns, cap) if f.predicted_saving_after_ns is not None else f.saves_ns
        return _TIER[f.grade], -saves, not is_first(f), i

    return [listed[i] for i in sorted(range(len(listed)), key=key)]


def rephrased(finding: Finding) -> Finding:
    """A diagnosis's finding with its summary phrased anew from its evidence (after its names were
    redacted)."""
    return spec_rephrased(finding, SUMMARIES[finding.rule])


