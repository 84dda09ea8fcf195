"""Attribute every nanosecond of every step window to exactly one cause.

The step windows are cut where the set of active layers changes (analyzers/intervals.py); each
elementary segment goes to the first active layer of the table (analyzers/layers.py), over the
host events' own pieces and the pseudo-events carved out of them (analyzers/carving.py) and the
step thread's unrecorded gaps (analyzers/gaps.py). So a step's buckets sum to its duration exactly
(integer ns, integer sums). docs/attribution.md explains the rules, the table, and where the
peers (HTA, XProf) differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview.analyzers.carving import carve
from traceview.analyzers.gaps import driver_rows
from traceview.analyzers.intervals import (Intervals, int_bincount, layer_activity, merged_runs, overlap_with_runs,
                                           selected_runs, windows_at)
from traceview.analyzers.whatif import Segments, segments_of, whatif_tables
from traceview.analyzers.layers import (CALL_FALLBACK, COPY_KINDS, GAP_LONG, GAP_SHORT, GIL_WAIT, HOOKS, LAYERS, PAUSE,
                                        PER_CALL, QUEUED, WAIT_FALLBACKS, WAITING_IF_OTHERS_COMPUTE, Layer)
from traceview.arrays import at_rows, membership
from traceview.normalize import launch_rows, outermost_rows
from traceview.results import BUCKETS, Attribution, AttributionOptions, Steps
from traceview.roles import Role
from traceview.schema import CopyKind, Timeline
from traceview.table import Labels, Table


@dataclass
class _Segments:
    """Elementary segments of the step windows, each with the layer that wins it."""

    start: np.ndarray  # ns
    length: np.ndarray  # ns
    step: np.ndarray  # step position, valid where in_step
    in_step: np.ndarray
    winner_layer: np.ndarray  # index into layer_names, -1 when no layer is active (idle)
    bucket: np.ndarray  # index into BUCKETS
    layer_names: list[str]
    gap_threshold_ns: int
    gap_rule: str
    compared_steps: tuple[int, ...]  # step positions compared for pauses (analyzers/pauses.py)
    paused_events: tuple[np.ndarray, np.ndarray]  # (rows, ns): the pause taken off each event's own time
    hooked_nodes: np.ndarray  # rows of the node ranges around which the engine ran hooks (hooked_nodes)
    gil_wait_events: tuple[np.ndarray, np.ndarray]  # (rows, ns): the lock wait taken off each event's own time
    active: np.ndarray  # per segment: the bit mask of the layers active in it
    layers: list[Layer]  # the layers of the masks, in priority order


def _segments(timeline: Timeline, steps: Steps, mode: str, options: AttributionOptions) -> _Segments:
    """Cut the step windows where the set of active layers changes and give each piece to the
    winning layer."""
    table = steps.table
    layers = [layer for layer in LAYERS if mode in layer.modes]
    intervals, threshold, rule, compared, paused_events, hooked, gil_events = _layer_intervals(timeline, steps, layers,
                                                                                             options)
    window_start, window_end = table["start"], table["end"]
    points, active = layer_activity(window_start, window_end, intervals)
    seg_start = points[:-1]
    seg_len = np.diff(points)
    step_idx, in_step = windows_at(points, window_start, window_end)
    others = np.array([layer.scope == "others" for layer in layers], dtype=bool)
    fallback = np.array([CALL_FALLBACK in layer.selects for layer in layers], dtype=bool)
    winner = _first_layer(active, np.flatnonzero(~others))
    names = [layer.name for layer in layers]
    resolvers = np.flatnonzero(others & ~fallback)
    for wait_name, fallback_name in WAIT_FALLBACKS:
        if wait_name not in names:
            continue
        waiting = winner == names.index(wait_name)
        if waiting.any():
            # The step's thread waits in a call: the first active "others" layer wins; with nothing
            # recorded elsewhere, the call's own runtime (or, in a tracing call, instantiation).
            resolved = _first_layer(active[waiting], resolvers)
            resolved[resolved < 0] = _fallback_index(layers, fallback_name)
            winner[waiting] = resolved
    # The step's thread outside any compute of its own (an unrecorded stretch, a range, framework
    # runtime) while another thread computes, compiles or runs a collective: the step's thread is
    # waiting for that work, whether the wait is unrecorded (JAX's block_until_ready on CPU,
    # torch.distributed's wait for a Gloo collective) or recorded as a range of the runtime (PjRt's
    # ExecuteHelper while the client thread runs the XLA program, JAX's np.asarray of a result), so
    # the moment is that work — as on a GPU, where a running kernel
    # takes the moment whatever the host does. Input work on other threads is not taken: a
    # prefetching pipeline runs there while the step goes on.
    gap_layers = [i for i, layer in enumerate(layers) if layer.selects in ((GAP_SHORT,), (GAP_LONG,), (PAUSE,))
                  or (layer.scope == "driver" and layer.name in WAITING_IF_OTHERS_COMPUTE)]
    gap_resolvers = np.array([i for i, layer in enumerate(layers) if layer.scope == "others"
                              and layer.bucket in ("kernel", "communication", "graph_build")
                              and CALL_FALLBACK not in layer.selects],
                             dtype=np.int64)
    if len(gap_resolvers):
        unrecorded = (winner < 0) | np.isin(winner, gap_layers)
        if unrecorded.any():
            resolved = _first_layer(active[unrecorded], gap_resolvers)
            winner[np.flatnonzero(unrecorded)[resolved >= 0]] = resolved[resolved >= 0]
    bucket_of_layer = np.array([BUCKETS.index(layer.bucket) if layer.bucket in BUCKETS else -1 for layer in layers])
    bucket = np.where(winner >= 0, at_rows(bucket_of_layer, winner), BUCKETS.index("idle"))
    return _Segments(seg_start, seg_len, step_idx, in_step, winner, bucket, [layer.name for layer in layers],
                     threshold, rule, compared, paused_events, hooked, gil_events, active, layers)


def replay_segments(timeline: Timeline, steps: Steps, options: AttributionOptions | None = None) -> Segments:
    """The attribution's segments as the replay reads them (analyzers/whatif.py): to replay the
    steps under any transformation."""
    mode = "device" if timeline.has_device else "cpu"
    return segments_of(_segments(timeline, steps, mode, options or AttributionOptions()), mode, len(steps.table))


def _fallback_index(layers: list[Layer], name: str) -> int:
    """The "others" layer named ``name`` that takes a wait when nothing is recorded elsewhere."""
    return next(i for i, layer in enumerate(layers) if layer.name == name and CALL_FALLBACK in layer.selects)


def _first_layer(active: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Per segment, the first of ``candidates`` (layer indices, in priority order: ascending) active
    in the bit masks ``active``; -1 if none. The lowest set bit of the masked value, found by
    isolating it (x & -x) and reading its exponent: one pass, whatever the number of layers."""
    chosen = active & active.dtype.type(sum(1 << i for i in candidates.tolist()))
    lowest = chosen & (~chosen + active.dtype.type(1))
    return (np.frexp(lowest)[1] - 1).astype(np.int64)  # frexp(2^k) = (0.5, k + 1); frexp(0) = (0, 0)


def attribute(timeline: Timeline, steps: Steps, options: AttributionOptions | None = None) -> Attribution:
    """Attribute each step window's time to buckets. Buckets sum exactly to the window length."""
    options = options or AttributionOptions()
    mode = "device" if timeline.has_device else "cpu"
    seg = _segments(timeline, steps, mode, options)
    n_steps = len(steps.table)
    sel = seg.in_step
    flat = seg.step[sel] * len(BUCKETS) + seg.bucket[sel]
    per = int_bincount(flat, seg.length[sel], n_steps * len(BUCKETS))
    per = per.reshape(n_steps, len(BUCKETS))
    per_step = Table({bucket: per[:, i] for i, bucket in enumerate(BUCKETS)}, n_steps)
    per_step["total"] = per.sum(axis=1)

    # Details: time of each detail layer ("memcpy.H2D", "launch_overhead.queued" …) that won its segment.
    # (One count over (step, layer) for all of them, not a pass over the segments per layer.)
    detail_cols: dict[str, np.ndarray] = {}
    n_layers = len(seg.layer_names)
    detail_layers = [i for i, name in enumerate(seg.layer_names) if "." in name]
    if detail_layers:
        is_detail = np.zeros(n_layers + 1, dtype=bool)  # (the last entry: winner -1, no layer)
        is_detail[detail_layers] = True
        won = sel & is_detail[seg.winner_layer]
        per_layer = int_bincount(seg.step[won] * n_layers + seg.winner_layer[won], seg.length[won],
                                 n_steps * n_layers).reshape(n_steps, n_layers)
        for i in detail_layers:
            name = seg.layer_names[i]
            detail_cols[name] = detail_cols.get(name, 0) + per_layer[:, i]
    details = Table(dict(sorted(detail_cols.items())), n_steps)
    whatif, critical = whatif_tables(segments_of(seg, mode, n_steps), steps.steady_positions)
    return Attribution(per_step=per_step, details=details, mode=mode, options=options,
                       gap_threshold_ns=seg.gap_threshold_ns, gap_rule=seg.gap_rule,
                       compared_steps=seg.compared_steps, paused_events=seg.paused_events,
                       launch_in_calls=_launch_in_calls(timeline, steps, seg, n_steps), hooked_nodes=seg.hooked_nodes,
                       gil_wait_events=seg.gil_wait_events, whatif=whatif, critical=critical,
                       **_runs_and_records(timeline, seg, n_steps, options))


def _runs_and_records(timeline: Timeline, seg: _Segments, n_steps: int, options: AttributionOptions
                      ) -> dict[str, Table]:
    """``segments`` (the bucket runs, when kept) and ``record_boundaries`` (for a capture with
    unprofiled step times, the only use of the counts: two searches over every host event)."""
    counted = options.count_records and bool((timeline.meta.extra.get("capture") or {}).get("unprofiled_step_ns"))
    if not (options.keep_segments or counted):
        return {}
    runs = _bucket_runs(seg)
    return {**({"segments": runs} if options.keep_segments else {}),
            **({"record_boundaries": record_boundaries(timeline, runs, n_steps)} if counted else {})}


# Host events whose entries and exits record_boundaries places at once.
_RECORDS_AT_ONCE = 1 << 20


def record_boundaries(timeline: Timeline, runs: Table, n_steps: int) -> Table:
    """Per step, how many entries and exits of host events fall in each bucket's runs (``runs``:
    Attribution.segments), a column per bucket (Attribution.record_boundaries)."""
    order = np.argsort(runs["start"], kind="stable")
    start, end = runs["start"][order], runs["end"][order]
    flat = runs["step"][order] * len(BUCKETS) + runs["bucket"].codes[order]
    ev = timeline.table
    host = np.flatnonzero(ev["device"] < 0)
    counts = np.zeros(n_steps * len(BUCKETS), dtype=np.int64)
    for low in range(0, len(host), _RECORDS_AT_ONCE):  # (a block at a time: the temporaries stay small)
        rows = host[low:low + _RECORDS_AT_ONCE]
        entry = ev["ts"][rows]
        for moment in (entry, entry + ev["dur"][rows]):
            run = np.searchsorted(start, moment, side="right") - 1
            inside = (run >= 0) & (moment < end[np.maximum(run, 0)])
            counts += np.bincount(flat[run[inside]], minlength=len(counts))
    per = counts.reshape(n_steps, len(BUCKETS))
    return Table({bucket: per[:, i] for i, bucket in enumerate(BUCKETS)}, n_steps)


# Roles of the calls a compiled step runs through: a tf.function / jitted / torch.compile call and the
# compiled code itself (Attribution.launch_in_calls).
_COMPILED_CALL_ROLES = [Role.CALL.value, Role.CALL_TRACING.value, Role.COMPILED_CODE.value]


def _launch_in_calls(timeline: Timeline, steps: Steps, seg: _Segments, n_steps: int) -> np.ndarray:
    """Per step, the launch/dispatch time (ns) that lies inside the outermost compiled calls on the
    step's thread (roles call / compiled code): the union of those calls' intervals against the
    launch segments, each overlap measured through the runs' cumulative length."""
    out = np.zeros(n_steps, dtype=np.int64)
    ev = timeline.table
    launch = seg.in_step & (seg.bucket == BUCKETS.index("launch_overhead"))
    calls = membership(ev["role"])(_COMPILED_CALL_ROLES) & driver_rows(ev, steps)
    if not launch.any() or not calls.any():
        return out
    rows = outermost_rows(ev, calls)
    run_start, run_end = merged_runs(ev["ts"][rows], ev["ts"][rows] + ev["dur"][rows])
    if not len(run_start):  # (calls that last no time: nothing lies inside them)
        return out
    start = seg.start[launch]
    inside = overlap_with_runs(run_start, run_end, start, start + seg.length[launch])
    np.add.at(out, seg.step[launch].astype(np.int64), inside.astype(np.int64))
    return out


def _bucket_runs(seg: _Segments) -> Table:
    """The step windows cut into consecutive runs of one bucket (``Attribution.segments``)."""
    keep = np.flatnonzero(seg.in_step)
    start = seg.start[keep]
    end = start + seg.length[keep]
    step = seg.step[keep]
    bucket = seg.bucket[keep]
    # A new run starts where the step or the bucket changes, or where segments are not contiguous.
    new_run = np.ones(len(keep), dtype=bool)
    if len(keep) > 1:
        new_run[1:] = (step[1:] != step[:-1]) | (bucket[1:] != bucket[:-1]) | (start[1:] != end[:-1])
    first = np.flatnonzero(new_run)
    last = np.append(first[1:], len(keep)) - 1
    return Table({"step": step[first].astype(np.int64), "start": start[first].astype(np.int64),
                  "end": end[last].astype(np.int64) if len(keep) else np.array([], dtype=np.int64),
                  "bucket": Labels(bucket[first].astype(np.int8), BUCKETS)}, len(first))


def _layer_intervals(
    timeline: Timeline, steps: Steps, layers: list[Layer], options: AttributionOptions
) -> tuple[list[Intervals], int, str, tuple[int, ...], tuple[np.ndarray, np.ndarray], np.ndarray,
           tuple[np.ndarray, np.ndarray]]:
    """(starts, ends) of every layer, in the order given; plus the gap threshold, its rule, the
    steps compared for pauses, the pause taken off each paused event (rows, ns), the node ranges
    that ran hooks and the wait for the interpreter lock taken off each event (rows, ns)."""
    ev = timeline.table
    ts, dur = ev["ts"], ev["dur"]
    is_host = ev["device"] < 0
    carved = carve(ev, steps, options, is_host)
    roles, piece_role, piece_driver = carved.roles, carved.role, carved.driver
    role_in = membership(ev["role"])
    copy_kind_in = membership(ev["copy_kind"])
    copies = role_in([Role.DEVICE_MEMCPY.value, Role.DEVICE_MEMSET.value])
    named_copies = tuple(kind for kind in COPY_KINDS if kind != CopyKind.OTHER.value)  # "other": none of these
    empty = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))

    # How many pieces of each role code (+1: code -1 first) the step's thread and the others have: a
    # layer with none of its roles present is empty without a pass over the pieces.
    n_codes = len(roles.values) + 1
    on_others = np.bincount(piece_role[~piece_driver] + 1, minlength=n_codes)
    on_step_thread = np.bincount(piece_role[piece_driver] + 1, minlength=n_codes)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for layer in layers:
        sel = layer.selects
        if layer.scope == "device":
            if sel[0] == QUEUED:
                out.append(_queued(ev))
            elif sel[0].startswith("<copy "):
                ck = sel[0][len("<copy "):-1]
                mask = copies & (copy_kind_in([ck]) if ck != CopyKind.OTHER.value else ~copy_kind_in(named_copies))
                out.append((ts[mask], ts[mask] + dur[mask]))  # (ends at these rows only: no column of them)
            else:
                mask = role_in(sel) & ~is_host
                out.append((ts[mask], ts[mask] + dur[mask]))
        elif sel == (GAP_SHORT,):
            out.append(carved.short_gaps)
        elif sel == (GAP_LONG,):
            out.append(carved.long_gaps)
        elif sel == (PAUSE,):
            out.append(carved.pauses)
        elif sel == (GIL_WAIT,):
            out.append(carved.lock_waits)
        elif sel == (CALL_FALLBACK,):
            out.append(empty)  # chosen in _segments where no other "others" layer is active
        elif sel == (PER_CALL,):
            out.append(carved.per_call)  # the step thread's pieces, cut off its compute calls
        elif sel == (HOOKS,):
            out.append(carved.hooks[0] if layer.scope == "driver" else carved.hooks[1])
        else:
            table = roles.table(sel)
            present = (on_step_thread if layer.scope == "driver" else on_others if layer.scope == "others"
                       else on_step_thread + on_others)
            if not (table[:-1] & (present[1:] > 0)).any():
                out.append(empty)
                continue
            selected = int(present[1:][table[:-1]].sum() + (present[0] if table[-1] else 0))
            runs = selected_runs(carved.start, carved.end, piece_role, piece_driver, table, layer.scope, selected)
            if runs is not None:
                out.append(runs)
                continue
            wanted = table[piece_role]
            if layer.scope == "driver":
                wanted &= piece_driver
            elif layer.scope == "others":
                wanted &= ~piece_driver
            out.append((carved.start[wanted], carved.end[wanted]))
    return (out, carved.gap_threshold_ns, carved.gap_rule, carved.compared_steps, carved.paused_events,
            carved.hooked_nodes, carved.gil_wait_events)


def _queued(ev: Table) -> tuple[np.ndarray, np.ndarray]:
    """[launch call end, device start) for each device event launched from the host."""
    rows = launch_rows(ev)
    dev = np.flatnonzero(rows >= 0)
    launch = rows[dev]
    ts = ev["ts"]
    launch_end = ts[launch] + ev["dur"][launch]
    return launch_end, np.maximum(ts[dev], launch_end)
