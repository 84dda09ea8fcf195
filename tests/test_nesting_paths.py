"""nest_tracks nests a lone host track in place exactly as it nests a track among others, and
the compiled passes (traceview/_passes.c) nest, cut own pieces and sum own time exactly as the
array passes do."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.schema import event_table
from traceview import compiled, normalize
from traceview.arrays import Nesting, order_by_start_then_longest
from traceview.normalize import nest_tracks
from traceview.loader import load
from tests.conftest import SAMPLES

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"

events = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12), st.booleans()), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(events)
def test_one_track_alone_and_among_others(rows: list[tuple[int, int, bool]]) -> None:
    ts = np.array([r[0] for r in rows], dtype=np.int64)
    dur = np.array([r[1] for r in rows], dtype=np.int64)
    loose = np.array([r[2] for r in rows], dtype=bool)
    order = order_by_start_then_longest(ts, dur)
    if order is not None:
        ts, dur, loose = ts[order], dur[order], loose[order]
    end = ts + dur
    n = len(ts)
    alone = nest_tracks(np.zeros(n, dtype=np.int64), ts, end, np.ones(n, dtype=bool), loose=loose)
    # The same events after a device row on a second track: the general path, which groups by track.
    track = np.concatenate(([1], np.zeros(n, dtype=np.int64)))
    host = np.concatenate(([False], np.ones(n, dtype=bool)))
    parent, depth, overlaps = nest_tracks(track, np.concatenate(([0], ts)), np.concatenate(([0], end)), host,
                                          loose=np.concatenate(([False], loose)))
    assert parent[0] == -1 and depth[0] == -1
    assert np.array_equal(alone[0], np.where(parent[1:] >= 0, parent[1:] - 1, -1))
    assert np.array_equal(alone[1], depth[1:])
    assert alone[2] == overlaps
    assert alone[0].dtype == parent.dtype and alone[1].dtype == depth.dtype


@settings(max_examples=300, deadline=None)
@given(events, st.integers(0, 2**16))
def test_own_pieces_are_the_time_no_child_covers(rows: list[tuple[int, int, bool]], pick: int) -> None:
    from traceview.normalize import own_pieces

    ts = np.array([r[0] for r in rows], dtype=np.int64)
    dur = np.array([r[1] for r in rows], dtype=np.int64)
    order = order_by_start_then_longest(ts, dur)
    if order is not None:
        ts, dur = ts[order], dur[order]
    n = len(ts)
    parent, _, _ = nest_tracks(np.zeros(n, dtype=np.int64), ts, ts + dur, np.ones(n, dtype=bool),
                               loose=np.zeros(n, dtype=bool))
    events = pd.DataFrame({"ts": ts, "dur": dur, "parent": parent, "device": np.full(n, -1, dtype=np.int64)})
    selected = np.array([(pick >> (i % 16)) & 1 == 1 for i in range(n)], dtype=bool)
    starts, ends, piece_row = own_pieces(event_table(events), selected)
    assert (ends > starts).all()  # no empty piece, whichever branch
    assert selected[piece_row].all()
    for row in np.flatnonzero(selected):  # each row's own time, counted nanosecond by nanosecond
        covered = np.zeros(int(dur[row]), dtype=bool)
        for child in np.flatnonzero(parent == row):
            covered[ts[child] - ts[row]: ts[child] + dur[child] - ts[row]] = True
        mine = piece_row == row
        assert int((ends[mine] - starts[mine]).sum()) == int((~covered).sum())


# The compiled walk (traceview/_passes.c) against the array passes it stands in for.
tracks = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 12), st.booleans(), st.integers(-1, 2), st.booleans(),
                            st.booleans()), min_size=1, max_size=50)


def _rows(rows: list[tuple[int, int, bool, int, bool, bool]]) -> tuple[np.ndarray, ...]:
    """(ts, end, loose, track, host, selected), in table order."""
    columns = [np.array([r[i] for r in rows]) for i in range(6)]
    ts, dur = columns[0].astype(np.int64), columns[1].astype(np.int64)
    order = order_by_start_then_longest(ts, dur)
    if order is not None:
        columns = [c[order] for c in columns]
        ts, dur = ts[order], dur[order]
    return (ts, ts + dur, columns[2].astype(bool), columns[3].astype(np.int64), columns[4].astype(bool),
            columns[5].astype(bool))


def _array_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "passes", None)


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=400, deadline=None)
@given(tracks, st.booleans())
def test_compiled_nesting_is_the_array_passes(rows: list[tuple[int, int, bool, int, bool, bool]],
                                             with_loose: bool) -> None:
    ts, end, loose, track, host, _ = _rows(rows)
    compiled = nest_tracks(track, ts, end, host, loose=loose if with_loose else None)
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        reference = nest_tracks(track, ts, end, host, loose=loose if with_loose else None)
    assert np.array_equal(compiled[0], reference[0]) and np.array_equal(compiled[1], reference[1])
    assert compiled[2] == reference[2]
    assert compiled[0].dtype == reference[0].dtype and compiled[1].dtype == reference[1].dtype


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=400, deadline=None)
@given(tracks)
def test_compiled_own_pieces_are_the_array_passes(rows: list[tuple[int, int, bool, int, bool, bool]]) -> None:
    ts, end, loose, track, host, selected = _rows(rows)
    parent, _, overlaps = nest_tracks(track, ts, end, host, loose=loose)
    events = pd.DataFrame({"ts": ts, "dur": end - ts, "parent": parent, "device": np.where(host, -1, 0),
                           "track": pd.Categorical.from_codes(track, categories=["a", "b", "c"])})
    compiled = normalize.own_pieces(event_table(events), selected)
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        reference = normalize.own_pieces(event_table(events), selected)
    assert [a.dtype for a in compiled] == [a.dtype for a in reference]
    assert _as_set(*compiled) == _as_set(*reference)  # the same pieces
    for starts, _, piece_row in (compiled, reference):  # each row's pieces in their time order
        by_row = np.lexsort((np.arange(len(piece_row)), piece_row))
        same_row = piece_row[by_row][1:] == piece_row[by_row][:-1]
        assert (starts[by_row][1:][same_row] > starts[by_row][:-1][same_row]).all()
    if not overlaps and not loose.any():  # events that nest: each host track's compiled pieces in time order
        starts, _, piece_row = compiled
        for code in np.unique(track):
            on_track = starts[(track[piece_row] == code) & host[piece_row]]
            assert (on_track[1:] >= on_track[:-1]).all()


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(-3, 12)), max_size=40), st.booleans())
def test_compiled_merged_runs_are_the_array_passes(intervals: list[tuple[int, int]], in_order: bool) -> None:
    from traceview.analyzers.intervals import merged_runs

    if in_order:
        intervals = sorted(intervals)
    starts = np.array([s for s, _ in intervals], dtype=np.int64)
    ends = starts + np.array([d for _, d in intervals], dtype=np.int64)  # (some empty, some negative)
    mine = merged_runs(starts, ends)
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        theirs = merged_runs(starts, ends)
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(mine, theirs))


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(-2, 9), st.integers(-1, 4), st.booleans()), max_size=40),
       st.lists(st.booleans(), min_size=6, max_size=6), st.sampled_from(["driver", "others", "any"]), st.booleans(),
       st.booleans())
def test_compiled_selected_runs_are_the_selected_pieces_merged(
    pieces: list[tuple[int, int, int, bool]], table: list[bool], scope: str, in_order: bool, wide: bool
) -> None:
    from traceview.analyzers.intervals import merged_runs, selected_runs

    if in_order:
        pieces = sorted(pieces)
    start = np.array([p[0] for p in pieces], dtype=np.int64)
    end = start + np.array([p[1] for p in pieces], dtype=np.int64)
    role = np.array([p[2] for p in pieces], dtype=np.int16 if wide else np.int8)
    driver = np.array([p[3] for p in pieces], dtype=bool)
    wanted = np.array(table, dtype=bool)  # (the last entry: code -1)
    chosen = wanted[role] & (driver if scope == "driver" else ~driver if scope == "others" else True)
    expected = merged_runs(start[chosen], end[chosen])
    runs = selected_runs(start, end, role, driver, wanted, scope, int(chosen.sum()))
    if runs is None:  # out of order, or nothing selected: the pieces are gathered instead
        assert not chosen.any() or (np.diff(start[chosen & (end > start)]) < 0).any()
    else:
        assert np.array_equal(runs[0], expected[0]) and np.array_equal(runs[1], expected[1])


def _as_set(starts: np.ndarray, ends: np.ndarray, rows: np.ndarray) -> set[tuple[int, int, int]]:
    pieces = list(zip(starts.tolist(), ends.tolist(), rows.tolist()))
    assert len(set(pieces)) == len(pieces)  # (no piece twice)
    return set(pieces)


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=300, deadline=None)
@given(tracks, st.integers(0, 2**16))
def test_compiled_own_time_is_the_array_passes(rows: list[tuple[int, int, bool, int, bool, bool]], pick: int) -> None:
    ts, end, loose, track, host, _ = _rows(rows)
    parent, _, _ = nest_tracks(track, ts, end, host, loose=loose)
    events = pd.DataFrame({"ts": ts, "dur": end - ts, "parent": parent})
    children = np.array([(pick >> (i % 16)) & 1 == 1 for i in range(len(ts))], dtype=bool)
    compiled = normalize.self_time(event_table(events), children=children)
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        reference = normalize.self_time(event_table(events), children=children)
    assert compiled.dtype == reference.dtype and np.array_equal(compiled, reference)


# Trees for the passes that carry values down the nesting (arrays.Nesting): each row's parent is
# an earlier row or none; shuffled, a parent may come after its child (the compiled pass then
# declines and the levels decide).
trees = st.lists(st.tuples(st.integers(-1, 40), st.integers(-2, 6), st.integers(0, 7)), min_size=1, max_size=60)


def _tree(rows: list[tuple[int, int, int]], shuffle: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(parent, depth, values, states) of a tree whose row i hangs under an earlier row or none,
    the rows then permuted when ``shuffle`` is not 0."""
    n = len(rows)
    parent = np.array([-1 if up < 0 or i == 0 else up % i for i, (up, _, _) in enumerate(rows)], dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for i in range(n):
        depth[i] = depth[parent[i]] + 1 if parent[i] >= 0 else 0
    values = np.array([r[1] for r in rows], dtype=np.int16)
    states = np.array([r[2] for r in rows], dtype=np.int32)
    if shuffle:
        order = np.random.default_rng(shuffle).permutation(n)
        place = np.empty(n, dtype=np.int64)
        place[order] = np.arange(n)
        parent = np.where(parent[order] >= 0, place[np.maximum(parent[order], 0)], -1)
        depth, values, states = depth[order], values[order], states[order]
    return parent, depth, values, states


def _walked(parent: np.ndarray, depth: np.ndarray, start: np.ndarray, own: np.ndarray, rule: Any) -> np.ndarray:
    """The reference: every row starts at ``start``; then, parents first (by depth), a row with a
    parent becomes rule(the parent's result, its own)."""
    out = start.copy()
    for row in np.argsort(depth, kind="stable").tolist():
        if parent[row] >= 0:
            out[row] = rule(out[parent[row]], own[row])
    return out


@settings(max_examples=400, deadline=None)
@given(trees, st.integers(0, 3), st.lists(st.booleans(), min_size=6, max_size=6),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_copy_down_is_the_walk_from_the_top(rows: list[tuple[int, int, int]], shuffle: int, takes: list[bool],
                                            gives: list[bool]) -> None:
    parent, depth, values, _ = _tree(rows, shuffle)
    take, give = np.array(takes), np.array(gives)

    def rule(up: int, mine: int) -> int:
        inside = 0 <= mine < len(take) and 0 <= up < len(give)  # (values outside the tables: no change)
        return up if inside and take[mine] and give[up] else mine

    expected = _walked(parent, depth, values, values, rule)
    for passes in (compiled.passes, None):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(compiled, "passes", passes)
            got = Nesting(parent, depth).copy_down(values, take, give)
        assert got.dtype == values.dtype and np.array_equal(got, expected), passes


@settings(max_examples=400, deadline=None)
@given(trees, st.integers(0, 3), st.lists(st.integers(0, 4), min_size=5 * 8, max_size=5 * 8),
       st.lists(st.integers(0, 4), min_size=8, max_size=8))
def test_states_down_is_the_walk_from_the_top(rows: list[tuple[int, int, int]], shuffle: int, table: list[int],
                                              top: list[int]) -> None:
    parent, depth, _, own = _tree(rows, shuffle)
    after, alone = np.array(table).reshape(5, 8), np.array(top)
    expected = _walked(parent, depth, alone[own], own, lambda up, mine: after[up, mine])
    for passes in (compiled.passes, None):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(compiled, "passes", passes)
            got = Nesting(parent, depth).states_down(own, 8, 5, step=lambda up, mine: after[up, mine],
                                                     alone=lambda mine: alone[mine])
        assert np.array_equal(got, expected), passes


def _trace_files() -> list[Path]:
    found = [p for p in sorted((ROOT / "sample_traces").rglob("*")) if p.is_file() and p.name != "manifest.json"
             and (p.name.endswith((".json", ".json.gz", ".xplane.pb")))]
    if SHARED.is_dir():
        found += sorted(SHARED.rglob("*.json.gz")) + sorted(SHARED.rglob("*.xplane.pb"))
    return found


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@pytest.mark.parametrize("path", _trace_files(), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_real_traces_nest_the_same_either_way(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sample and shared trace: the compiled walk gives the array passes' nesting, own
    pieces, and so the same diagnosis, number for number."""
    from traceview import api

    compiled = api.diagnose(path)
    _array_passes(monkeypatch)
    reference = api.diagnose(path)
    for mine, theirs in zip(_timelines(compiled), _timelines(reference)):
        for column in ("parent", "depth"):
            assert np.array_equal(mine.events[column].to_numpy(), theirs.events[column].to_numpy()), column
        for column in ("kind", "role", "fw_op"):  # (the rules that carry values down the nesting)
            if column in theirs.events.columns:
                assert mine.events[column].equals(theirs.events[column]), column
        assert mine.meta.extra == theirs.meta.extra
        host = mine.events["device"].to_numpy() < 0
        reference_pieces = normalize.own_pieces(theirs.table, host)
        monkeypatch.undo()
        compiled_pieces = normalize.own_pieces(mine.table, host)
        _array_passes(monkeypatch)
        assert _as_set(*compiled_pieces) == _as_set(*reference_pieces)
    assert compiled.to_dict() == reference.to_dict()


def _timelines(result: object) -> list[object]:
    return [result.timeline] if hasattr(result, "timeline") else [d.timeline for d in result.diagnoses]


def test_the_compiled_passes_are_built() -> None:
    """The install builds the extension (setup.py); without it every trace would silently be
    nested, cut and merged by the slower array passes."""
    assert compiled.passes is not None


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(-3, 3), max_size=300))
def test_compiled_combination_codes_are_pandas_factorize(keys: list[int]) -> None:
    from traceview.arrays import combination_codes

    key = np.array(keys, dtype=np.int64)
    codes, first = combination_codes(key)
    expected, _ = pd.factorize(key)
    assert np.array_equal(codes, expected) and codes.dtype == np.int64
    assert np.array_equal(first, [int(np.flatnonzero(expected == c)[0]) for c in range(len(first))])


def test_combination_codes_grow_past_the_first_table() -> None:
    """More distinct keys than the compiled table starts with (4,096 slots): it grows as it fills."""
    from traceview.arrays import combination_codes

    key = np.repeat(np.arange(20_000, dtype=np.int64) * 7919, 3)[::-1].copy()
    codes, first = combination_codes(key)
    expected, _ = pd.factorize(key)
    assert np.array_equal(codes, expected) and len(first) == 20_000


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 5), st.integers(-1, 300), st.booleans(), st.integers(0, 2)), min_size=1,
                max_size=200))
def test_compiled_column_combinations_are_the_packed_keys(rows: list[tuple[int, int, bool, int]]) -> None:
    from traceview.arrays import column_combinations

    columns = [np.array([r[0] for r in rows], dtype=np.int8), np.array([r[1] for r in rows], dtype=np.int16),
               np.array([r[2] for r in rows], dtype=bool), np.array([r[3] for r in rows], dtype=np.int64)]
    shifts, sizes = [1, 1, 0, 0], [7, 302, 2, 3]
    mine = column_combinations(columns, shifts, sizes)
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        theirs = column_combinations(columns, shifts, sizes)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])
    with pytest.raises(ValueError):  # a digit outside its size is refused, not packed into another key
        column_combinations(columns, shifts, [7, 302, 2, 1]) if (columns[3] > 0).any() else column_combinations(
            columns, [1, 1, 0, -1], sizes)


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@pytest.mark.parametrize("possible_keys", ["few: a place per key", "many: hashed"])
def test_compiled_column_combinations_over_many_blocks(possible_keys: str) -> None:
    # 5000 rows (several of the compiled pass's blocks); a wide last column makes the keys too many
    # for a table with a place for each, so they are hashed.
    from traceview.arrays import column_combinations

    rng = np.random.default_rng(7)
    columns = [rng.integers(-1, 6, 5000).astype(np.int8), rng.integers(0, 40, 5000).astype(np.int32),
               rng.integers(0, 2, 5000).astype(bool)]
    shifts, sizes = [1, 0, 0], [7, 40, 2]
    if possible_keys.startswith("many"):
        columns.append(rng.integers(0, 3, 5000) * 2**30)
        shifts, sizes = [*shifts, 0], [*sizes, 2**32]
    mine = column_combinations(columns, shifts, sizes)
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        theirs = column_combinations(columns, shifts, sizes)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])
    assert len(mine[1]) > 100


# Durations anywhere in int64's range (hostile values pass the readers' range checks), parents any
# row or none: every parent's own time is max(its duration − its children's, 0), exactly, on both
# paths, where a sum of children may exceed int64.
huge = st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(-1, 12), st.booleans()), min_size=1, max_size=14)


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@settings(max_examples=400, deadline=None)
@given(huge)
def test_own_time_saturates_at_zero_on_both_paths(rows: list[tuple[int, int, bool]]) -> None:
    n = len(rows)
    dur = np.array([d for d, _, _ in rows], dtype=np.int64)
    parent = np.array([up if up < n else -1 for _, up, _ in rows], dtype=np.int64)
    children = np.array([c for _, _, c in rows], dtype=bool)
    expected = [max(int(dur[i]) - sum(int(dur[j]) for j in range(n) if children[j] and parent[j] == i), 0)
                for i in range(n)]
    events = pd.DataFrame({"ts": np.zeros(n, dtype=np.int64), "dur": dur, "parent": parent})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the array path once cast an overflowing float sum, with a warning)
        mine = normalize.self_time(event_table(events), children=children)
        with pytest.MonkeyPatch.context() as patch:
            _array_passes(patch)
            arrays = normalize.self_time(event_table(events), children=children)
    assert mine.tolist() == expected == arrays.tolist()


def test_a_parent_of_four_quadrillion_us_and_overlapping_children() -> None:
    """Six events that pass every range check: the children's sum overflows int64, and the
    parent's own time is 0 on both paths (it wrapped to 4.7e16 ns on the compiled one)."""
    dur = np.array([4_600_000_000_000_000_000] + [4_000_000_000_000_000_000] * 5, dtype=np.int64)
    events = pd.DataFrame({"ts": np.zeros(6, dtype=np.int64), "dur": dur, "parent": [-1, 0, 0, 0, 0, 0]})
    children = np.array([False] + [True] * 5)
    assert normalize.self_time(event_table(events), children=children).tolist() == [0] + [4 * 10**18] * 5
    with pytest.MonkeyPatch.context() as patch:
        _array_passes(patch)
        assert normalize.self_time(event_table(events), children=children).tolist() == [0] + [4 * 10**18] * 5


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
@pytest.mark.parametrize("bad", [2, 5, -2])
def test_own_pieces_refuses_a_parent_outside_the_table(bad: int) -> None:
    """The sweep follows parent links; one that names no row is refused at the entry, not read
    out of bounds (the links come from nest, but the pass does not rely on it)."""
    ts, dur = np.array([0, 1], dtype=np.int64), np.array([10, 4], dtype=np.int64)
    parent, track = np.array([-1, bad], dtype=np.int64), np.zeros(2, dtype=np.int64)
    flags = np.ones(2, dtype=np.uint8)
    out = [np.zeros(8, dtype=np.int64) for _ in range(3)]
    with pytest.raises(ValueError, match="a parent is no row"):
        compiled.passes.own_pieces(ts, dur, parent, track, flags, flags, 2, *out)
    parent[1] = 0
    assert compiled.passes.own_pieces(ts, dur, parent, track, flags, flags, 2, *out) == 3  # [0,1) [5,10) [1,5)


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
def test_own_pieces_beyond_the_bound_are_all_written() -> None:
    """own_pieces sweeps once into room for the selected rows and the rows with a parent, which
    holds every piece where parents come from nest; parent links that cross tracks (a table not
    nested by nest) can give more, and those are all written too, as the counting sweep counts them."""
    ts, end = np.array([0, 1], dtype=np.int64), np.array([10, 5], dtype=np.int64)
    parent = np.array([-1, 0], dtype=np.int64)  # row 1, on track b, names row 0, on track a
    events = pd.DataFrame({"ts": ts, "dur": end - ts, "parent": parent, "device": [-1, -1],
                           "track": pd.Categorical.from_codes([0, 1], categories=["a", "b"])})
    selected = np.ones(2, dtype=bool)
    empty = np.zeros(0, dtype=np.int64)
    counted = compiled.passes.own_pieces(ts, end - ts, parent, np.array([0, 1], dtype=np.int8), np.ones(2, np.uint8),
                                         np.ones(2, np.uint8), 3, empty, empty, np.zeros(0, dtype=np.int32))
    assert counted == 4 > int(selected.sum()) + int((parent >= 0).sum())  # row 0's tail from both tracks
    starts, ends, rows = normalize.own_pieces(event_table(events), selected)
    assert sorted(zip(starts.tolist(), ends.tolist(), rows.tolist())) == [(0, 1, 0), (1, 5, 1), (5, 10, 0), (5, 10, 0)]


@pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")
def test_own_pieces_of_a_few_rows_hold_no_room_for_all() -> None:
    """The sweep writes into room for the selected rows and every row with a parent; where far
    fewer pieces come out (a few rows selected), they are held at their own size, not as views
    of that room."""
    table = load(sorted(SAMPLES.rglob("*.pt.trace.json.gz"))[0]).table
    for selected in (np.arange(len(table)) % 50 == 0, np.ones(len(table), dtype=bool)):
        pieces = normalize.own_pieces(table, selected)
        assert len(pieces[0]) > 0
        for column in pieces:
            held = column.base.nbytes if column.base is not None else column.nbytes
            assert held * 7 <= column.nbytes * 8, (int(selected.sum()), held, column.nbytes)
