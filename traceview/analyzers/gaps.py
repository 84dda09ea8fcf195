"""Unrecorded gaps on the step's thread: the stretches inside a step between its top-level events
(and the step's edges) where the profiler recorded nothing, and the threshold that splits them
into framework glue and host work it did not see.

Profilers record framework ops, not the Python between them, so these gaps are where the step's
thread ran code no event shows. Carving (analyzers/carving.py) takes the waits for the interpreter
lock and the pauses off them (:func:`gaps_less_pauses`) before they are split at the threshold
(:func:`split_gaps`); docs/attribution.md ("Inferred gaps") tells the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from traceview.analyzers.intervals import Intervals
from traceview.analyzers.pauses import gap_pauses
from traceview.arrays import at_rows, membership, order_by_start_then_longest
from traceview.results import AttributionOptions, Steps
from traceview.schema import Kind
from traceview.table import Table

# Calibration of the inferred-gap rule (no explicit --dispatch-gap-us). Gaps on the step's thread
# between framework events form one population of framework glue (Python op wrappers, Keras, the
# tape: median 8–25 µs, 99th percentile 0.5–0.7 ms, largest ~2 ms on the TF eager sample
# captures, with no jump in between); user code and garbage collection add a second population of
# longer stretches. The threshold is the top of the lower population: the gap below the largest
# jump (≥ GAP_BREAK× between consecutive sorted gap sizes, the larger one ≥ GAP_MIN_NS); with no
# such jump, GAP_MAX_NS. Always within [GAP_MIN_NS, GAP_MAX_NS].
GAP_BREAK = 3.0
GAP_MIN_NS = 100_000
GAP_MAX_NS = 2_000_000
# Step rules (analyzers/steps.py) whose windows run on past the events that found them: a window's
# host edges are the step's edges on its thread.
_LOOP_RULES = ("repeated-top-level", "optimizer-updates", "repeated-sequence")


def calibrated_gap_threshold(length: np.ndarray) -> tuple[int, str]:
    """The gap threshold from the gap sizes themselves (see GAP_BREAK), and the rule in words."""
    sizes = np.sort(length.astype(np.int64))
    if len(sizes) >= 2:
        ratio = sizes[1:] / np.maximum(sizes[:-1], 1)
        candidate = (ratio >= GAP_BREAK) & (sizes[1:] >= GAP_MIN_NS)
        if candidate.any():
            scored = np.where(candidate, ratio, 0.0)
            i = len(scored) - 1 - int(np.argmax(scored[::-1]))  # the largest jump; on a tie, the higher one
            threshold = int(min(max(sizes[i], GAP_MIN_NS), GAP_MAX_NS))
            return threshold, (f"calibrated: the largest jump in the step thread's gap sizes ({ratio[i]:.1f}× "
                               f"from {sizes[i] / 1e3:.0f} to {sizes[i + 1] / 1e3:.0f} µs over {len(sizes)} gaps); "
                               f"gaps up to {threshold / 1e3:.0f} µs are framework glue")
    return GAP_MAX_NS, (f"calibrated: no jump ≥ {GAP_BREAK:.0f}× in the step thread's {len(sizes)} gap sizes, so the "
                        f"ceiling {GAP_MAX_NS / 1e3:.0f} µs: gaps up to it are framework glue")


def driver_rows(ev: Table, steps: Steps) -> np.ndarray:
    """The host events on the step's thread (the driver track)."""
    return (ev["device"] < 0) & on_track(ev, steps.driver_track)


def on_track(ev: Table, track: str) -> np.ndarray:
    """The events on ``track``."""
    return membership(ev["track"])([track])


@dataclass(frozen=True)
class UnrecordedGaps:
    """The step thread's unrecorded gaps (starts, ends, step positions) and the pauses taken off
    them (starts, ends): whole, with no pause taken, as :func:`unrecorded_gaps` finds them; each
    less its pause once :func:`gaps_less_pauses` took them off."""

    start: np.ndarray
    end: np.ndarray
    step: np.ndarray
    pauses: Intervals
    between_events: bool = True  # False: fewer than two events (or marker edges) on the thread


def unrecorded_gaps(ev: Table, steps: Steps) -> UnrecordedGaps:
    """Unrecorded gaps on the step's thread inside a step: between consecutive top-level events
    (events whose parent is the step marker or nothing) and between the marker's edges (or, for
    steps found without markers, the window's host edges) and its first / last event; whole, and
    with the empty ones between abutting events, which the pauses align the steps' gaps by
    (:func:`gaps_less_pauses` takes the pauses, and the empty gaps, off)."""
    empty = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    ts_all, dur_all = ev["ts"], ev["dur"]
    parent = ev["parent"]
    step_all = ev["step"]
    on_driver = driver_rows(ev, steps)
    is_marker = membership(ev["kind"])([Kind.STEP.value])
    under_marker = (parent < 0) | at_rows(is_marker, parent)  # no parent, or the step marker
    markers = np.flatnonzero(on_driver & is_marker)
    # A range around the step markers (the Python frames of the training loop, with Python events;
    # a user range around the loop) is no event of a step: it would cover every gap in them.
    top = np.flatnonzero(on_driver & ~is_marker & under_marker & ~_around(markers, parent))
    # Step-marker edges enter as zero-length points: [marker start] and [marker end]. (Ends at
    # these rows only: a column of every event's end would be the largest array here.)
    top_ts, marker_ts = ts_all[top], ts_all[markers]
    marker_end = marker_ts + dur_all[markers]
    ts = np.concatenate((top_ts, marker_ts, marker_end))
    end = np.concatenate((top_ts + dur_all[top], marker_ts, marker_end))
    del top_ts
    step = np.concatenate((step_all[top], step_all[markers], step_all[markers]))
    if len(ts) < 2:
        return UnrecordedGaps(empty[0], empty[1], np.array([], dtype=np.int64), empty, between_events=False)
    order = order_by_start_then_longest(ts, end)  # by start, the later end first (np.lexsort((-end, ts)))
    if order is not None:
        ts, end, step = ts[order], end[order], step[order]
    prev_end = np.maximum.accumulate(end)  # a gap starts after everything before it has ended
    in_step = (step[1:] == step[:-1]) & (step[1:] >= 0)
    gap_start = prev_end[:-1][in_step]
    gap_end = np.maximum(ts[1:][in_step], gap_start)  # (0: the events abut or overlap)
    gap_step = step[1:][in_step]
    # A step with no event of its own on the thread (its marker only: work no profiler records, a
    # numpy loop) has no gaps between events to infer from: its time stays idle (unrecorded).
    top_step = step_all[top]
    held = np.bincount(top_step[top_step >= 0], minlength=len(steps.table))
    marker_only = held[: len(steps.table)] == 0
    if marker_only.any() and len(gap_step):
        keep = ~marker_only[np.clip(gap_step, 0, len(marker_only) - 1)]
        gap_start, gap_end, gap_step = gap_start[keep], gap_end[keep], gap_step[keep]
    if steps.rule in _LOOP_RULES and len(steps.table):
        gap_start, gap_end, gap_step = _window_edge_gaps(steps, ts, end, step, gap_start, gap_end, gap_step)
    return UnrecordedGaps(gap_start, gap_end, gap_step, empty)


def gaps_less_pauses(gaps: UnrecordedGaps, taken: np.ndarray, shape_of_step: dict[int, int]) -> UnrecordedGaps:
    """The whole ``gaps`` less what was ``taken`` off each one's end already (a wait for the
    interpreter lock, ns per gap) and then less what is left of its pause (analyzers/pauses.py,
    told on the whole gap; steps compared by ``shape_of_step``: step position → shape group),
    each taken off its end; the pauses kept beside them."""
    pause = np.maximum(gap_pauses(gaps.step, gaps.end - gaps.start, shape_of_step) - taken, 0)
    gap_end = gaps.end - taken
    paused = pause > 0
    pauses = (gap_end[paused] - pause[paused], gap_end[paused])
    gap_end = gap_end - pause
    ok = gap_end > gaps.start
    return replace(gaps, start=gaps.start[ok], end=gap_end[ok], step=gaps.step[ok], pauses=pauses)


def split_gaps(gaps: UnrecordedGaps, options: AttributionOptions) -> tuple[Intervals, Intervals, int, str]:
    """The gaps split at the threshold (calibrated on their sizes unless ``options`` fix it) into
    short (framework glue) and long (user code): (short, long, threshold ns, its rule)."""
    empty = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    if not gaps.between_events:
        return empty, empty, 0, "no gaps on the step's thread"
    gap_start, gap_end = gaps.start, gaps.end
    length = gap_end - gap_start
    if options.dispatch_gap_ns == 0:
        return empty, empty, 0, "off (--dispatch-gap-us 0): unrecorded gaps stay idle"
    if options.dispatch_gap_ns is not None:
        threshold = int(options.dispatch_gap_ns)
        rule = f"fixed at {threshold / 1e3:.0f} µs (--dispatch-gap-us)"
    elif len(length):
        threshold, rule = calibrated_gap_threshold(length)
    else:
        threshold, rule = GAP_MIN_NS, "no gaps on the step's thread"
    short = length <= threshold
    return (gap_start[short], gap_end[short]), (gap_start[~short], gap_end[~short]), threshold, rule


def _around(rows: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per table row: whether it is an ancestor of one of ``rows`` (a walk up their parents, one
    level of nesting at a time)."""
    ancestor = np.zeros(len(parent), dtype=bool)
    up = parent[rows]
    while len(up):
        up = np.unique(up[up >= 0])
        up = up[~ancestor[up]]
        ancestor[up] = True
        up = parent[up]
    return ancestor


def _window_edge_gaps(steps: Steps, ts: np.ndarray, end: np.ndarray, step: np.ndarray, gap_start: np.ndarray,
                      gap_end: np.ndarray, gap_step: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gaps with, for steps found without markers, the stretches between each window's host
    edges and the step's first / last event on its thread added (what the thread does after its
    last recorded event until the next run of the loop's call — a Keras callback after fit's step
    call — or from the last optimizer update to the step's first event): gaps of the step, not
    idle, as between a marker's edges and its events. Returned in time order, so each step's gaps
    stay together and in order."""
    start, host_end = steps.table["start"], steps.table["host_end"]
    n = len(start)
    lowest, highest = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    first_start = np.full(n, highest, dtype=np.int64)
    last_end = np.full(n, lowest, dtype=np.int64)
    inside = (step >= 0) & (step < n)
    np.minimum.at(first_start, step[inside], ts[inside])
    np.maximum.at(last_end, step[inside], end[inside])
    leading = (first_start < highest) & (first_start > start)
    trailing = (last_end > lowest) & (host_end > last_end)
    gap_start = np.concatenate((gap_start, start[leading], last_end[trailing]))
    gap_end = np.concatenate((gap_end, first_start[leading], host_end[trailing]))
    gap_step = np.concatenate((gap_step, np.flatnonzero(leading).astype(gap_step.dtype),
                               np.flatnonzero(trailing).astype(gap_step.dtype)))
    order = np.argsort(gap_start, kind="stable")  # (sorted runs: a merge)
    return gap_start[order], gap_end[order], gap_step[order]
