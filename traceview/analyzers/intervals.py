"""Interval algebra over the timeline's integer nanoseconds: unions of intervals as disjoint runs,
the elementary segments that windows cut at every edge, and which intervals are active in each.

The attribution (analyzers/attribution.py) and the communication overlap take their sums from
these; each hot pass has a compiled twin in traceview/_passes.c (through traceview.compiled) that
gives the same arrays, used where the extension is built.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from traceview import compiled
from traceview.arrays import at_rows, unique_sorted

Intervals = tuple[np.ndarray, np.ndarray]  # (starts, ends)


def layer_activity(
    window_start: np.ndarray, window_end: np.ndarray, intervals: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The cut points of the windows and the layers' intervals, and which layers are active in each
    elementary segment [points[i], points[i + 1]), as a bit mask per segment (bit i: layer i;
    ``len(points) - 1`` masks).

    The points are the windows' edges and the edges of each layer's merged runs: a segment between
    two of them has one set of active layers, which is all that attribution reads (cutting also at
    the edges inside a run would split segments without changing any sum). Each run contributes
    +2^i at its start and -2^i at its end; the runs of one layer are disjoint, so a running sum in
    sorted order is the bit mask. Every layer's edges come sorted: compiled, the streams are
    merged through a heap of their heads in one pass (from SPLIT_EDGES edges, two: the edges
    before a pivot time and those from it, on two threads); otherwise a stable argsort (timsort) of the
    concatenation merges them in a few passes. No per-layer search over the points and no
    layers × segments matrix either way.
    """
    if len(intervals) > 64:
        raise ValueError(f"{len(intervals)} layers do not fit a 64-bit mask")
    mask_type = np.uint32 if len(intervals) <= 32 else np.uint64
    layer_edges = _run_edges(intervals)
    if compiled.passes is not None:
        found = _layer_activity_compiled(window_start, window_end, layer_edges, mask_type)
        if found is not None:
            return found
    edges: list[np.ndarray] = [window_start, window_end]
    increments: list[np.ndarray] = [np.zeros(len(window_start) + len(window_end), dtype=mask_type)]
    for i, edge in layer_edges:
        increment = np.empty(len(edge), dtype=mask_type)
        increment[0::2] = 1 << i
        increment[1::2] = (1 << np.iinfo(mask_type).bits) - (1 << i)  # -2^i, modulo the mask width
        edges.append(edge)
        increments.append(increment)
    position = np.concatenate(edges).astype(np.int64, copy=False)
    if not len(position):
        return position, np.zeros(0, dtype=mask_type)
    # Stable for speed, not for the result (the mask after all edges at a point is the same in any
    # order): timsort merges presorted runs in a few linear passes where quicksort starts over.
    order = np.argsort(position, kind="stable")
    position = position[order]
    active = np.cumsum(np.concatenate(increments)[order], dtype=mask_type)
    del order
    # The mask after the last edge at each point is the one of the segment that starts there.
    last_at_point = np.empty(len(position), dtype=bool)
    np.not_equal(position[1:], position[:-1], out=last_at_point[:-1])
    last_at_point[-1] = True
    points = position[last_at_point]
    return points, active[last_at_point][:-1]  # after the last point: no segment (nothing is active)


def _run_edges(intervals: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[int, np.ndarray]]:
    """Each layer's merged runs as one sorted stream of edges (start, end, start, end …), with the
    layer's index; layers with no run are left out."""
    out = []
    for i, (starts, ends) in enumerate(intervals):
        run_start, run_end = merged_runs(starts, ends)
        if len(run_start):
            edge = np.empty(2 * len(run_start), dtype=np.int64)
            edge[0::2], edge[1::2] = run_start, run_end
            out.append((i, edge))
    return out


def _layer_activity_compiled(window_start: np.ndarray, window_end: np.ndarray,
                             layer_edges: list[tuple[int, np.ndarray]], mask_type: type
                             ) -> tuple[np.ndarray, np.ndarray] | None:
    """layer_activity by a compiled merge of the sorted edge streams (traceview/_passes.c): the
    windows' starts and ends, and each layer's runs; None where a stream is out of order (then
    the edges are sorted together). From SPLIT_EDGES edges on, the edges before and from a pivot
    time are merged on two threads (the pass lets go of the interpreter lock)."""
    full = 1 << 64
    streams = [np.ascontiguousarray(window_start, dtype=np.int64), np.ascontiguousarray(window_end, dtype=np.int64)]
    increments = [(0, 0), (0, 0)]
    for i, edge in layer_edges:
        streams.append(edge)
        increments.append((1 << i, full - (1 << i)))  # +2^i at a run's start, -2^i at its end (mod 2^64)
    total = sum(len(edge) for edge in streams)
    # Room for a point at every edge; the merges write their points and the mask after each here.
    points, masks = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.uint64)
    if total < SPLIT_EDGES or not total:
        written = compiled.passes.merge_edges(streams, increments, points, masks)
        if written < 0:
            return None
        return points[:written].copy(), masks[:max(written - 1, 0)].astype(mask_type)
    halves = _merge_in_halves(streams, increments, points, masks)
    if halves is None:
        return None
    early_written, late, late_written = halves
    # The points of both halves, once, and the mask after each but the last, in the masks' type.
    out_masks = np.empty(max(early_written + late_written - 1, 0), dtype=mask_type)
    head = min(early_written, len(out_masks))
    np.copyto(out_masks[:head], masks[:head], casting="unsafe")
    np.copyto(out_masks[head:], masks[late:late + len(out_masks) - head], casting="unsafe")
    return np.concatenate([points[:early_written], points[late:late + late_written]]), out_masks


# From this many edges layer_activity merges the two halves of the time on two threads (the 104 MB
# XPlane's ~10 M edges took 0.12 s in one merge; a thread's start, ~0.1 ms).
SPLIT_EDGES = 1_000_000


def _merge_in_halves(streams: list[np.ndarray], increments: list[tuple[int, int]], points: np.ndarray,
                     masks: np.ndarray) -> tuple[int, int, int] | None:
    """The compiled merge as two, on two threads, of the edges before a pivot time (the middle
    edge of the longest stream) and of those from it: no point lies in both. Each writes into its
    own part of ``points`` and ``masks`` (room for every edge), the earlier half from the start:
    returns the points the earlier half wrote, where the later half's begin and how many it
    wrote; None where a stream is out of order. A stream cut inside a run (after an odd number of its edges) starts the later half at
    a run's end: there its increments change places and its bit is added to every mask of the half."""
    full = 1 << 64
    longest = max(streams, key=len)
    pivot = longest[len(longest) // 2]
    cut = [int(np.searchsorted(edge, pivot, side="left")) for edge in streams]
    if any(0 < k < len(edge) and edge[k - 1] > edge[k] for edge, k in zip(streams, cut)):
        return None  # (out of order across the cut; each half's own order the merges check)
    later_increments = [(end, start) if k % 2 else (start, end) for (start, end), k in zip(increments, cut)]
    carried = sum(start for (start, _), k in zip(increments, cut) if k % 2) % full
    late = sum(cut)  # (the earlier half's edges: its room)
    merge = compiled.passes.merge_edges
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="traceview-edges") as helper:
        second = helper.submit(merge, [edge[k:] for edge, k in zip(streams, cut)], later_increments,
                               points[late:], masks[late:])
        early_written = merge([edge[:k] for edge, k in zip(streams, cut)], increments, points[:late], masks[:late])
        late_written = second.result()
    if early_written < 0 or late_written < 0:
        return None
    np.add(masks[late:late + late_written], np.uint64(carried), out=masks[late:late + late_written])  # (mod 2^64)
    return early_written, late, late_written


def merged_runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [starts, ends) as disjoint runs, sorted, apart (a run ends strictly
    before the next begins); empty intervals are left out. Events nest and abut, so there are far
    fewer runs than intervals."""
    if compiled.passes is not None:
        return _merged_runs_compiled(starts, ends)
    keep = ends > starts
    if not keep.all():
        starts, ends = starts[keep], ends[keep]
    if not len(starts):
        return starts, ends
    if len(starts) > 1 and (starts[1:] < starts[:-1]).any():
        # Out of order: the starts and the ends are sorted each on its own, which is all the union
        # needs (no gather of one array by the other's order). With both sorted, the i-th start
        # begins a run exactly when the i smallest ends all lie before it: an interval ending
        # before a start began before it (none is empty), so those ends are those of the i
        # intervals that start first, and the largest of them, the (i - 1)-th end, is where the
        # run before it ends.
        starts, reach = np.sort(starts), np.sort(ends)
    else:
        reach = np.maximum.accumulate(ends)
    # A run begins at a start beyond everything before it; it ends at the reach just before the next.
    begins = np.empty(len(starts), dtype=bool)
    begins[0] = True
    np.greater(starts[1:], reach[:-1], out=begins[1:])
    first = np.flatnonzero(begins)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = len(starts) - 1
    return starts[first], reach[last]


def _merged_runs_compiled(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """merged_runs in one compiled pass over intervals in start order (traceview/_passes.c); out of
    order, over the starts and the ends each sorted (the union is the same: see merged_runs)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    run_starts, run_ends = np.empty(len(starts), dtype=np.int64), np.empty(len(starts), dtype=np.int64)
    runs = compiled.passes.merged_runs(starts, ends, run_starts, run_ends)
    if runs < 0:
        keep = ends > starts
        kept = int(np.count_nonzero(keep))
        runs = compiled.passes.merged_runs(np.sort(starts[keep]), np.sort(ends[keep]), run_starts[:kept],
                                           run_ends[:kept])
    return run_starts[:runs].copy(), run_ends[:runs].copy()  # (copies: the buffers held room for every interval)


def windows_at(points: np.ndarray, window_start: np.ndarray, window_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each segment's window position (the last window starting at or before it) and whether the
    segment lies inside it, for windows sorted by start whose edges are among ``points``."""
    n_segments = max(len(points) - 1, 0)
    if not len(window_start) or not n_segments:
        return np.full(n_segments, -1, dtype=np.int64), np.zeros(n_segments, dtype=bool)
    opened = np.zeros(n_segments + 1, dtype=np.int64)
    np.add.at(opened, np.searchsorted(points, window_start), 1)
    window = np.cumsum(opened[:-1]) - 1
    inside = (window >= 0) & (points[:-1] < at_rows(window_end, window))
    return window, inside


def window_segments(
    starts: np.ndarray, ends: np.ndarray, intervals: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut non-overlapping windows [starts, ends) at every interval boundary.

    Returns the cut points (elementary segment i is [points[i], points[i + 1])), each segment's
    window position, and whether the segment lies inside that window.
    """
    bounds = [starts, ends]
    for s, e in intervals:
        bounds.extend((s, e))
    points = unique_sorted(np.concatenate(bounds).astype(np.int64))
    seg_start = points[:-1]
    window = np.searchsorted(starts, seg_start, side="right") - 1
    inside = (window >= 0) & (seg_start < at_rows(ends, window)) if len(starts) else np.zeros(
        len(seg_start), dtype=bool)
    return points, window, inside


def int_bincount(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Sum of integer weights per index, in int64 (no float rounding, whatever the magnitude)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, index.astype(np.int64), weights.astype(np.int64))
    return out


def overlap_with_runs(run_start: np.ndarray, run_end: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """How long each interval [start, end) overlaps the runs (disjoint, sorted by start): the runs'
    length before its end less that before its start, read off the runs' cumulative length."""
    covered_before = np.concatenate([[0], np.cumsum(run_end - run_start)])

    def covered_until(x: np.ndarray) -> np.ndarray:  # the runs' length before each moment x
        k = np.searchsorted(run_start, x, side="right")
        return covered_before[k] - np.maximum(run_end[np.maximum(k - 1, 0)] - x, 0) * (k > 0)

    return covered_until(end) - covered_until(start)


def covered(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each elementary segment [points[i], points[i+1]) lies inside any interval.

    The intervals are first merged into disjoint runs (:func:`merged_runs`); each run then marks its
    first segment +1 and the segment after it -1, and a running sum of bytes says which segments
    are inside."""
    inside = np.zeros(len(points), dtype=np.int8)
    run_start, run_end = merged_runs(starts, ends)
    if not len(run_start):
        return inside[:-1].view(bool)
    inside[np.searchsorted(points, run_start)] = 1
    inside[np.searchsorted(points, run_end)] = -1  # (runs are apart: no index is both)
    return np.cumsum(inside, dtype=np.int8)[:-1].view(bool)


# A layer's scope as the compiled selection takes it (traceview/_passes.c selected_runs).
_SCOPE_CODE = {"driver": 1, "others": 2}


def selected_runs(start: np.ndarray, end: np.ndarray, role: np.ndarray, driver: np.ndarray, table: np.ndarray,
                   scope: str, selected: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The merged runs of the pieces a layer selects (``selected`` of them), in one compiled pass
    where those pieces come in start order (the step thread's, from normalize.own_pieces); None
    where the pass is not built or the pieces are out of order (then they are gathered, and
    merged_runs sorts them). The union is the layer's, either way."""
    if compiled.passes is None or not selected:
        return None
    run_starts, run_ends = np.empty(selected, dtype=np.int64), np.empty(selected, dtype=np.int64)
    runs = compiled.passes.selected_runs(start, end, role, driver.view(np.uint8), table.view(np.uint8),
                                         _SCOPE_CODE.get(scope, 0), run_starts, run_ends)
    if runs < 0:
        return None
    return run_starts[:runs].copy(), run_ends[:runs].copy()
