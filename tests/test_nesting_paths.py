"""nest_tracks nests a lone host track in place exactly as it nests a track among others."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.arrays import order_by_start_then_longest
from traceview.normalize import nest_tracks

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
    import pandas as pd

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
    starts, ends, piece_row = own_pieces(events, selected)
    assert (ends > starts).all()  # no empty piece, whichever branch
    assert selected[piece_row].all()
    for row in np.flatnonzero(selected):  # each row's own time, counted nanosecond by nanosecond
        covered = np.zeros(int(dur[row]), dtype=bool)
        for child in np.flatnonzero(parent == row):
            covered[ts[child] - ts[row]: ts[child] + dur[child] - ts[row]] = True
        mine = piece_row == row
        assert int((ends[mine] - starts[mine]).sum()) == int((~covered).sum())
