"""What would fixing it buy? Each step replayed with a cause removed or scaled, along the
dependencies the trace records.

A step window is a sequence of the attribution's elementary segments (analyzers/attribution.py:
the moments between which the set of active layers does not change). Each moment is work on one
or more **lanes**, the resources a step's time runs on:

- **H**, the step's thread (on a device trace, the host: its threads' recorded work);
- **O**, the other host threads of a CPU trace (executor threads running a tf.function's ops,
  XLA's worker threads, tf.data's producers, a tf.py_function's Python);
- **D**, the device streams.

The dependencies are what the trace shows of how the lanes hand work to each other:

- program order: each lane's work runs one moment after the other;
- a **wait** of the step's thread ends when the work it waits for ends: on a CPU trace, the
  moments the attribution gives to the other threads (the thread waits in a call, a sync, or an
  unrecorded stretch while others compute), awaiting lane O; on a device trace, a host sync
  (a copy call from or to pageable memory or a launch into a full queue while the device works,
  or host time with nothing recorded while the device runs), awaiting lane D. The time from the
  awaited work's end to the wait's end (the call's return) is kept as it was;
- a **hand-off**: work that starts on O or D after that lane was idle starts no earlier than the
  step's thread reached the moment it was started from (its launch, its call, its dispatch), kept
  at its original distance;
- a moment the attribution gives to O while the step's thread runs work of its own (Python while a
  dispatched program runs) is a wait as recorded; with that work removed the thread goes on at
  once, and the step still ends no earlier than O's work, as the unmodified wait made it (the
  result is read later, where no wait is recorded when the program was done by then).

A wait with nothing recorded on the awaited lane (DataLoader worker processes, which the trace
does not hold; a call's runtime with no event) cannot be tied to the work it waits for: it keeps
its length (scaled with its own cause), and the step says how much of its time rests on such
**unsupported waits** (predicted from fewer edges).

The replay walks each step's moments once, in order, keeping a clock per lane in the replayed
time: work advances its lane's clock by its length times the factor of its cause (on a lane where
several causes are active at once, as two other threads computing and mapping input, the
slowest remaining one sets the pace); a wait sets the step thread's clock to the awaited lane's,
plus the return; a hand-off lifts the lane's clock to the step thread's. Unchanged factors give
back every step exactly (a test holds this on every sample, truth and shared trace). The step's
replayed length is the latest clock at its end, and the **critical path** is the history of that
clock: the time each cause and each lane contributed to it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from traceview import compiled
from traceview.analyzers.layers import CALL_FALLBACK, DEVICE_BOUND_CALLS, QUEUED, WAIT, WAIT_SYNC, WAIT_TRACING, Layer
from traceview.results import BUCKETS, LANES

# The lanes, as codes (in the order of results.LANES).
H, O, D = 0, 1, 2
NO_LANE = -1


@dataclass(frozen=True)
class LaneTable:
    """Per attribution layer (in the order of the segments' bit masks): its lane, whether it is the
    step thread waiting, whether it is a wait with nothing recorded elsewhere, its bucket."""

    lane: np.ndarray  # int8 per layer: H, O, D or NO_LANE (a launched kernel's queue is no work)
    # bool per layer: the step's thread waits (CPU: a call, a sync; device: a pageable copy's call or
    # a launch into a full queue, while the device works)
    waits: np.ndarray
    unsupported: np.ndarray  # bool per layer: a wait nothing recorded elsewhere explains
    bucket: np.ndarray  # int per layer: index into BUCKETS
    names: tuple[str, ...]  # the layers' names ("bucket.detail")

    def mask(self, lane: int) -> int:
        """The bit mask of the layers on ``lane``."""
        return sum(1 << i for i in np.flatnonzero(self.lane == lane).tolist())


def lane_table(layers: list[Layer], mode: str) -> LaneTable:
    """Each layer's lane in ``mode`` ("cpu": the step's thread and the other threads; "device":
    the host and the device)."""
    lane, waits, unsupported = [], [], []
    for layer in layers:
        if layer.scope == "device":
            lane.append(NO_LANE if layer.selects == (QUEUED,) else D)
        elif layer.scope == "others":
            lane.append(NO_LANE if layer.selects == (CALL_FALLBACK,) else O)
        else:  # driver, host
            lane.append(H)
        waits.append(layer.scope == "driver" and layer.name in (WAIT, WAIT_TRACING, WAIT_SYNC)
                     or bool(layer.selects) and set(layer.selects) <= DEVICE_BOUND_CALLS)
        unsupported.append(layer.scope == "others" and layer.selects == (CALL_FALLBACK,))
    return LaneTable(np.array(lane, dtype=np.int8), np.array(waits, dtype=bool), np.array(unsupported, dtype=bool),
                     np.array([_bucket_of(layer) for layer in layers], dtype=np.int64),
                     tuple(layer.name for layer in layers))


def _bucket_of(layer: Layer) -> int:
    """The bucket a layer's time belongs to; a blocking sync's wait is sync_wait's (removing it
    removes the blocking); a wait in a call belongs to what it waits for (-1: none of its own)."""
    if layer.bucket in BUCKETS:
        return BUCKETS.index(layer.bucket)
    return BUCKETS.index("sync_wait") if layer.name == WAIT_SYNC else -1


# From this many segments the compiled replay of several rows of factors is split over two
# threads (a row of the 104 MB XPlane's 5.0 M segments takes 17 ms; a thread's start, ~0.1 ms).
SPLIT_SEGMENTS = 100_000


@dataclass(frozen=True)
class Replayed:
    """The steps replayed under one set of factors."""

    length_ns: np.ndarray  # float per step: the replayed step
    path_ns: np.ndarray  # float (steps, BUCKETS): each bucket's time on the critical path
    lane_ns: np.ndarray  # float (steps, lanes): each lane's time on the critical path
    unsupported_ns: np.ndarray  # float per step: waits the trace cannot tie to the work they wait for


def replay(start: np.ndarray, length: np.ndarray, step: np.ndarray, in_step: np.ndarray, active: np.ndarray,
           winner: np.ndarray, table: LaneTable, mode: str, n_steps: int, factors: np.ndarray) -> list[Replayed]:
    """Replay every step window of the segments (``start``, ``length``, their ``step`` position,
    ``in_step``, the ``active`` bit masks and the attribution's ``winner`` layer) under each row
    of ``factors`` (a factor per layer on its time: 1 as recorded, 0 removed): one
    :class:`Replayed` per row. Compiled where the extension is built (_passes.c's ``replay``,
    the same walk), else walked here."""
    factors = np.atleast_2d(np.asarray(factors, dtype=np.float64))
    if compiled.passes is not None and len(table.names) <= 64 and len(BUCKETS) <= 16:
        return _replay_compiled(start, length, step, in_step, active, winner, table, mode, n_steps, factors)
    return [_replay_walked(start, length, step, in_step, active, winner, table, mode, n_steps, row) for row in factors]


def _replay_compiled(start: np.ndarray, length: np.ndarray, step: np.ndarray, in_step: np.ndarray,
                     active: np.ndarray, winner: np.ndarray, table: LaneTable, mode: str, n_steps: int,
                     factors: np.ndarray) -> list[Replayed]:
    n = len(factors)
    factors = np.ascontiguousarray(factors, dtype=np.float64)
    out_length = np.zeros((n, n_steps))
    out_path = np.zeros((n, n_steps, len(BUCKETS)))
    out_lanes = np.zeros((n, n_steps, len(LANES)))
    out_unsupported = np.zeros((n, n_steps))
    segments = (
        np.ascontiguousarray(start, dtype=np.int64), np.ascontiguousarray(length, dtype=np.int64),
        np.ascontiguousarray(step, dtype=np.int64), np.ascontiguousarray(in_step).view(np.uint8),
        np.ascontiguousarray(active, dtype=np.uint64), np.ascontiguousarray(winner, dtype=np.int64),
        np.ascontiguousarray(table.lane, dtype=np.int8), np.ascontiguousarray(table.waits, dtype=np.uint8),
        np.ascontiguousarray(table.unsupported, dtype=np.uint8), np.ascontiguousarray(table.bucket, dtype=np.int64))

    def run(rows: slice) -> None:
        compiled.passes.replay(*segments, factors[rows], int(mode == "cpu"), n_steps, len(BUCKETS),
                               BUCKETS.index("idle"), BUCKETS.index("sync_wait"), out_length[rows], out_path[rows],
                               out_lanes[rows], out_unsupported[rows])

    if n > 1 and len(start) >= SPLIT_SEGMENTS:
        # Each row of factors is a replay of its own, written to its own rows of the outputs, and
        # the pass lets go of the interpreter lock: half the rows on a second thread.
        half = (n + 1) // 2
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="traceview-replay") as helper:
            second = helper.submit(run, slice(half, n))
            run(slice(0, half))
            second.result()
    else:
        run(slice(0, n))
    return [Replayed(out_length[i], out_path[i], out_lanes[i], out_unsupported[i]) for i in range(n)]


def _replay_walked(start: np.ndarray, length: np.ndarray, step: np.ndarray, in_step: np.ndarray, active: np.ndarray,
                   winner: np.ndarray, table: LaneTable, mode: str, n_steps: int, factors: np.ndarray) -> Replayed:
    """The replay under one row of factors, walked in Python (the compiled pass's twin)."""
    out = Replayed(np.zeros(n_steps), np.zeros((n_steps, len(BUCKETS))), np.zeros((n_steps, len(LANES))),
                   np.zeros(n_steps))
    rows = np.flatnonzero(in_step & (step >= 0) & (step < n_steps))
    if not len(rows):
        return out
    bounds = np.flatnonzero(np.diff(step[rows])) + 1
    for chunk in np.split(rows, bounds):
        masks = active[chunk]
        # A layer active in every moment of the step (a thread running beside it all along) is
        # nothing the step waits for: it neither ends a wait nor the step.
        background = int(np.bitwise_and.reduce(masks)) if len(masks) else 0
        state = _StepReplay(table, mode, factors, float(start[chunk[0]]), background)
        _replay_step(state, start, length, active, winner, chunk)
        state.finish(out, int(step[chunk[0]]))
    return out


class _Clock:
    """A lane's clock in the replayed time, with the history that set it: the time each bucket
    and each lane put on it."""

    def __init__(self, t: float) -> None:
        self.t = t
        self.path = np.zeros(len(BUCKETS))
        self.lanes = np.zeros(len(LANES))

    def advance(self, ns: float, bucket: int, lane: int) -> None:
        self.t += ns
        self.path[bucket] += ns
        self.lanes[lane] += ns

    def take(self, t: float, path: np.ndarray, lanes: np.ndarray) -> None:
        """Move to ``t`` (later) with the history that reached it."""
        self.t, self.path, self.lanes = t, path.copy(), lanes.copy()


class _StepReplay:
    """One step's replay: a clock per lane, and the step thread's wait in progress."""

    def __init__(self, table: LaneTable, mode: str, factors: np.ndarray, t0: float, background: int) -> None:
        self.table, self.mode, self.factors, self.t0 = table, mode, factors, t0
        self.awaited = O if mode == "cpu" else D
        self.clocks = [_Clock(t0), _Clock(t0), _Clock(t0)]
        self.busy = [False, False, False]  # whether each lane worked in the previous moment
        self.last_busy_end = [t0, t0, t0]  # each lane's last working moment's end, in recorded time
        self.worked_in_wait = [False, False, False]
        # The layers of each other lane that count as its work: not one active all through the step.
        self.layers = [[k for k in np.flatnonzero(table.lane == lane).tolist() if not background >> k & 1]
                       for lane in range(len(LANES))]
        self.unsupported = 0.0
        self.waiting = False
        self.waited_for_others = False  # whether the step thread waited for the other threads' work

    # The step thread's wait: where it began in the replay, its history then, and what its moments
    # hold so far.
    def begin_wait(self) -> None:
        h = self.clocks[H]
        self.waiting = True
        self.wait_new = h.t
        self.wait_path, self.wait_lanes = h.path.copy(), h.lanes.copy()
        self.since_awaited = np.zeros(len(BUCKETS))  # the moments since the awaited lane last worked, scaled
        self.back = 0.0  # … in all: the return, scaled by its causes (a call's own runtime)
        self.fixed = 0.0  # the moments, scaled by their causes (a wait nothing recorded explains)
        self.fixed_path = np.zeros(len(BUCKETS))
        self.worked_in_wait = [False, False, False]

    def wait_moment(self, span: float, cause: int) -> None:
        bucket = int(self.table.bucket[cause]) if cause >= 0 and self.table.bucket[cause] >= 0 else \
            BUCKETS.index("idle")
        scaled = span * (float(self.factors[cause]) if cause >= 0 else 1.0)
        self.fixed += scaled
        self.fixed_path[bucket] += scaled
        if self.busy[self.awaited]:
            self.since_awaited[:] = 0.0
            self.back = 0.0
        else:
            self.since_awaited[bucket] += scaled
            self.back += scaled

    def end_wait(self) -> None:
        """The step thread resumes when the awaited lane's work ends, plus the return (the wait's
        moments since that lane last worked, scaled by their causes: a call's own runtime); with
        nothing recorded to wait for, after its own length."""
        h = self.clocks[H]
        self.waiting = False
        if not self.worked_in_wait[self.awaited]:
            lanes = self.wait_lanes.copy()
            lanes[H] += self.fixed
            h.take(self.wait_new + self.fixed, self.wait_path + self.fixed_path, lanes)
            self.unsupported += self.fixed
            return
        h.take(self.wait_new, self.wait_path, self.wait_lanes)
        self.waited_for_others = self.waited_for_others or self.awaited == O
        other = self.clocks[self.awaited]
        back = self.back
        if other.t + back > h.t:
            lanes = other.lanes.copy()
            lanes[H] += back
            h.take(other.t + back, other.path + self.since_awaited, lanes)

    def hand_off(self, lane: int, t: float) -> None:
        """Work starting on ``lane`` after it was idle starts no earlier than the step thread's
        clock at that moment; inside a wait, the lane's first work no earlier than the wait's start
        plus the wait's moments so far, scaled by their causes, and its later work after its own,
        the pause between kept (the blocked step thread hands nothing over)."""
        h, clock = self.clocks[H], self.clocks[lane]
        if not self.waiting:
            if h.t > clock.t:
                clock.take(h.t, h.path, h.lanes)
        elif self.worked_in_wait[lane]:
            clock.advance(t - self.last_busy_end[lane], BUCKETS.index("idle"), lane)
        else:
            lanes = self.wait_lanes.copy()
            lanes[H] += self.fixed
            if self.wait_new + self.fixed > clock.t:
                clock.take(self.wait_new + self.fixed, self.wait_path + self.fixed_path, lanes)

    def finish(self, out: Replayed, position: int) -> None:
        """The step ends when its thread does, and the device's work (its throughput bounds the
        step); the other threads' work only where the step thread waited for them in it."""
        if self.waiting:
            self.end_wait()
        ending = [H, D] + ([O] if self.waited_for_others else [])
        last = max(ending, key=lambda lane: (self.clocks[lane].t, -lane))
        out.length_ns[position] = self.clocks[last].t - self.t0
        out.path_ns[position] = self.clocks[last].path
        out.lane_ns[position] = self.clocks[last].lanes
        out.unsupported_ns[position] = self.unsupported


def _replay_step(state: _StepReplay, start: np.ndarray, length: np.ndarray, active: np.ndarray, winner: np.ndarray,
                 chunk: np.ndarray) -> None:
    table, factors = state.table, state.factors
    own_layers = np.flatnonzero(table.lane == H).tolist()
    idle = BUCKETS.index("idle")
    for i in chunk.tolist():
        t, span, mask, won = float(start[i]), float(length[i]), int(active[i]), int(winner[i])
        working = {lane: [k for k in state.layers[lane] if mask >> k & 1] for lane in (O, D)}
        own = next((k for k in own_layers if mask >> k & 1), -1)
        if state.mode == "cpu":
            # The attribution gives the moment to the other threads (a call, a sync, an unrecorded
            # stretch while they compute), or to a wait nothing recorded elsewhere explains.
            waiting = won >= 0 and (table.lane[won] == O or bool(table.unsupported[won]) or bool(table.waits[won]))
        else:
            # A host sync, a pageable copy's call while the device works (the call returns when the
            # copy is done), or the host with nothing recorded while the device runs.
            waiting = (own >= 0 and BUCKETS[int(table.bucket[own])] == "sync_wait") or \
                (own >= 0 and bool(table.waits[own]) and bool(working[D])) or (own < 0 and bool(working[D]))
        if waiting and own >= 0 and float(factors[own]) == 0.0:
            waiting = False  # a wait removed (no blocking sync): the step's thread goes on at once
            # Its own work removed beside the other threads' (the host's Python while a dispatched
            # program runs): the step still ends after their work, as the unmodified replay's wait
            # made it.
            state.waited_for_others = state.waited_for_others or (state.mode == "cpu" and table.lane[won] == O)
        # The wait begins or ends before the moment's work: work on the awaited lane in the moment
        # the step thread goes on is none it waited for.
        if waiting and not state.waiting:
            state.begin_wait()
        elif not waiting and state.waiting:
            state.end_wait()
        # The other lanes: work advances them, at the pace of the slowest cause left; work after
        # idle is a hand-off from the step thread.
        for lane in (O, D):
            on = working[lane]
            if not on:
                state.busy[lane] = False
                continue
            if not state.busy[lane]:
                state.hand_off(lane, t)
            slowest = max(on, key=lambda k: (float(factors[k]), -k))
            bucket = int(table.bucket[slowest])
            state.clocks[lane].advance(span * float(factors[slowest]), bucket if bucket >= 0 else idle, lane)
            state.busy[lane] = True
            state.last_busy_end[lane] = t + span
            if state.waiting:
                state.worked_in_wait[lane] = True
        if waiting:
            state.wait_moment(span, won if state.mode == "cpu" else own)
            continue
        if own >= 0 and table.bucket[own] >= 0:
            state.clocks[H].advance(span * float(factors[own]), int(table.bucket[own]), H)
        elif own < 0:  # nothing recorded on the step's thread: kept as it was
            state.clocks[H].advance(span, idle, H)
