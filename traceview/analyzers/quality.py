"""Trace quality: what in a trace makes its numbers less trustworthy, counted.

``trace_quality(timeline, steps)`` returns a :class:`Quality`: one count per check in
:data:`CHECKS` (a problem when above 0; ``--strict`` turns any into exit status 2), the drops
that are expected and mean nothing for the numbers, and the readers' notes. Every check is a few
array operations over the whole table, never a Python loop per event. Definitions:

- ``dropped``: events dropped for a reason that means lost or broken data. Reasons in
  :data:`EXPECTED_DROPS` (metadata records, flow arrows, instant events … that every trace of
  the format has and that carry no time) are listed apart and are not a problem.
- ``device_before_launch``: device events whose correlated host launch call starts after the
  device event starts (:func:`traceview.normalize.launch_rows`): a device cannot start work
  before it is asked to.
- ``overlaps``: host events that start inside another event on their track and end after it
  (counted while nesting: ``meta.extra["overlaps"]``, :func:`traceview.normalize.nest_tracks`),
  but for those that are expected: Python frames around the ranges they open, TF executor ranges
  (``categories.NESTING_LOOSE``).
- ``clock_skew``: devices on which the median of (device start − launch start) over the
  correlated pairs is negative. That difference is the launch latency, a few µs at least on
  real hardware (6 µs and more on V100/A100/MI300 traces); a negative median means the device
  timestamps are systematically early — the device clock is behind the host clock by at least
  that much — not a few misattributed ids.
- ``duplicate_correlation``: correlation ids carried by more than one host call, or by more
  than one device activity (kernel, copy, memset, sync record) when the launch is not one that
  queues several (:data:`traceview.categories.MULTI_ACTIVITY_LAUNCH`: graph launches).
- ``empty_steps``: steps whose window holds no event besides step markers (left out of the steps,
  but for a run of them at the end of the trace).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from traceview import categories as cat
from traceview.analyzers.steps import events_held
from traceview.arrays import group_medians, membership, unique_sorted
from traceview.normalize import launch_rows
from traceview.results import Quality, Steps
from traceview.schema import OVERLAPS_KEY, Kind, Timeline
from traceview.table import Table


# Drop reasons that are expected in every trace of their format and lose no time: the readers keep
# what they carry in another form or there is no duration to place. Matched as prefixes of the
# readers' reason strings (traceview/readers/kineto.py, xplane.py). Any other reason — a broken
# field, an unknown category or phase, an aggregated event without timestamps — is lost data.
EXPECTED_DROPS: tuple[str, ...] = (
    "metadata record",  # Kineto ph M: process and thread names, kept as track labels
    "flow arrow",  # Kineto ph s/f: the launch → kernel arrow, kept as the correlation id
    "instant event",  # Kineto ph i/I/n, XPlane zero-length events: no duration
    "counter sample",  # Kineto ph C: memory counters, not timed work
    "memory sample",  # Kineto "[memory]" instants, XPlane MemoryAllocation/Deallocation: kept in the memory table
    "profiler span (cat Trace)",  # Kineto's span around the whole capture
    "metadata plane",  # XPlane /host:metadata, Task Environment…: HLO protos and settings, no timeline
    "derived line",  # XPlane derived lines: copies of events kept on their source lines
)


def is_expected_drop(reason: str) -> bool:
    return reason.startswith(EXPECTED_DROPS)


def trace_quality(timeline: Timeline, steps: Steps) -> Quality:
    """Count what makes this trace's numbers less trustworthy (the checks in :data:`CHECKS`)."""
    meta = timeline.meta
    events = timeline.table
    launch = launch_rows(events)
    before, offsets = _launch_timing(events, launch)
    host_ids, device_ids = _duplicate_correlations(events, launch)
    return Quality(
        dropped={r: int(c) for r, c in meta.dropped.items() if c and not is_expected_drop(r)},
        expected_drops={r: int(c) for r, c in meta.dropped.items() if c and is_expected_drop(r)},
        device_before_launch=before,
        overlaps=int(meta.extra.get(OVERLAPS_KEY, 0)),
        launch_offset_ns=offsets,
        duplicate_host_ids=len(host_ids),
        duplicate_device_ids=len(device_ids),
        duplicate_ids=len(unique_sorted(np.concatenate((host_ids, device_ids)))),
        empty_steps=_empty_steps(events, steps),
        notes=tuple(meta.notes) + _capture_notes(events),
    )


# What a trace records that changes the size of what it measures: said once, as a note (a
# measurement, not a problem of the trace). The same torch step captured with the Python tracer
# (with_stack=True, plus record_shapes and profile_memory) read 1.61 ms of launch/dispatch against
# 1.26 ms without, 1.1 ms of it the "python" part, and lost its compute_bound finding.
PYTHON_TRACER_NOTE = ("Python events are recorded (the Python tracer: torch with_stack=True, JAX's or TensorFlow's "
                      "Python tracer): its own cost per call lands in the host time around the ops (launch/dispatch "
                      "and host compute, their 'python' parts), so host causes read larger than without it; size them "
                      "against a capture without Python events")


def _capture_notes(events: Table) -> tuple[str, ...]:
    """Notes on what the capture recorded (PYTHON_TRACER_NOTE)."""
    python = membership(events["kind"])([Kind.PYTHON.value]).any() if len(events) else False
    return (PYTHON_TRACER_NOTE,) if python else ()


def _launch_timing(events: Table, launch: np.ndarray) -> tuple[int, dict[int, float]]:
    """Device events that start before their launch call, and per device the median of
    (device start − launch start) over its correlated pairs (``launch``: :func:`launch_rows`)."""
    rows = np.flatnonzero(launch >= 0)
    if not len(rows):
        return 0, {}
    ts = events["ts"]
    offset = ts[rows] - ts[launch[rows]]
    devices, medians = group_medians(offset, events["device"][rows])
    return int(np.count_nonzero(offset < 0)), {int(d): float(v) for d, v in zip(devices.tolist(), medians.tolist())}


def _duplicate_correlations(events: Table, launch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The correlation ids on more than one host call, and those on more than one device
    activity launched by a call that queues one (``launch``: :func:`launch_rows`)."""
    correlation = events["correlation"]
    host = events["device"] < 0
    linked = correlation >= 0
    activity = ~host & linked & ~membership(events["kind"])([Kind.DEVICE_ANNOTATION.value])
    launched = np.flatnonzero(activity & (launch >= 0))
    if len(launched):
        # The launch calls' names are few (runtime API names): each is matched once.
        codes = events["name"].codes[launch[launched]]
        names = events["name"].categories
        used = unique_sorted(codes)
        multi = np.zeros(len(names), dtype=bool)
        multi[used] = [bool(cat.MULTI_ACTIVITY_LAUNCH.match(str(names[c]))) for c in used]
        activity[launched[multi[codes]]] = False
    return _repeated(correlation[host & linked]), _repeated(correlation[activity])


def _repeated(values: np.ndarray) -> np.ndarray:
    """The distinct values that occur more than once (sorted)."""
    if len(values) < 2:
        return values[:0]
    ordered = np.sort(values)
    return unique_sorted(ordered[1:][ordered[1:] == ordered[:-1]])


def _empty_steps(events: Table, steps: Steps) -> tuple[int, ...]:
    """Numbers of the steps whose window holds no event other than step markers: those the step
    rules left out before a step that holds events, and those kept because every step is empty.
    A run of them at the end (the stretch from the last step() to the profiler's stop) is no
    problem."""
    table = steps.table
    counts = events_held(events, events["step"], len(table))
    return tuple(sorted(steps.empty_inside + tuple(int(n) for n in table["number"][counts == 0])))


def strict_message(qualities: Iterable[tuple[str, Quality]]) -> str | None:
    """``--strict``: one line naming each trace's problems, or None when there are none."""
    parts = []
    for source, quality in qualities:
        counts = quality.counts()
        found = quality.problems()
        if found:
            parts.append(f"{source} (" + ", ".join(f"{c.label}: {counts[c.key]:,}" for c in found) + ")")
    return "trace quality problems (--strict): " + "; ".join(parts) if parts else None
