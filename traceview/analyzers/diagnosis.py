"""Everything ``traceview diagnose`` reports about one trace: every analysis run once.

``diagnose_timeline(timeline, steps)`` returns a :class:`~traceview.results.Diagnosis` (a trace
file's: ``traceview.loader.diagnose(path)``); renderers only read it.
``Diagnosis.to_dict()`` is the JSON document (keys documented in docs/json.md).
"""

from __future__ import annotations

import contextvars
import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from traceview.analyzers.attribution import attribute
from traceview.analyzers.communication import comm_overlap
from traceview.analyzers.device_time import device_time
from traceview.analyzers.launch import launch_stats
from traceview.analyzers.memory import memory_use
from traceview.analyzers.modes import execution_mode
from traceview.analyzers.quality import trace_quality
from traceview.analyzers.findings.diagnosis import findings
from traceview.analyzers.top import TOP_N, top_kernels, top_ops
from traceview.arrays import column_codes, membership, unique_small_range
from traceview.errors import one_line
from traceview.results import PAUSED_DETAIL, AttributionOptions, Diagnosis, Steps
from traceview.roles import Role
from traceview.schema import Timeline
from traceview.table import Table

# Profiled / unprofiled step time from which the report warns that the profiler distorts the
# attribution (torch.profiler inflates tiny-op steps by up to ~50 %; with the Python tracer on
# Python-heavy steps it is larger).
INFLATION_WARNING = 1.5
# Mean / median steady step from which the report says the steps are uneven: the median then is a
# step that holds little of its own work (JAX's asynchronous dispatch: four steps of 20 µs, the
# fifth of 25 ms holding all five steps' computation; median 26 µs, mean 4.7 ms).
UNEVEN_STEPS = 3.0


# A name that only some steady steps hold marks them as heavy steps of a cycle when they take at
# least this multiple of the others' median (gradient accumulation: the optimizer's update every k
# micro-batches, each its own ProfilerStep).
PERIODIC_HEAVY = 1.5


def periodic_heavy_steps(events: Table, steps: Steps, steady: np.ndarray) -> str | None:
    """A note when every k-th steady step (k ≥ 2, at least two of them, at least two others) holds
    an event name the other steady steps do not and takes ``PERIODIC_HEAVY``× their median: the
    steady median is then one of the light steps, and the cycle of k steps is the unit of work."""
    if len(steady) < 4:
        return None
    numbers = steps.table["number"][steady]
    duration = steps.table["duration"][steady].astype(np.float64)
    position_of = np.full(len(steps.table) + 1, -1, dtype=np.int64)
    position_of[steady] = np.arange(len(steady))
    step_col = events["step"]
    held = np.flatnonzero(step_col >= 0)
    at = position_of[step_col[held]]
    held, at = held[at >= 0], at[at >= 0]
    codes, names = column_codes(events["name"])
    codes = codes[held]
    known = codes >= 0
    pairs = unique_small_range(at[known].astype(np.int64) * (len(names) + 1) + codes[known],
                               len(steady) * (len(names) + 1))
    in_step, name = np.divmod(pairs, len(names) + 1)
    steps_holding = np.bincount(name, minlength=len(names))
    best: tuple[float, str, np.ndarray, float] | None = None
    for code in np.flatnonzero((steps_holding >= 2) & (steps_holding <= len(steady) - 2)).tolist():
        heavy = np.zeros(len(steady), dtype=bool)
        heavy[in_step[name == code]] = True
        stride = np.diff(numbers[heavy])
        light = float(np.median(duration[~heavy]))
        slowest_light = float(duration[~heavy].max())
        # (light steps of no duration: no multiple of them to speak of)
        if (stride[0] < 2 or not (stride == stride[0]).all() or light <= 0
                or duration[heavy].min() < PERIODIC_HEAVY * light or duration[heavy].min() <= slowest_light):
            continue
        extra = float(duration[heavy].mean() - light)
        if best is None or extra > best[0]:
            best = (extra, str(names[code]), heavy, light)
    if best is None:
        return None
    _, label, heavy, light = best
    period = int(np.diff(numbers[heavy])[0])
    heavy_ms = float(np.median(duration[heavy])) / 1e6
    cycle = heavy_ms + (period - 1) * light / 1e6
    listed = ", ".join(f"#{n}" for n in numbers[heavy][:6]) + (" …" if heavy.sum() > 6 else "")
    ordinal = {2: "second", 3: "third"}.get(period, f"{period}th")
    return (f"every {ordinal} steady step ({listed}) holds '{one_line(label)}', which the others do not, and takes "
            f"{heavy_ms / (light / 1e6):.1f}× their median ({heavy_ms:.3g} ms against {light / 1e6:.3g} ms): the "
            f"steady median is one of the light steps, and a cycle of {period} steps takes about {cycle:.3g} ms "
            "(gradient accumulation, or work the loop does every few steps)")


def diagnose_timeline(timeline: Timeline, steps: Steps, options: AttributionOptions | None = None,
                      top: int | None = TOP_N) -> Diagnosis:
    attribution = attribute(timeline, steps, options)
    stalled = attribution.stalled_events
    # The analyses below each read the table and the attribution and write nothing another reads,
    # and their array passes let go of the interpreter lock: about half of them on a second thread,
    # in the caller's context (numpy's error settings are a context variable).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="traceview-analyses") as helper:
        beside = helper.submit(contextvars.copy_context().run, lambda: (
            launch_stats(timeline, steps, stalled), device_time(timeline), comm_overlap(timeline, steps),
            trace_quality(timeline, steps)))
        kernels, ops = top_kernels(timeline, steps, top, stalled), top_ops(timeline, steps, top, stalled)
        memory, mode = memory_use(timeline, steps, top), execution_mode(timeline, steps)
        launch, device, communication, quality = beside.result()
        result = Diagnosis(timeline=timeline, steps=steps, attribution=attribution, kernels=kernels, ops=ops,
                           launch=launch, device=device, communication=communication, quality=quality,
                           memory=memory, mode=mode)
        notes = helper.submit(contextvars.copy_context().run, _notes, result)
        return dataclasses.replace(result, findings=tuple(findings(result)), notes=tuple(notes.result()))


# A step whose threads waited for a CPU this share of its time or more (another process held the
# cores, or the script ran more threads than there are): the report says the machine was contended.
CONTENDED_SHARE = 0.05


def _every_step_waits(diag: Diagnosis) -> bool:
    """Whether every steady step's host waits for the device or the program it dispatched (a sync
    call: ``block_until_ready``, a CUDA synchronize, a ``.item()``'s copy back)."""
    events = diag.timeline.table
    waits = membership(events["role"])([Role.SYNC.value]) & (events["step"] >= 0)
    positions = diag.steady_positions
    if not len(positions) or not waits.any():
        return False
    per_step = np.bincount(events["step"][waits], minlength=len(diag.steps.table))
    return bool((per_step[positions] > 0).all())


def _notes(diag: Diagnosis) -> list[str]:
    """What the report says about the steps beside the numbers: uneven steps, a cycle of heavy
    steps, steps without framework ops, the profiler's inflation."""
    notes = []
    steps, timeline = diag.steps, diag.timeline
    steady = steps.table["duration"][diag.steady_positions]
    # A pause (the OS or the hypervisor took the core) makes one step long without holding any
    # other step's work: the paused finding says so, and the steps are uneven only without it.
    details = diag.attribution.details
    paused = details[PAUSED_DETAIL][diag.steady_positions] if PAUSED_DETAIL in details.columns else 0
    working = steady - paused
    if len(steady) >= 3 and working.mean() > UNEVEN_STEPS * max(float(np.median(working)), 1.0):
        head = (f"the steady steps are uneven: median {np.median(steady) / 1e6:.3g} ms, mean {steady.mean() / 1e6:.3g} "
                "ms")
        if _every_step_waits(diag):
            notes.append(f"{head}, with each step waiting for its own results: some steps do more work than the "
                         "others (work every few steps, a growing input); the attribution is of the mean step")
        else:
            notes.append(
                f"{head}: a few steps hold the others' work (asynchronous dispatch settles "
                "several steps' work in one, as in a JAX loop that blocks on a result every few steps); the "
                "attribution is of the mean step — block on each step's result to give every step its own work")
    periodic = periodic_heavy_steps(timeline.table, steps, diag.steady_positions)
    if periodic is not None:
        notes.append(periodic)
    if diag.launch.ops_per_step == 0 and not timeline.has_device:
        notes.append(
            "the steps hold no framework op: the trace records no training work in them (a profiler schedule's "
            "cycle that ended before the loop's next step, a window that closed before the step ran, or work "
            "no profiler records, such as numpy); their time cannot be attributed to a cause")
    waited = (timeline.meta.extra.get("capture") or {}).get("cpu_wait_ns_per_step")
    step = float(steady.mean()) if len(steady) else 0.0
    if waited and step and waited >= CONTENDED_SHARE * step:
        notes.append(
            f"the machine was contended: the process's threads waited {waited / 1e6:.3g} ms a step "
            f"({waited / step:.0%} of the steady step) for a CPU while they had work (Linux schedstat, recorded by "
            "traceview run); every op ran slower by up to that much, so the kernel and dispatch times are in doubt "
            "by as much: profile again on an otherwise idle machine")
    inflation = diag.profiler_inflation
    doubt = diag.calibration_doubt
    if doubt is not None:
        notes.append(f"the profiler's inflation (×{inflation:.2f} from the capture's manifest) is unreliable: {doubt}")
    elif inflation is not None and inflation >= INFLATION_WARNING:
        notes.append(
            f"the profiler inflates the steady step {inflation:.1f}× (unprofiled {diag.unprofiled_step_ns / 1e6:.3g} "
            "ms, from the capture's manifest): per-op host costs (dispatch, Python) are over-represented in the "
            "attribution; compare shares, not absolute times")
    return notes
