"""Fill the derived columns of a freshly read timeline: nesting on host tracks and launchers.

Contract: ``normalize(timeline) -> timeline`` sets ``depth``/``parent`` for host events (unless
the reader already did: XPlane nests to classify), ``launcher`` for device events and ``role``
for all, in place, and returns the same object. The step column is filled later by
:mod:`traceview.analyzers.steps`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview import compiled
from traceview.arrays import at_rows, column_codes, first_match, membership, rows_matching, unique_sorted
from traceview.role_passes import assign_role_codes
from traceview.roles import MATH_ROLES, ROLE_VALUES, Role
from traceview.schema import DEVICE_KINDS, OVERLAPS_KEY, Kind, Timeline, TraceMeta, categorical_from_codes
from traceview.table import Labels, Table


def normalize(timeline: Timeline) -> Timeline:
    """Compute nesting and launchers, and record the kept counts per kind."""
    events = timeline.table
    _nest(timeline)
    _launchers(events)
    events["role"] = Labels(assign_role_codes(events), ROLE_VALUES)
    kind = events["kind"]
    counts = np.bincount(kind.codes[kind.codes >= 0], minlength=len(kind.categories))
    # Most first (ties in the kinds' order), as they are shown.
    order = sorted(range(len(counts)), key=lambda i: -counts[i])
    timeline.meta.kept = {str(kind.categories[i]): int(counts[i]) for i in order if counts[i]}
    return timeline


def record_overlaps(meta: TraceMeta, overlaps: int) -> None:
    """Keep the count of partial overlaps nesting found (a re-nesting replaces it)."""
    meta.extra[OVERLAPS_KEY] = int(overlaps)


def _nest(timeline: Timeline) -> None:
    """Depth and parent of every host event within its track (see :func:`nest_tracks`). A reader
    that had to nest to classify (XPlane) hands its nesting over, with its count of overlaps
    (:func:`record_overlaps`); it is not computed twice."""
    events = timeline.table
    host = events["device"] < 0
    if host.any() and (events["depth"][host] >= 0).all():
        timeline.meta.extra.setdefault(OVERLAPS_KEY, 0)
        return
    ts = events["ts"]
    end = ts + events["dur"]
    python = membership(events["kind"])([Kind.PYTHON.value])
    parent, depth, overlaps = nest_tracks(events["track"].codes, ts, end, host, loose=python)
    events["depth"] = depth.astype(np.int16)
    events["parent"] = parent
    record_overlaps(timeline.meta, overlaps)


def nest_tracks(
    track: np.ndarray, ts: np.ndarray, end: np.ndarray, host: np.ndarray, loose: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Parent row and depth of every host event on its track, for rows sorted by (ts, -dur).

    Returns (parent, depth, overlaps); rows outside ``host`` get -1, -1. An event that starts
    inside the open event but ends after it (profiler clock jitter, or a genuinely overlapping
    async range) is not nested under it; ``overlaps`` counts those, except where one of the two is
    a ``loose`` row: Python frames, which a separate tracer records around the ranges they open
    and close (torch's ``_record_function_enter_new`` returns after its range began), so that
    their edges cross is expected, not a fault of the trace. Compiled, one stack walk over all
    rows (traceview/_passes.c); otherwise tracks whose events nest properly (the usual case:
    scoped ranges) are done with array operations, level by level, and a track with a partial
    overlap falls back to a stack walk — the same parents, depths and count either way.
    """
    n = len(ts)
    if compiled.passes is not None:
        return _nest_compiled(track, ts, end, host, loose)
    if n and host.all() and (track == track[0]).all():
        # One host track (a CPU-only trace): nested in place, without regrouping the rows by track.
        return _nest_track(ts, end, loose)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.full(n, -1, dtype=np.int64)
    host_rows = np.flatnonzero(host)
    overlaps = 0
    if not len(host_rows):
        return parent, depth, overlaps
    order = host_rows[np.argsort(track[host_rows], kind="stable")]  # stable keeps (ts, -dur) within a track
    bounds = np.flatnonzero(np.diff(track[order])) + 1
    for rows in np.split(order, bounds):
        p, d, o = _nest_track(ts[rows], end[rows], None if loose is None else loose[rows])
        parent[rows] = np.where(p >= 0, at_rows(rows, p), -1)
        depth[rows] = d
        overlaps += o
    return parent, depth, overlaps


def _nest_compiled(
    track: np.ndarray, ts: np.ndarray, end: np.ndarray, host: np.ndarray, loose: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """nest_tracks by the compiled walk: every track's stack held at once, the rows in their order."""
    n = len(ts)
    parent = np.empty(n, dtype=np.int64)
    depth = np.empty(n, dtype=np.int64)
    track = track.astype(np.int64) + 1  # (a missing track, code -1, is a track of its own, as in the array passes)
    n_tracks = int(track.max()) + 1 if n else 0
    flags = np.zeros(n, dtype=np.uint8) if loose is None else np.ascontiguousarray(loose, dtype=np.uint8)
    overlaps = compiled.passes.nest(track, np.ascontiguousarray(ts, dtype=np.int64),
                                    np.ascontiguousarray(end, dtype=np.int64),
                                    np.ascontiguousarray(host, dtype=np.uint8), flags, n_tracks, parent, depth)
    return parent, depth, int(overlaps)


def _nest_track(ts: np.ndarray, end: np.ndarray, loose: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Parent positions (within the track) and depths of one track's events sorted by (ts, -dur)."""
    n = len(ts)
    depth = _open_before(ts, end)
    parent = np.full(n, -1, dtype=np.int64)
    below = np.flatnonzero(depth == 0)  # (each level's rows are then the next one's parents)
    for level in range(1, int(depth.max()) + 1 if n else 0):
        here = np.flatnonzero(depth == level)
        if not len(here) or not len(below):
            break
        parent[here] = below[np.maximum(np.searchsorted(below, here) - 1, 0)]
        below = here
    unsound = _unsound(ts, end, parent, depth)
    if not unsound.any():
        return parent, depth, 0
    # A partial overlap only disturbs the stretch of events it belongs to: stretches are separated
    # where nothing is open, so only the stretches holding an unsound event are walked.
    stretch = np.cumsum(depth <= 0) - 1
    walk = np.isin(stretch, unique_sorted(stretch[unsound]))
    rows = np.flatnonzero(walk)
    walked_parent, walked_depth, overlaps = _nest_track_walk(ts[rows], end[rows], None if loose is None else loose[rows])
    parent[rows] = np.where(walked_parent >= 0, at_rows(rows, walked_parent), -1)
    depth[rows] = walked_depth
    return parent, depth, overlaps


# Rows per block where an elementwise check gathers from other rows: the temporaries of a block stay
# in cache and are reused, instead of one fresh array per operation over the whole track.
_BLOCK = 1 << 18


def _unsound(ts: np.ndarray, end: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Rows whose nesting by depth does not hold: a negative depth, a depth without a parent, or a
    parent that does not enclose the row."""
    unsound = np.empty(len(ts), dtype=bool)
    for low in range(0, len(ts), _BLOCK):
        block = slice(low, low + _BLOCK)
        own_parent = parent[block]
        enclosing = np.maximum(own_parent, 0)
        outside = (end[enclosing] < end[block]) | (ts[enclosing] > ts[block])
        depth_of = depth[block]
        unsound[block] = (depth_of < 0) | np.where(own_parent >= 0, outside, depth_of > 0)
    return unsound


def _open_before(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Events open at each event's start (its depth when events nest), for rows sorted by (ts, -dur):
    the events before it minus those that ended at or before its start.

    Zero-length events need care: one that ends exactly where this event starts but sorts after it
    (same ts, shorter: only zero-length events can) is counted as ended without having started
    before — torch's integer-µs traces are full of them (cudaOccupancy… calls of 0 µs) — so the
    count is raised by the zero-length events at this ts that sort at or after it.
    """
    n = len(ts)
    depth = np.searchsorted(np.sort(end), ts, side="right")
    np.subtract(np.arange(n), depth, out=depth)
    zero = np.flatnonzero(end == ts)
    if len(zero):
        zero_ts = ts[zero]
        at_same_ts = np.searchsorted(zero_ts, ts, side="right") - np.searchsorted(zero_ts, ts, side="left")
        preceding = np.zeros(n, dtype=np.int64)  # zero-length events at this ts that sort before it
        preceding[zero] = np.arange(len(zero)) - np.searchsorted(zero_ts, zero_ts, side="left")
        depth += at_same_ts - preceding
    return depth


def _nest_track_walk(ts: np.ndarray, end: np.ndarray, loose: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    """The stack walk for a track with partial overlaps (a popped, overlapped event is counted
    unless it or the event crossing it is ``loose``)."""
    crossing_counts = (lambda popped, pos: True) if loose is None else (
        lambda popped, pos, flags=loose.tolist(): not (flags[popped] or flags[pos]))
    parent = np.full(len(ts), -1, dtype=np.int64)
    depth = np.zeros(len(ts), dtype=np.int64)
    overlaps = 0
    stack_end: list[int] = []
    stack_pos: list[int] = []
    for pos, (start, stop) in enumerate(zip(ts.tolist(), end.tolist())):
        while stack_end and stack_end[-1] <= start:
            stack_end.pop()
            stack_pos.pop()
        while stack_end and stack_end[-1] < stop:
            overlaps += crossing_counts(stack_pos[-1], pos)
            stack_end.pop()
            stack_pos.pop()
        if stack_pos:
            parent[pos] = stack_pos[-1]
        depth[pos] = len(stack_pos)
        stack_end.append(stop)
        stack_pos.append(pos)
    return parent, depth, overlaps


def nearest_ancestor(events: Table, rows: np.ndarray, wanted: np.ndarray, include_self: bool = True) -> np.ndarray:
    """For each of ``rows``, the nearest row up its parent chain (itself first when
    ``include_self``) for which the boolean mask ``wanted`` is set; -1 when none.

    One vectorized step per nesting level, so the cost is rows × depth in numpy, not in Python.
    """
    parent = events["parent"]
    current = rows.copy() if include_self else parent[rows]
    result = np.full(len(rows), -1, dtype=np.int64)
    pending = current >= 0
    while pending.any():
        idx = np.flatnonzero(pending)
        hit = wanted[current[idx]]
        result[idx[hit]] = current[idx[hit]]
        pending[idx[hit]] = False
        miss = idx[~hit]
        current[miss] = parent[current[miss]]
        pending[miss] = current[miss] >= 0
    return result


def _launchers(events: Table) -> None:
    """Name, for each device event, the innermost framework op around the host call that queued it."""
    correlation = events["correlation"]
    device_mask = membership(events["kind"])([k.value for k in DEVICE_KINDS]) & (correlation >= 0)
    host_mask = (events["device"] < 0) & (correlation >= 0)
    if not device_mask.any() or not host_mask.any():
        return
    host_rows = np.flatnonzero(host_mask)
    ops = nearest_ancestor(events, host_rows, membership(events["kind"])([Kind.HOST_OP.value]))
    # Names as codes throughout: no per-row string is made, and the column is rebuilt from codes.
    names = events["name"]
    name_codes = np.asarray(names.codes, dtype=np.int64)
    op_codes = np.where(ops >= 0, at_rows(name_codes, ops), -1)
    device_rows = np.flatnonzero(device_mask)
    found = first_match(correlation[host_rows], op_codes, correlation[device_rows], -1)
    named = np.array([name != "" for name in names.categories] + [False], dtype=bool)  # code -1: no op
    has_name = named[found]
    # Readers may already know the launcher (XPlane tf_op / hlo_op stats on device events, or launch
    # calls on their own threads with no enclosing op): keep theirs where no enclosing op is found.
    current = events["launcher"]
    # Values: the current launchers, the op names, and None last, where a missing launcher stays missing.
    values = np.array(list(current.categories) + list(names.categories) + [None], dtype=object)
    codes = np.asarray(current.codes, dtype=np.int64)
    codes = np.where(codes < 0, len(values) - 1, codes)
    codes[device_rows[has_name]] = len(current.categories) + found[has_name]
    events["launcher"] = categorical_from_codes(codes, values)


def launch_rows(events: Table) -> np.ndarray:
    """For every row, the row of the host call with the same correlation id (device rows only); -1 else."""
    correlation = events["correlation"]
    is_host = events["device"] < 0
    result = np.full(len(events), -1, dtype=np.int64)
    host_rows = np.flatnonzero(is_host & (correlation >= 0))
    dev_rows = np.flatnonzero(~is_host & (correlation >= 0))
    if not len(host_rows) or not len(dev_rows):
        return result
    result[dev_rows] = first_match(correlation[host_rows], host_rows, correlation[dev_rows], -1)
    return result


def outermost_rows(events: Table, mask: np.ndarray) -> np.ndarray:
    """The rows of ``mask`` that no other row of ``mask`` holds (none of their ancestors is in it)."""
    rows = np.flatnonzero(mask)
    return rows[nearest_ancestor(events, rows, mask, include_self=False) < 0]


def rows_inside_another(events: Table, mask: np.ndarray) -> np.ndarray:
    """The rows of ``mask`` held by a row of ``mask`` of another name (the nearest such holder's
    name differs: a profiler that records one call twice, nested, holds a row of its own name)."""
    rows = np.flatnonzero(mask)
    holder = nearest_ancestor(events, rows, mask, include_self=False)
    name = events["name"].codes
    held = holder >= 0
    held[held] = name[holder[held]] != name[rows[held]]
    return rows[held]


def top_level_ops(events: Table) -> np.ndarray:
    """Host ops whose parent is not itself a host op (ops called from Python, a step marker or an annotation)."""
    is_op = membership(events["kind"])([Kind.HOST_OP.value])
    parent = events["parent"]
    parent_is_op = at_rows(is_op, parent) & (parent >= 0)
    return is_op & (events["device"] < 0) & ~parent_is_op


def dispatched_ops(events: Table) -> np.ndarray:
    """The framework ops the host dispatched one at a time: :func:`top_level_ops`, with a call
    wrapper (roles ``call``, ``call_tracing``) that ran ops one at a time inside it, on its thread,
    replaced by them — a tf.function run op by op (``tf.config.run_functions_eagerly``), a
    TorchScript graph's aten ops. A wrapper opens when it holds two ops or more, or one that
    opens: a wrapper around one function run (a tf.function's call: its binding, then the
    function) stays one op."""
    is_op = membership(events["kind"])([Kind.HOST_OP.value]) & (events["device"] < 0)
    is_call = membership(events["role"])([Role.CALL.value, Role.CALL_TRACING.value])
    parent = events["parent"]
    child = np.flatnonzero(is_op & (parent >= 0) & at_rows(is_op, parent))  # ops right inside an op
    top = top_level_ops(events)
    held = np.bincount(parent[child], minlength=len(parent))
    opens = is_call & (held >= 2)
    single = np.flatnonzero(is_call & (held == 1))
    if len(single):
        only = np.full(len(parent), -1, dtype=np.int64)
        only[parent[child]] = child  # (the one op inside each wrapper that holds one)
        inner = only[single]
        while True:  # (as many rounds as wrappers are nested in one another, a few)
            newly = single[opens[inner] & ~opens[single]]
            if not len(newly):
                break
            opens[newly] = True
    counted = top & ~opens
    frontier = top & opens
    while frontier.any():
        inside = child[frontier[parent[child]]]
        counted[inside[~opens[inside]]] = True
        frontier = np.zeros(len(parent), dtype=bool)
        frontier[inside[opens[inside]]] = True
    return counted


def compute_ops(events: Table) -> np.ndarray:
    """Host events whose own time does math: roles ``compute`` and ``compiled_code``
    (:mod:`traceview.roles`; an allowlist, so a wrapper or an unknown event never is)."""
    return (events["device"] < 0) & membership(events["role"])(MATH_ROLES)


def leaf_compute_ops(ev: Table, host_op: np.ndarray) -> np.ndarray:
    """Compute ops with no child op (the innermost math, e.g. aten::addmm's BLAS call on its own)."""
    parent = ev["parent"]
    has_op_child = np.zeros(len(ev), dtype=bool)
    child_parents = parent[host_op]
    has_op_child[child_parents[child_parents >= 0]] = True
    return compute_ops(ev) & host_op & ~has_op_child


def math_ops(events: Table) -> np.ndarray:
    """Compute ops (:func:`compute_ops`) less those whose own time is a wait for compiled work
    running on other threads — XLA's thunk executor waiting (``categories.XLA_PROGRAM_WAIT``), a
    sync inside compiled code (TF XLA's BlockUntilReady in CpuExecutable) — : the rows whose own
    time the per-op tables count as math, each moment once (the work waited for is counted on the
    threads that run it)."""
    mask = compute_ops(events) & ~membership(events["kind"])([Kind.SYNC.value])
    return mask & ~rows_matching(events["name"], cat.XLA_PROGRAM_WAIT)


def _running_max_by_group(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The running maximum of ``values`` restarting where ``first`` is set (groups are runs).
    ``values`` itself (no copy) when it already rises within every group, the usual case."""
    if not len(values):
        return values.copy()
    falls = values[1:] < values[:-1]
    if not (falls & ~first[1:]).any():
        return values
    del falls
    low, high = int(values.min()), int(values.max())
    groups = np.cumsum(first) - 1
    span = high - low + 1
    if span * (int(groups[-1]) + 1) < 2**62:
        # One accumulate over keys that put every group above the one before it.
        lifted = groups * span + (values - low)
        return np.maximum.accumulate(lifted) - groups * span + low
    out = values.copy()
    for start, stop in zip(np.flatnonzero(first).tolist(), np.append(np.flatnonzero(first)[1:], len(values)).tolist()):
        np.maximum.accumulate(out[start:stop], out=out[start:stop])  # (keys too wide to lift: group by group)
    return out


# Pieces of time: their starts, their ends, and the row each belongs to.
Pieces = tuple[np.ndarray, np.ndarray, np.ndarray]


def own_pieces(events: Table, rows_mask: np.ndarray) -> Pieces:
    """The parts of the selected rows' intervals not covered by their direct (host) children:
    where each row is the innermost event on its thread.

    Returned as (starts, ends, row of each piece), empty pieces removed (where no selected row has
    a child, each selected row of some length is its own piece, as it is), each row's pieces in
    their time order. Compiled (traceview/_passes.c), every track's pieces come in time order
    where its events nest, so the union of any of them needs no sort (attribution.merged_runs);
    the array passes group them by row instead. The rows are int32 when the table has fewer than
    2^31 rows (int64 otherwise): a trace's pieces number twice its events, and every array of them
    is memory the process faults in.
    """
    return own_pieces_cut(events, rows_mask)()


def own_pieces_cut(events: Table, rows_mask: np.ndarray) -> Callable[[], Pieces]:
    """:func:`own_pieces` as a call to make later: the columns are taken out of the table now, so
    the call reads no table (another thread may make it while this one goes on: the compiled
    sweep lets go of the interpreter lock)."""
    ts = events["ts"]
    parent = events["parent"]
    index_type = np.int32 if len(ts) < 2**31 else np.int64
    if compiled.passes is not None and "track" in events.columns:
        return _own_pieces_compiled(events, rows_mask, index_type)
    end = ts + events["dur"]
    host = events["device"] < 0
    return lambda: _own_pieces_by_arrays(host, ts, end, parent, rows_mask, index_type)


def _own_pieces_by_arrays(host: np.ndarray, ts: np.ndarray, end: np.ndarray, parent: np.ndarray,
                          rows_mask: np.ndarray, index_type: type) -> Pieces:
    child = np.flatnonzero(host & (parent >= 0))
    child = child[rows_mask[parent[child]]]
    if not len(child):
        selected = np.flatnonzero(rows_mask & (end > ts))
        return ts[selected], end[selected], selected.astype(index_type)
    # Children grouped by parent, in time order within each (rows are sorted by ts, so a stable
    # sort on the parent alone keeps it).
    child = child[np.argsort(parent[child], kind="stable")].astype(index_type)
    par = parent[child].astype(index_type)
    first = np.ones(len(child), dtype=bool)
    np.not_equal(par[1:], par[:-1], out=first[1:])
    last = np.ones(len(child), dtype=bool)
    last[:-1] = first[1:]
    child_start = ts[child]  # where the gap before each child ends
    # Running max of child ends within each parent (children of one event may overlap slightly).
    running = _running_max_by_group(end[child], first)
    del child
    # The gap before each child starts where the siblings before it have all ended, or at the parent's start.
    gap_start = np.empty_like(running)
    gap_start[1:] = running[:-1]
    gap_start[first] = ts[par[first]]
    del first
    keep_gap = child_start > gap_start
    # After the last child: from where the children have all ended to the parent's end.
    tail_row = par[last]
    tail_start, tail_end = running[last], end[tail_row]
    del running, last
    keep_tail = tail_end > tail_start
    has_child = np.zeros(len(ts), dtype=bool)
    has_child[tail_row] = True
    childless = np.flatnonzero(rows_mask & ~has_child & (end > ts))
    del has_child
    # Each output written once, part by part (no concatenation of all pieces followed by a mask).
    n_gap, n_tail = int(np.count_nonzero(keep_gap)), int(np.count_nonzero(keep_tail))
    size = n_gap + n_tail + len(childless)
    starts = np.empty(size, dtype=ts.dtype)
    ends = np.empty(size, dtype=end.dtype)
    rows = np.empty(size, dtype=index_type)
    np.compress(keep_gap, gap_start, out=starts[:n_gap])
    np.compress(keep_gap, child_start, out=ends[:n_gap])
    np.compress(keep_gap, par, out=rows[:n_gap])
    del gap_start, child_start, par, keep_gap
    tail = slice(n_gap, n_gap + n_tail)
    np.compress(keep_tail, tail_start, out=starts[tail])
    np.compress(keep_tail, tail_end, out=ends[tail])
    np.compress(keep_tail, tail_row, out=rows[tail])
    np.take(ts, childless, out=starts[n_gap + n_tail:], mode="clip")  # (clip: unbuffered; the rows are valid)
    np.take(end, childless, out=ends[n_gap + n_tail:], mode="clip")
    rows[n_gap + n_tail:] = childless
    return starts, ends, rows


def _own_pieces_compiled(events: Table, rows_mask: np.ndarray, index_type: type) -> Callable[[], Pieces]:
    """own_pieces by the compiled sweep (traceview/_passes.c), to call; each track's pieces in time
    order where its events nest. The sweep reads the table's own columns: the track codes as
    they are (code -1, no track, is a track of its own there) and each row's end as ts + dur, so
    that no column of every row is made for it."""
    track = np.ascontiguousarray(events["track"].codes)
    if track.dtype.kind != "i":  # (the sweep reads signed codes: -1, no track)
        track = track.astype(np.int64)
    parent = np.ascontiguousarray(events["parent"], dtype=np.int64)
    selected = np.ascontiguousarray(rows_mask, dtype=np.uint8)
    columns = (np.ascontiguousarray(events["ts"], dtype=np.int64), np.ascontiguousarray(events["dur"], dtype=np.int64),
               parent, track, (events["device"] < 0).view(np.uint8), selected,
               int(track.max()) + 2 if len(track) else 0)
    passes = compiled.passes

    def cut() -> Pieces:
        # One sweep into room for at most this many: a selected row gives a piece before each
        # child and one after the last, so no more pieces than selected rows and rows with a
        # parent. Events nest, so nearly every row is a child and the bound is nearly the count
        # (a second, counting sweep took as long as the one that writes).
        room = int(np.count_nonzero(selected)) + int(np.count_nonzero(parent >= 0))
        starts, ends = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.int64)
        rows = np.empty(room, dtype=index_type)
        size = passes.own_pieces(*columns, starts, ends, rows)
        if size > room:  # (a parent column not made by nest(), whose links cross tracks): written again
            starts, ends = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
            rows = np.empty(size, dtype=index_type)
            if passes.own_pieces(*columns, starts, ends, rows) != size:
                raise AssertionError("own_pieces: the compiled sweep wrote another count than it counted")
        if size >= room:
            return starts, ends, rows
        if 8 * (room - size) > room:  # (few rows with a parent selected: the pieces held at their size)
            return starts[:size].copy(), ends[:size].copy(), rows[:size].copy()
        return starts[:size], ends[:size], rows[:size]

    return cut


def self_time(events: Table, children: np.ndarray | None = None) -> np.ndarray:
    """Per row: duration minus the summed durations of its direct children (≥ 0) — the rows of
    the ``children`` mask, host ops by default."""
    dur = events["dur"]
    parent = events["parent"]
    if children is None:
        children = membership(events["kind"])([Kind.HOST_OP.value])
    if compiled.passes is not None:  # (exact integer sums, one pass: traceview/_passes.c)
        own = np.empty(len(dur), dtype=np.int64)
        compiled.passes.own_time(np.ascontiguousarray(dur, dtype=np.int64),
                                 np.ascontiguousarray(parent, dtype=np.int64),
                                 np.ascontiguousarray(children, dtype=np.uint8), own)
        return own
    return _own_time_arrays(np.asarray(dur, dtype=np.int64), np.asarray(parent, dtype=np.int64), children)


# Children's sums below this are exact in int64 whatever their terms (each term is below it too);
# a parent whose children sum to more is settled with Python's integers (hostile data only).
_EXACT_SUM = 2**62


def _own_time_arrays(dur: np.ndarray, parent: np.ndarray, children: np.ndarray) -> np.ndarray:
    """:func:`self_time` without the compiled passes, to the same integers: max(duration − the
    children's durations, 0), the sums exact (the compiled pass saturates at 0)."""
    own = np.maximum(dur, 0)
    child = np.flatnonzero(children & (parent >= 0) & (parent < len(dur)) & (dur > 0))
    if not len(child):
        return own
    child = child[np.argsort(parent[child], kind="stable")]
    ups = parent[child]
    firsts = np.flatnonzero(np.r_[True, ups[1:] != ups[:-1]])
    parents = ups[firsts]
    approx = np.add.reduceat(dur[child].astype(np.float64), firsts)
    exact = approx < _EXACT_SUM
    sums = np.add.reduceat(dur[child], firsts)
    own[parents[exact]] = np.maximum(own[parents[exact]] - sums[exact], 0)
    bounds = np.r_[firsts, len(child)]
    for k in np.flatnonzero(~exact).tolist():
        total = sum(int(d) for d in dur[child[bounds[k]:bounds[k + 1]]].tolist())
        own[parents[k]] = max(int(own[parents[k]]) - total, 0)
    return own


def compute_self_time(events: Table) -> np.ndarray:
    """Per row: its self time as math, less its op children, its Python children (the user's
    host callback run from inside an XLA thunk — ``jax.debug.print`` — is not the thunk's math)
    and its sync children (TF XLA's CpuExecutable waiting in a BlockUntilReady for the thunks its
    worker threads run: 7.2 of its 7.3 ms a step on the CNN sample read as its own math)."""
    return self_time(events, membership(events["kind"])([Kind.HOST_OP.value, Kind.PYTHON.value,
                                                               Kind.SYNC.value]))


def op_name_codes(events: Table) -> tuple[np.ndarray, list[Any]]:
    """Event names, with the framework op (XPlane ``fw_op``: tf_op / eager_op / hlo_op) where
    known, as codes into a list of values (-1: missing; two codes may hold the same text, a
    framework op named like an event): no per-row string is made."""
    codes, values = column_codes(events["name"])
    if "fw_op" not in events.columns:
        return codes, values
    fw_codes, fw_values = column_codes(events["fw_op"])
    known = np.array([value != "" for value in fw_values] + [False], dtype=bool)[fw_codes]  # (last: code -1)
    # Compiled code (an XLA executable) inherits the function's name as its framework op; it is
    # named after itself so that a call wrapper's name never labels math.
    known &= ~membership(events["role"])([Role.COMPILED_CODE.value])
    codes = codes.astype(np.int32)
    named = np.where(codes >= 0, codes + len(fw_values), -1)
    return np.where(known, fw_codes, named), fw_values + values
