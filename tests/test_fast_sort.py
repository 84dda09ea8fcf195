"""order_by_start_then_longest gives exactly the permutation np.lexsort((-dur, ts)) gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.arrays import order_by_start_then_longest
from traceview.schema import build_events


def _as_permutation(order: np.ndarray | None, n: int) -> np.ndarray:
    return np.arange(n) if order is None else order


def _check(ts: np.ndarray, dur: np.ndarray) -> None:
    expected = np.lexsort((-dur, ts))
    got = order_by_start_then_longest(ts, dur)
    assert np.array_equal(_as_permutation(got, len(ts)), expected)
    if got is not None:
        assert got.dtype == expected.dtype
        assert not np.array_equal(got, np.arange(len(ts))), "the order in place is answered with None"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4)), max_size=60))
def test_equals_lexsort_with_many_ties(rows: list[tuple[int, int]]) -> None:
    ts = np.array([r[0] for r in rows], dtype=np.int64)
    dur = np.array([r[1] for r in rows], dtype=np.int64)
    _check(ts, dur)
    order = np.lexsort((-dur, ts))
    _check(ts[order], dur[order])  # sorted input
    _check(ts[order][::-1].copy(), dur[order][::-1].copy())  # reversed input


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(-(2**63), 2**63 - 1)), max_size=40))
def test_equals_lexsort_on_extreme_values(rows: list[tuple[int, int]]) -> None:
    ts = np.array([r[0] for r in rows], dtype=np.int64)
    dur = np.array([r[1] for r in rows], dtype=np.int64)
    _check(ts, dur)
    _check(np.zeros(len(ts), dtype=np.int64), dur)  # every row at one start: -dur decides alone


@pytest.mark.parametrize("seed", range(5))
def test_equals_lexsort_on_large_arrays(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200_000
    ts = rng.integers(0, n // 4, n)  # about four rows per start
    dur = rng.integers(0, 5, n)
    _check(ts, dur)
    order = np.lexsort((-dur, ts))
    sorted_ts, sorted_dur = ts[order], dur[order]
    _check(sorted_ts, sorted_dur)
    _check(sorted_ts[::-1].copy(), sorted_dur[::-1].copy())
    # Sorted by start, but the rows at one start in the wrong order.
    _check(sorted_ts, sorted_dur[::-1].copy())
    # Interleaved presorted runs (threads written one after another).
    runs = np.concatenate([np.sort(rng.integers(0, n, n // 8)) for _ in range(8)])
    _check(runs, rng.integers(0, 3, len(runs)))


def test_sorted_rows_need_no_permutation() -> None:
    assert order_by_start_then_longest(np.array([1, 2, 2, 5]), np.array([0, 7, 3, 1])) is None
    assert order_by_start_then_longest(np.array([3, 3, 3]), np.array([2, 2, 2])) is None


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single_row(n: int) -> None:
    ts = np.arange(n, dtype=np.int64)
    assert order_by_start_then_longest(ts, ts.copy()) is None
    _check(ts, ts.copy())


def test_build_events_sorts_like_lexsort() -> None:
    rng = np.random.default_rng(7)
    ts = rng.integers(0, 50, 500)
    dur = rng.integers(0, 4, 500)
    order = np.lexsort((-dur, ts))
    frame = build_events({"ts": ts.copy(), "dur": dur.copy(), "bytes": np.arange(500)})
    assert np.array_equal(frame["bytes"].to_numpy(), order)
    assert np.array_equal(frame["ts"].to_numpy(), ts[order])
