"""Carving: the host events' own time cut into pieces, and the pseudo-events carved out of them and
out of the step thread's gaps before the attribution's layers select them.

An event's own time is not all one thing: a compute call's first µs are its fixed per-call cost,
an autograd node range holds the hooks the engine ran around it, a user frame between two
framework calls is the binding, and a stretch on the step's thread may hold a pause (the machine
took the core: analyzers/pauses.py) or a wait for the interpreter lock (analyzers/gil_waits.py).
:func:`carve` finds each and takes it off its piece, so that each piece's time is counted once,
under the layer of what it was (analyzers/layers.py; docs/attribution.md tells the rules).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from traceview import categories as cat
from traceview.analyzers import gil_waits as gw
from traceview.analyzers.gaps import (UnrecordedGaps, driver_rows, gaps_less_pauses, on_track, split_gaps,
                                      unrecorded_gaps)
from traceview.analyzers.intervals import Intervals, merged_runs
from traceview.analyzers.layers import GLUE, PER_CALL, PER_CALL_MAX_NS
from traceview.analyzers.pauses import MIN_ALIGNED_STEPS, event_pauses
from traceview.arrays import (as_labels, column_codes, combination_codes, first_match, group_medians, membership,
                              rows_at_least, rows_matching, unique_sorted, values_at)
from traceview.normalize import own_pieces_cut, self_time
from traceview.results import AttributionOptions, Steps
from traceview.roles import Role
from traceview.schema import Kind, categorical, has_device_rows
from traceview.table import Table

R = Role

# The autograd engine's own work around one node (checking its outputs, queueing the next nodes:
# torch/csrc/autograd/engine.cpp) is µs: the own time of `autograd::engine::evaluate_function: …`
# is ≤ 65 µs at the 99th percentile of every sample and shared torch trace (CPU and GPU; 292 µs
# at most, once a step). What a node's range holds beyond this, outside its own op, is the hooks
# the engine ran on it (a tensor hook on each weight doing 0.6 ms of Python read as dispatch).
ENGINE_BOOKKEEPING_NS = 100_000
# Roles of the framework's own work on the step's thread (the neighbours that make a short stretch
# of a user frame the call into the framework).
_FRAMEWORK_ROLES = frozenset({R.COMPUTE.value, R.COMPILED_CODE.value, R.DISPATCH.value, R.VIEW_ALLOC.value,
                              R.CALL.value, R.CALL_TRACING.value, R.PYTHON_FRAMEWORK.value})
# Roles of the step thread's events whose own time is the thread running (analyzers/pauses.py
# looks for pauses in them). Not the waits — a call, a sync, the input pipeline, and the device
# runtime's API calls (a copy waits for the device, a launch for a full queue): their length is
# the awaited work's, which may vary from step to step — nor graph building and start-up, which
# happen in some steps only by nature.
_RUNS_ON_THE_THREAD = frozenset({R.COMPUTE.value, R.COMPILED_CODE.value, R.DISPATCH.value, R.VIEW_ALLOC.value,
                                 R.PYTHON_FRAMEWORK.value, R.PYTHON_USER.value, R.ANNOTATION.value})


class RoleCodes:
    """Roles as small integer codes: the role column's categories, then the selectors that only
    pieces carry (``GLUE``, ``PER_CALL``). Millions of pieces are tested by a table lookup on their
    code instead of comparing Python strings; code -1 (a missing role) selects nothing."""

    def __init__(self, ev: Table) -> None:
        role = as_labels(ev["role"]) or categorical(ev["role"])
        self.values: list[str] = [*role.categories.tolist(), GLUE, PER_CALL]
        self._code = {value: i for i, value in enumerate(self.values)}
        dtype = np.int8 if len(self.values) < 127 else np.int16
        self.rows: np.ndarray = role.codes.astype(dtype, copy=False)  # each event's role

    def code(self, value: str) -> int:
        """The code of a role (or piece selector); -2 (matching no row) for one the trace lacks."""
        return self._code.get(value, -2)

    def table(self, wanted: tuple[str, ...] | frozenset[str]) -> np.ndarray:
        """A lookup table: ``table[codes]`` says which codes are one of ``wanted``."""
        table = np.zeros(len(self.values) + 1, dtype=bool)  # the last entry: code -1 (missing)
        for value in wanted:
            if value in self._code:
                table[self._code[value]] = True
        return table


@dataclass(frozen=True)
class Carved:
    """The host events' own pieces once carved, what was carved out of them and out of the step
    thread's gaps (each as intervals: starts, ends), and what the attribution reports of it."""

    start: np.ndarray  # each own piece's start (ns), past its call's per-call cost
    end: np.ndarray  # each own piece's end (ns), less the pause, hooks or lock wait taken off it
    role: np.ndarray  # each piece's role code (roles; GLUE where a user frame is the binding)
    driver: np.ndarray  # whether each piece is on the step's thread
    roles: RoleCodes
    short_gaps: Intervals  # the step thread's unrecorded gaps up to the threshold (framework glue)
    long_gaps: Intervals  # … and beyond it (host work the profiler did not see)
    gap_threshold_ns: int
    gap_rule: str
    pauses: Intervals  # in events' own time and in gaps
    lock_waits: Intervals  # waits for the interpreter lock
    per_call: Intervals  # the per-call cost of the step thread's compute calls
    hooks: tuple[Intervals, Intervals]  # the engine's hooks on the step's thread, on every host thread
    compared_steps: tuple[int, ...]  # step positions compared for pauses
    paused_events: tuple[np.ndarray, np.ndarray]  # (rows, ns): the pause taken off each event's own time
    hooked_nodes: np.ndarray  # rows of the node ranges around which the engine ran hooks (hooked_nodes)
    gil_wait_events: tuple[np.ndarray, np.ndarray]  # (rows, ns): the lock wait taken off each event's own time


def carve(ev: Table, steps: Steps, options: AttributionOptions, is_host: np.ndarray) -> Carved:
    """Cut the host events' own time into pieces (``is_host``: the host events) and carve out of
    them, and out of the step thread's unrecorded gaps, the waits for the interpreter lock, the
    pauses, the engine's hooks, the user frames' binding glue and the compute calls' per-call cost."""
    roles = RoleCodes(ev)
    on_driver = driver_rows(ev, steps)
    # The host pieces are cut on a second thread (a compiled sweep that lets go of the interpreter
    # lock) while this one finds the pauses and the step thread's gaps, which do not need them.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="traceview-pieces") as helper:
        pieces = helper.submit(own_pieces_cut(ev, is_host))
        paused_rows, paused_ns, shape_of_step = _event_pauses(ev, on_driver, steps.table["cold"])
        gaps = unrecorded_gaps(ev, steps)
        host_start, host_end, host_row = pieces.result()
    piece_role = roles.rows[host_row]
    piece_driver = on_driver[host_row]
    # The waits for the interpreter lock first: a wait also makes its place last longer in one step
    # than in the others, a pause's shape, and its own shape (whole switch intervals) says more.
    # What a pause claims beyond a wait at the same place stays a pause.
    gil_waits, gap_wait, gil_events = _gil_waits(ev, steps, gaps, host_start, host_end, host_row, piece_role,
                                                 piece_driver, roles)
    waited = np.zeros(len(ev), dtype=np.int64)
    waited[gil_events[0]] = gil_events[1]
    paused_ns = paused_ns - waited[paused_rows]
    del waited
    still_paused = paused_ns > 0
    event_pause, paused_events = _carve(host_start, host_end, host_row, paused_rows[still_paused],
                                        paused_ns[still_paused], len(ev))
    gaps = gaps_less_pauses(gaps, gap_wait, shape_of_step)
    short, long_, threshold, rule = split_gaps(gaps, options)
    hooks, hooked = _engine_hooks(ev, host_start, host_end, host_row, on_driver, gil_events)
    del on_driver
    pauses = (np.concatenate((event_pause[0], gaps.pauses[0])), np.concatenate((event_pause[1], gaps.pauses[1])))
    del paused_rows, paused_ns, event_pause, gaps
    python_frame = membership(ev["kind"])([Kind.PYTHON.value])[host_row]
    glue = _python_glue(host_start, host_end, piece_role, piece_driver, python_frame, threshold, roles)
    del python_frame
    piece_role[glue] = roles.code(GLUE)
    del glue
    # On a device trace a host op's own time is its dispatch (launch_overhead.dispatch, where the
    # device is idle), the per-call cost included: the split is a CPU trace's (its layer is too).
    # Split there as well, it left the first 3 µs of every aten op in no layer: "idle (nothing
    # recorded)", 2.4 ms a step of 400 tiny ops on an H200.
    per_call = (_split_call_cost(ev, host_start, host_end, host_row, piece_role, piece_driver, roles)
                if not has_device_rows(ev) else (np.array([], dtype=np.int64), np.array([], dtype=np.int64)))
    return Carved(host_start, host_end, piece_role, piece_driver, roles, short, long_, threshold, rule, pauses,
                  gil_waits, per_call, hooks, tuple(sorted(shape_of_step)), paused_events, hooked, gil_events)


def _split_call_cost(
    ev: Table, start: np.ndarray, end: np.ndarray, row: np.ndarray, role: np.ndarray, driver: np.ndarray,
    roles: RoleCodes,
) -> tuple[np.ndarray, np.ndarray]:
    """Take the fixed per-call cost off the step thread's compute calls (as ``launch_overhead.per_call``).

    A compute call's own time is the call's fixed cost (dispatcher, output allocation, kernel
    context) plus the math. The fixed cost is measured on the trace itself:

    - when one event name is the runtime entry point for every op (TF eager runs each op through
      ``KernelAndDeviceFunc::Run``, whatever its type), the calls of that name that run no-math
      ops (role ``view_alloc``: ReadVariableOp, Identity …) measure what a call costs by itself:
      their median own time;
    - otherwise the first ``PER_CALL_MAX_NS`` of each call's own time: what a call that does
      no math costs an aten op. An op on tiny inputs gives up (nearly) all its time, an op on
      large inputs keeps nearly all of it as math.

    The pieces (``start``, ``end``, their event ``row`` and piece ``role`` codes, on the ``driver``)
    keep the math: ``start`` is moved past the cost in place. Returns the cost pieces (starts, ends).
    """
    none = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    compute_pieces = np.flatnonzero((role == roles.code(R.COMPUTE.value)) & driver)
    if not len(compute_pieces):
        return none
    names = ev["name"].codes
    cost = np.full(len(compute_pieces), float(PER_CALL_MAX_NS))
    view_alloc = roles.code(R.VIEW_ALLOC.value)
    no_math = np.flatnonzero(roles.rows == view_alloc)
    if len(no_math):
        # A shared entry point: its fixed cost is measured on its own no-math calls (a no-math
        # call's pieces are the pieces of role view_alloc: only user Python pieces change role).
        no_math_pieces = np.flatnonzero(role == view_alloc)
        own = np.bincount(row[no_math_pieces], weights=end[no_math_pieces] - start[no_math_pieces],
                          minlength=len(ev))
        shared_names, shared_cost = group_medians(own[no_math], names[no_math])
        measured = first_match(shared_names, shared_cost, names[row[compute_pieces]], np.nan)
        cost = np.where(np.isnan(measured), cost, measured)
    ok = cost > 0
    pieces = compute_pieces[ok]
    if not len(pieces):
        return none
    # The first piece of each call carries the split: its first in the pieces' order, which keeps
    # each row's pieces in time order (normalize.own_pieces).
    _, first = combination_codes(row[pieces])
    pieces, cost = pieces[first], cost[ok][first].astype(np.int64)
    cut = np.minimum(start[pieces] + cost, end[pieces])
    cost_start = start[pieces]
    start[pieces] = cut
    return cost_start, cut


def _not_cold(cold: np.ndarray) -> np.ndarray:
    """A lookup by step position, ``table[step]``, of the steps that are not ``cold`` (per step
    position); the last entry, for step -1 (no step), is False."""
    table = np.zeros(len(cold) + 1, dtype=bool)
    table[:-1] = ~cold.astype(bool)
    return table


def _event_pauses(ev: Table, on_driver: np.ndarray, cold: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """The step thread's events whose own time holds a pause (analyzers/pauses.py), the pause of
    each (ns), and the shape group of each step that was compared (step position → group); steps
    that are ``cold`` (per step position) are not compared."""
    none = (np.array([], dtype=np.int64), np.array([], dtype=np.int64), {})
    step_all = ev["step"]
    steady = _not_cold(cold)
    on_thread = on_driver & ~membership(ev["kind"])([Kind.STEP.value])
    rows = np.flatnonzero(on_thread & steady[step_all])
    if len(rows) < MIN_ALIGNED_STEPS:
        return none
    step = step_all[rows]
    if (step[1:] < step[:-1]).any():  # (steps follow one another in time: as a rule, already so)
        order = np.argsort(step, kind="stable")  # by step, then time (the table's order)
        rows, step = rows[order], step[order]
    own = self_time(ev, children=on_thread)  # less every child on the thread: Python frames, ranges too
    position, pause, shape_of_step = event_pauses(rows, step, ev["name"].codes[rows], own)
    paused = rows[position]
    runs_here = np.isin(values_at(ev["role"], paused), list(_RUNS_ON_THE_THREAD))  # (the few paused rows only)
    return paused[runs_here].astype(np.int64), pause[runs_here], shape_of_step


# Roles whose own time on the step's thread may hold a wait for the interpreter lock (taken back
# after a framework call: analyzers/gil_waits.py): the frameworks' runtime, bindings and Python.
# Not compute, whose math holds no lock; not the user's frames and ranges, where the user's own
# code may last a whole interval (time.sleep(0.005) twice a step would read as two waits).
_MAY_WAIT_FOR_THE_LOCK = _RUNS_ON_THE_THREAD - {R.COMPUTE.value, R.COMPILED_CODE.value, R.PYTHON_USER.value,
                                                R.ANNOTATION.value}
# The own time of a compiled function's call (jax.jit's PjitFunction, a tf.function's call) holds
# the wait after the call (a jax.jit step: the truth case jax-gil-contention), but also, where the
# function's program runs on other threads, the wait for that run: a call's stretch is a candidate
# only where what ran elsewhere is not what it waited for (gil_waits.quiet). So is a user frame's
# own time after a native call returns (_returning_from_native), which may wait for a result.
_MAY_WAIT_FOR_THE_LOCK_WHEN_QUIET = frozenset({R.CALL.value})


def _gil_waits(ev: Table, steps: Steps, gaps: UnrecordedGaps, start: np.ndarray, end: np.ndarray,
               row: np.ndarray, role: np.ndarray, driver: np.ndarray, roles: RoleCodes
               ) -> tuple[Intervals, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The waits for the interpreter lock on the step's thread (analyzers/gil_waits.py), looked for
    in its unrecorded ``gaps`` and in the own pieces (``start``, ``end``, ``row``, piece ``role``
    codes, on the ``driver``) of its events that do not compute, in the steady steps. Each wait
    is taken off the end of its piece (``end`` changed in place). Returns the waits (starts,
    ends), the wait at the end of each gap (ns, per gap), and the wait in each event's own time
    (rows, ns)."""
    none = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    no_gap_wait = np.zeros(len(gaps.start), dtype=np.int64)
    may_wait = _MAY_WAIT_FOR_THE_LOCK | _MAY_WAIT_FOR_THE_LOCK_WHEN_QUIET
    long_pieces = rows_at_least(start, end, gw.SWITCH_INTERVAL_NS)
    long_stretches = int(np.count_nonzero(driver[long_pieces] & roles.table(may_wait | {R.PYTHON_USER.value})[
        role[long_pieces]])) + int(np.count_nonzero(gaps.end - gaps.start >= gw.SWITCH_INTERVAL_NS))
    steady = _not_cold(steps.table["cold"])
    # (Nearly every trace: too few stretches of a whole interval for any wait rule, and the
    # per-candidate passes below, millions of pieces on a large trace, need not run.)
    if gw.too_few_to_be_contended(long_stretches, int(np.count_nonzero(steady))):
        return none, no_gap_wait, none
    # Pieces that also hold waits for other work (a program's run, a result): candidates only
    # where quiet.
    only_when_quiet = driver & (roles.table(_MAY_WAIT_FOR_THE_LOCK_WHEN_QUIET)[role]
                                | _returning_from_native(ev, start, row, driver, role, roles))
    candidates = np.flatnonzero(driver & roles.table(_MAY_WAIT_FOR_THE_LOCK)[role] | only_when_quiet)
    step_all = ev["step"]
    candidate_step = step_all[row[candidates]]
    kept = steady[candidate_step] & (end[candidates] > start[candidates])
    candidates, candidate_step = candidates[kept], candidate_step[kept]
    in_steady_gap = steady[gaps.step] & (gaps.end > gaps.start)
    names = ev["name"].codes
    # Only stretches of a whole interval or longer, and the others at a place where one of them
    # waits (wait_ns takes the place's median of those that do not), bear on anything below: the
    # rest (millions of short pieces) are let go before the costlier passes. (Exact: contended and
    # wait_ns see the same waits, long stretches and places' medians.)
    piece_waits, piece_multiple = gw.quantized(end[candidates] - start[candidates])
    gap_waits, gap_multiple = gw.quantized(gaps.end - gaps.start)
    gap_waits &= in_steady_gap
    place = names[row[candidates]].astype(np.int64)
    waiting_place = np.zeros(len(ev["name"].categories) + 1, dtype=bool)  # (the last entry: no name, -1)
    waiting_place[place[piece_waits]] = True
    relevant = (piece_multiple >= 1) | waiting_place[place]
    candidates, candidate_step = candidates[relevant], candidate_step[relevant]
    if not gap_waits.any():  # (the gaps are one place: all of them matter where one waits)
        in_steady_gap &= gap_multiple >= 1
    del piece_waits, piece_multiple, gap_waits, gap_multiple, place, waiting_place, relevant
    stretch_start = np.concatenate((start[candidates], gaps.start[in_steady_gap])).astype(np.int64)
    stretch_end = np.concatenate((end[candidates], gaps.end[in_steady_gap])).astype(np.int64)
    is_wait, multiple = gw.quantized(stretch_end - stretch_start)
    if not is_wait.any():
        return none, no_gap_wait, none
    # Quiet where the wait would be: the stretch's last whole intervals (the lock is taken back as
    # the framework call returns).
    tail_start = np.where(is_wait, np.maximum(stretch_start, stretch_end - multiple * gw.SWITCH_INTERVAL_NS),
                          stretch_start)
    quiet = gw.quiet(tail_start, stretch_end, *_recorded_elsewhere(ev, steps))
    considered = quiet.copy()
    considered[:len(candidates)] |= ~only_when_quiet[candidates]
    considered[len(candidates):] = True
    stretches = gw.Stretches(
        (stretch_end - stretch_start)[considered],
        np.concatenate((names[row[candidates]].astype(np.int64),
                        np.full(int(in_steady_gap.sum()), -1)))[considered],
        step=np.concatenate((candidate_step, gaps.step[in_steady_gap])).astype(np.int64)[considered],
        quiet=quiet[considered],
    )
    if not gw.contended(stretches, int(np.count_nonzero(steady))):
        return none, no_gap_wait, none
    wait = np.zeros(len(stretch_start), dtype=np.int64)
    wait[considered] = gw.wait_ns(stretches)
    piece_wait, gap_wait = wait[:len(candidates)], wait[len(candidates):]
    waiting = piece_wait > 0
    pieces = candidates[waiting]
    old_end = end[pieces].copy()
    end[pieces] = old_end - piece_wait[waiting]
    order = np.argsort(row[pieces], kind="stable")
    rows, first = np.unique(row[pieces][order], return_index=True)
    per_row = np.add.reduceat(piece_wait[waiting][order], first) if len(rows) else []
    gap_cut = np.zeros(len(gaps.start), dtype=np.int64)
    gap_cut[np.flatnonzero(in_steady_gap)] = gap_wait
    cut = gap_cut > 0
    waits = (np.concatenate((end[pieces], (gaps.end - gap_cut)[cut])).astype(np.int64),
             np.concatenate((old_end, gaps.end[cut])).astype(np.int64))
    return waits, gap_cut, (rows.astype(np.int64), np.asarray(per_row, dtype=np.int64))


def _returning_from_native(ev: Table, start: np.ndarray, row: np.ndarray, driver: np.ndarray,
                           role: np.ndarray, roles: RoleCodes) -> np.ndarray:
    """Per own piece: a piece of a user's Python frame on the step's thread that begins as a
    recorded native call inside it returns (an op, a runtime range). A Python tracer records the
    frames, not the native call's way back into Python: the wait to take the lock back after a
    call lands in the calling frame's own time (a JAX step's result read with the Python tracer
    on: the truth case jax-gil-contention-pytracer). A user's own time.sleep is a recorded call
    of its own."""
    user_piece = driver & roles.table(frozenset({R.PYTHON_USER.value}))[role]
    if not user_piece.any():
        return user_piece
    parent = ev["parent"]
    native = np.flatnonzero(~membership(ev["kind"])([Kind.PYTHON.value, Kind.STEP.value]) & (parent >= 0))
    returns = ev["ts"][native] + ev["dur"][native]
    order = np.argsort(returns, kind="stable")
    returns, caller = returns[order], parent[native][order]
    if not len(returns):
        return np.zeros(len(start), dtype=bool)
    at = np.clip(np.searchsorted(returns, start), 0, len(returns) - 1)
    return user_piece & (returns[at] == start) & (caller[at] == row)


def _recorded_elsewhere(ev: Table, steps: Steps) -> Intervals:
    """What else recorded runs, as disjoint runs: ops, runtime calls and kernels on the other threads
    and devices (their Python frames aside: a thread that holds the interpreter lock runs them)."""
    elsewhere = ~on_track(ev, steps.driver_track) & ~membership(ev["kind"])([Kind.PYTHON.value])
    ts = ev["ts"]
    return merged_runs(ts[elsewhere], (ts + ev["dur"])[elsewhere])


def hooked_nodes(ev: Table, lock_waits: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """The autograd engine's node ranges (categories.TORCH_ENGINE_NODE, role dispatch) around which
    it ran hooks, and the engine's usual bookkeeping in a range (the median own time of the
    trace's other node ranges, ns). A node ran hooks where its range's own time passes
    ENGINE_BOOKKEEPING_NS in at least half the steps that evaluate that node (by name): hooks run
    every step, where a stall of the machine lands once (a ReluBackward0 range of 315 µs, once
    in five steps, with no hook). A range whose own time held a wait for the interpreter lock
    (``lock_waits``: rows, ns; _gil_waits) is no evidence of hooks: the rest of its own time is
    the hand-over of the lock."""
    node_ranges = rows_matching(ev["name"], cat.TORCH_ENGINE_NODE) & membership(ev["role"])([R.DISPATCH.value])
    if not node_ranges.any():
        return node_ranges, 0
    # A node that is a call of compiled code (AOT autograd's CompiledFunctionBackward: role call)
    # has runtime work of its own around it (256-292 µs a step on the shared V100 trace), not hooks.
    name_codes, name_values = column_codes(ev["name"])
    calls = {name_values[c] for c in unique_sorted(name_codes[membership(ev["role"])([R.CALL.value])]).tolist()
             if c >= 0}
    if calls:
        around_call = np.array([cat.TORCH_ENGINE_NODE.sub("", v, count=1) in calls for v in name_values] + [False],
                               dtype=bool)
        node_ranges &= ~around_call[name_codes]
    own = self_time(ev)
    if lock_waits is not None and len(lock_waits[0]):
        node_ranges = node_ranges.copy()
        node_ranges[lock_waits[0]] = False
    heavy = node_ranges & (own > ENGINE_BOOKKEEPING_NS)
    light = node_ranges & ~heavy
    # (Every range heavy — hooks on every node: a µs of bookkeeping each is left to them.)
    bookkeeping = int(np.median(own[light])) if light.any() else 0
    if not heavy.any():
        return heavy, bookkeeping
    name = name_codes.astype(np.int64)
    step = ev["step"].astype(np.int64)
    # Per node name, the steps that evaluate it and those where its range ran long.
    pairs_all = np.unique(np.stack((name[node_ranges], step[node_ranges]), axis=1), axis=0)
    pairs_heavy = np.unique(np.stack((name[heavy], step[heavy]), axis=1), axis=0)
    n_names = int(name.max()) + 1
    evaluated = np.bincount(pairs_all[:, 0], minlength=n_names)
    long_in = np.bincount(pairs_heavy[:, 0], minlength=n_names)
    every_step = 2 * long_in >= evaluated + 1
    return heavy & every_step[np.maximum(name, 0)], bookkeeping


def _engine_hooks(ev: Table, start: np.ndarray, end: np.ndarray, row: np.ndarray,
                  on_driver: np.ndarray, lock_waits: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[tuple[Intervals, Intervals], np.ndarray]:
    """The hooks the autograd engine ran around its nodes (:func:`hooked_nodes`): each hooked
    range's own time beyond the engine's usual bookkeeping, taken off its longest own piece
    (``end`` changed in place, as for a pause). Returns the intervals on the step's thread and on
    every host thread, and the hooked ranges' rows. With Python events recorded, a Python hook's
    frames are inside the range and its own time stays bookkeeping."""
    none = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    hooked, bookkeeping = hooked_nodes(ev, lock_waits)
    rows = np.flatnonzero(hooked)
    if not len(rows):
        return (none, none), rows
    pieces = np.flatnonzero(hooked[row])
    own = np.bincount(row[pieces], weights=end[pieces] - start[pieces], minlength=len(ev)).astype(np.int64)
    beyond = np.maximum(own[rows] - bookkeeping, 0)
    hooks, (hooked_rows, _) = _carve(start, end, row, rows[beyond > 0], beyond[beyond > 0], len(ev))
    on_step_thread = on_driver[hooked_rows]
    return ((hooks[0][on_step_thread], hooks[1][on_step_thread]), hooks), rows


def _carve(start: np.ndarray, end: np.ndarray, row: np.ndarray, carved_rows: np.ndarray,
           carved_ns: np.ndarray, n_rows: int) -> tuple[Intervals, Intervals]:
    """Take an amount of each of ``carved_rows``' own time (a pause, hooks) off the end of its
    longest own piece (where in the event it happened is not recorded; the step's sums do not
    depend on it). ``end`` is changed in place; returns the intervals taken (starts, ends) and the
    amount taken off each event (rows, ns)."""
    none = (np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    if not len(carved_rows):
        return none, none
    amount = np.zeros(n_rows, dtype=np.int64)
    amount[carved_rows] = carved_ns
    pieces = np.flatnonzero((amount > 0)[row])  # (a flag per piece, not an amount: millions of pieces)
    if not len(pieces):
        return none, none
    length = end[pieces] - start[pieces]
    pieces = pieces[np.lexsort((-length, row[pieces]))]
    longest = np.ones(len(pieces), dtype=bool)
    longest[1:] = row[pieces][1:] != row[pieces][:-1]
    pieces = pieces[longest]
    cut = np.minimum(amount[row[pieces]], end[pieces] - start[pieces])
    old_end = end[pieces].copy()
    end[pieces] = old_end - cut
    return (end[pieces].astype(np.int64), old_end.astype(np.int64)), (row[pieces].astype(np.int64), cut.astype(np.int64))


def _python_glue(start: np.ndarray, end: np.ndarray, role: np.ndarray, driver: np.ndarray, python_frame: np.ndarray,
                 threshold: int, roles: RoleCodes) -> np.ndarray:
    """Pieces of a user Python frame's own time on the step's thread that sit between two pieces
    of framework work and last no longer than the gap threshold: the Python → framework call
    (argument parsing in the binding, which the Python tracer does not record as a frame). Only
    a Python frame's (``python_frame``): an op of the user's Python (a custom autograd.Function's
    backward, roles._python_functions) records the Python itself, not a call into the framework."""
    glue = np.zeros(len(start), dtype=bool)
    user_code = roles.code(R.PYTHON_USER.value)
    rows = np.flatnonzero(driver)
    if len(rows) < 3 or threshold <= 0 or not (role[rows] == user_code).any():  # (no user frame: no sort)
        return glue
    rows = rows[np.lexsort((end[rows], start[rows]))]
    row_role = role[rows]
    framework = roles.table(_FRAMEWORK_ROLES)[row_role]
    user = row_role == user_code
    short = (end[rows] - start[rows]) <= threshold
    touching_prev = np.zeros(len(rows), dtype=bool)
    touching_next = np.zeros(len(rows), dtype=bool)
    touching_prev[1:] = framework[:-1] & (end[rows[:-1]] == start[rows[1:]])
    touching_next[:-1] = framework[1:] & (start[rows[1:]] == end[rows[:-1]])
    glue[rows[user & python_frame[rows] & short & touching_prev & touching_next]] = True
    return glue
