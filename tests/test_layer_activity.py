"""layer_activity's bit masks agree with covered() on the segments cut at every interval edge."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.analyzers.attribution import _first_layer
from traceview.analyzers.intervals import covered, layer_activity, merged_runs, window_segments, windows_at

interval = st.tuples(st.integers(0, 40), st.integers(-3, 12))
layer = st.lists(interval, max_size=12)


def _arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    return starts, starts + np.array([d for _, d in pairs], dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(st.lists(layer, min_size=1, max_size=6), st.lists(st.integers(0, 8), min_size=0, max_size=4))
def test_masks_match_covered(layers: list[list[tuple[int, int]]], window_gaps: list[int]) -> None:
    intervals = [_arrays(pairs) for pairs in layers]
    # Non-overlapping windows, sorted by start (as the steps table is).
    edges = np.cumsum(np.array([0, *window_gaps], dtype=np.int64) + 5)
    window_start, window_end = edges[:-1], edges[:-1] + 4
    fine_points, fine_window, fine_inside = window_segments(window_start, window_end, intervals)
    points, active = layer_activity(window_start, window_end, intervals)
    assert len(active) == max(len(points) - 1, 0)
    assert set(points.tolist()) <= set(fine_points.tolist())
    window, inside = windows_at(points, window_start, window_end)
    expected_window = np.searchsorted(window_start, points[:-1], side="right") - 1
    assert np.array_equal(window, expected_window)
    if len(window_start):
        assert np.array_equal(inside, (window >= 0) & (points[:-1] < window_end[np.maximum(window, 0)]))
    else:
        assert not inside.any()
    if len(fine_points) < 2:
        return
    # The coarse segment holding each fine one.
    holder = np.searchsorted(points, fine_points[:-1], side="right") - 1
    for i, (starts, ends) in enumerate(intervals):
        expected = covered(fine_points, starts, ends)
        inside_coarse = (holder >= 0) & (holder < len(active))
        bit = np.zeros(len(expected), dtype=bool)
        bit[inside_coarse] = (active[holder[inside_coarse]] >> np.uint32(i)) & 1 == 1
        assert np.array_equal(bit, expected)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=5, max_size=5), min_size=1, max_size=30),
       st.sets(st.integers(0, 29), max_size=30))
def test_first_layer_is_the_first_active_candidate(columns: list[list[bool]], chosen: set[int]) -> None:
    matrix = np.array(columns, dtype=bool)  # layers × segments
    masks = (matrix.astype(np.uint64) << np.arange(len(matrix), dtype=np.uint64)[:, None]).sum(axis=0)
    candidates = np.array(sorted(i for i in chosen if i < len(matrix)), dtype=np.int64)
    for dtype in (np.uint32, np.uint64):
        got = _first_layer(masks.astype(dtype), candidates)
        for segment in range(matrix.shape[1]):
            active = [i for i in candidates.tolist() if matrix[i, segment]]
            assert got[segment] == (active[0] if active else -1)


def test_merged_runs_are_apart_and_drop_empty_intervals() -> None:
    starts = np.array([5, 0, 2, 9, 12, 12], dtype=np.int64)
    ends = np.array([7, 2, 3, 9, 15, 11], dtype=np.int64)
    run_start, run_end = merged_runs(starts, ends)
    assert run_start.tolist() == [0, 5, 12]
    assert run_end.tolist() == [3, 7, 15]


@settings(max_examples=300, deadline=None)
@given(layer, st.booleans())
def test_merged_runs_are_the_union(pairs: list[tuple[int, int]], in_order: bool) -> None:
    """In order or not (the two ways merged_runs takes), the runs are the union of the non-empty
    intervals, apart: checked against a walk in (start, end) order."""
    if in_order:
        pairs = sorted(pairs)
    starts, ends = _arrays(pairs)
    expected: list[list[int]] = []
    for start, end in sorted((s, e) for s, e in zip(starts.tolist(), ends.tolist()) if e > s):
        if expected and start <= expected[-1][1]:
            expected[-1][1] = max(expected[-1][1], end)
        else:
            expected.append([start, end])
    run_start, run_end = merged_runs(starts, ends)
    assert [[s, e] for s, e in zip(run_start.tolist(), run_end.tolist())] == expected


def test_highest_bits() -> None:
    masks = np.array([1 << 31, 1 << 63, 0, (1 << 63) | (1 << 40)], dtype=np.uint64)
    assert _first_layer(masks, np.array([31, 40, 63])).tolist() == [31, 63, -1, 40]


@settings(max_examples=600, deadline=None)
@given(st.lists(layer, min_size=0, max_size=40), st.lists(st.integers(0, 8), min_size=0, max_size=4), st.booleans(),
       st.booleans())
def test_compiled_merge_is_the_sorted_edges(layers: list[list[tuple[int, int]]], window_gaps: list[int],
                                            shuffled_windows: bool, in_halves: bool) -> None:
    """The compiled merge of the edge streams (traceview/_passes.c) gives the points and masks the
    array passes give, over 32 layers (64-bit masks) too, and windows out of order fall back; so
    does the merge of the two halves of the time on two threads (above intervals.SPLIT_EDGES)."""
    import pytest

    from traceview import compiled
    from traceview.analyzers import intervals as intervals_module

    if compiled.passes is None:
        pytest.skip("the compiled passes are not built")
    intervals = [_arrays(pairs) for pairs in layers]
    edges = np.cumsum(np.array([0, *window_gaps], dtype=np.int64) + 5)
    window_start, window_end = edges[:-1], edges[:-1] + 4
    if shuffled_windows:
        window_start, window_end = window_start[::-1].copy(), window_end[::-1].copy()
    with pytest.MonkeyPatch.context() as patch:
        if in_halves:
            patch.setattr(intervals_module, "SPLIT_EDGES", 0)
        mine = layer_activity(window_start, window_end, intervals)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "passes", None)
        theirs = layer_activity(window_start, window_end, intervals)
    assert mine[0].dtype == theirs[0].dtype and mine[1].dtype == theirs[1].dtype
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])
