"""Each cause's size without the profiler, estimated: the profiler's excess spread by the events it recorded.

A capture that also timed its steps without the profiler (a manifest's unprofiled steady step:
``traceview collect``, ``traceview run --calibrate``) says how much the profiler added to a step
in all, not where. Its cost is mostly per recorded event — the record at each op's, range's and
Python call's entry and exit — so the excess (profiled mean steady step − unprofiled median) is
taken off each cause in proportion to the recorded events' boundaries (entries and exits of host
events in the steady steps) that fall in the moments the attribution gave that cause. A cause
whose moments hold few events (one long kernel, a sleep) keeps its time; launch/dispatch, where
the events are dense, gives up most.

Measured on the ground-truth cases (the cause's growth from the clean to the injected capture
against the same growth measured without the profiler; benchmarks/truth/README.md): within
0.75-1.25 in 35 of 43 steady cause cases, against 30 of 43 for the profiled sizes; mean
|log(ratio)| 0.197 against 0.213. What it cannot see: torch's Python tracer (``with_stack``)
slows every line of pure Python, not only its calls, so a Python loop's time stays inflated
(torch-user-python: 1.48 of the unprofiled cost, 1.52 profiled).
"""

from __future__ import annotations

from traceview.analyzers.attribution import record_boundaries
from traceview.results import Diagnosis


def unprofiled_buckets(diag: Diagnosis, unprofiled_ns: float | None = None) -> dict[str, float] | None:
    """Mean ns per shown bucket of the steady steps with the profiler's excess over
    ``unprofiled_ns`` (default: the capture's manifest's unprofiled steady step) taken off; None
    where there is no unprofiled step time or no count of the records per bucket
    (``Attribution.record_boundaries``, counted for captures with unprofiled timings, or counted
    here from the kept bucket runs); the
    profiled sizes where the profiled step is no longer than the unprofiled one."""
    unprofiled = diag.unprofiled_step_ns if unprofiled_ns is None else unprofiled_ns
    profiled = diag.steady_attribution()
    excess = sum(profiled.values()) - (unprofiled or 0.0)
    boundaries = diag.attribution.record_boundaries
    if not len(boundaries) and len(diag.attribution.segments):  # (an unprofiled time given here)
        boundaries = record_boundaries(diag.timeline, diag.attribution.segments, len(diag.steps.table))
    positions = diag.steady_positions
    if not unprofiled or not len(boundaries) or not len(positions):
        return None
    if excess <= 0:
        return profiled  # (the profiler added nothing the two timings can tell)
    counts = {b: int(boundaries[b][positions].sum()) for b in profiled}
    total = sum(counts.values())
    if not total:
        return None
    return {b: max(0.0, ns - excess * counts[b] / total) for b, ns in profiled.items()}
