"""Each cause's size without the profiler, estimated: the profiler's excess spread by the events it recorded.

A capture that also timed its steps without the profiler (a manifest's unprofiled steady step:
``traceview collect``, ``traceview run --calibrate``) says how much the profiler added to a step
in all, not where. Much of its cost is per recorded event — the record at each op's, range's and
Python call's entry and exit — so the excess (profiled mean steady step − unprofiled median) is
first taken off each cause in proportion to the recorded events' boundaries (entries and exits of
host events in the steady steps) that fall in the moments the attribution gave that cause, no
cause giving up more than it has: a cause whose moments hold few events (one long kernel, a
sleep) keeps its time, launch/dispatch, where the events are dense, gives up most. What that
leaves over the unprofiled step (the dense causes used up), or short of it (a profiled step
faster than the unprofiled one), is the work itself running at another speed under the profiler
— torch's Python tracer slows every line of pure Python, big ops ran slower beside it — and is
spread over the causes in proportion to their time. The causes then sum to the unprofiled step.

Measured on the ground-truth cases (the cause's growth from the clean to the injected capture
against the same growth measured without the profiler; benchmarks/truth/README.md): within
0.75-1.25 in 37 of 43 steady cause cases, against 30 of 43 for the profiled sizes; mean
|log(ratio)| 0.163 against 0.213. On a real script (an LSTM language model, batch 2 → 20) the
kernel's growth reads +49.2 ms against an unprofiled gap of +46.1 ms, where the profiled +67.4 ms
was larger than the whole gap.
"""

from __future__ import annotations

from traceview.analyzers.attribution import record_boundaries
from traceview.results import Diagnosis


def unprofiled_buckets(diag: Diagnosis, unprofiled_ns: float | None = None) -> dict[str, float] | None:
    """Mean ns per shown bucket of the steady steps with the profiler's excess over
    ``unprofiled_ns`` (default: the capture's manifest's unprofiled steady step) taken off; None
    where there is no unprofiled step time or no count of the records per bucket
    (``Attribution.record_boundaries``, counted for captures with unprofiled timings, or counted
    here from the kept bucket runs)."""
    unprofiled = diag.unprofiled_step_ns if unprofiled_ns is None else unprofiled_ns
    profiled = diag.steady_attribution()
    excess = sum(profiled.values()) - (unprofiled or 0.0)
    boundaries = diag.attribution.record_boundaries
    if not len(boundaries) and len(diag.attribution.segments):  # (an unprofiled time given here)
        boundaries = record_boundaries(diag.timeline, diag.attribution.segments, len(diag.steps.table))
    positions = diag.steady_positions
    if not unprofiled or not len(boundaries) or not len(positions):
        return None
    counts = {b: int(boundaries[b][positions].sum()) for b in profiled}
    total = sum(counts.values())
    if excess > 0 and total:
        # Per record first: no cause gives up more than it has.
        taken = {b: min(ns, excess * counts[b] / total) for b, ns in profiled.items()}
        estimate = {b: ns - taken[b] for b, ns in profiled.items()}
    else:
        estimate = dict(profiled)
    # What per-record cost cannot account for (the causes it would come off are used up; or a
    # profiled step shorter than the unprofiled one) is the ops themselves running at another
    # speed: spread in proportion to each cause's time, so the causes sum to the unprofiled step.
    rest = sum(estimate.values())
    scale = unprofiled / rest if rest > 0 else 1.0
    return {b: ns * scale for b, ns in estimate.items()}
