"""Pauses: time the step's thread lost at a place where the other steps of the same shape did not.

A training loop runs the same ops in the same order every step, so the k-th event on the step's
thread takes about as long in each step, and so does the k-th unrecorded gap between its top-level
events. When one of them lasts much longer in one step than at the same place in the others — by
at least ``PAUSE_MIN_NS`` and at least ``PAUSE_FACTOR`` times its median there — the excess is a
*pause*: the thread stopped where the program does not stop. The operating system gave its core
to another process, the hypervisor took the virtual CPU from the machine (CPU steal), or a
profiler thread took the core. A 15 µs TF eager op that lasts 4.1 ms in one step, once, at a
different op in each step, is that (a capture on a busy 2-core VM: pauses of one 4 ms scheduler
tick, ~55 ms of a 110 ms profiled step, whose unprofiled time was 46 ms). Work the step does —
user code at a fixed place, a garbage collection its allocations trigger there — recurs at that
place: its median is its length, and it is not a pause.

Work the program does only every few steps (a log line every N steps) also stretches one place
of a step; it does so at the same place in each step that does it, so a place stretched in two
steps or more is not a pause. Stretched once in the capture, it cannot be told from a pause: the
finding says so.

Only steady steps are compared (a cold or warm-up step does work the others do not), and only
with steps of the identical shape (the same sequence of event names on the step's thread), in
groups of at least ``MIN_ALIGNED_STEPS``: with two, a median cannot tell which one paused. Where
the shapes differ (a data-dependent step), nothing is called a pause.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceview import compiled

# The shortest pause: a scheduler tick is 1–10 ms (CONFIG_HZ 1000–100); op-to-op jitter of a
# quiet machine is tens of µs.
PAUSE_MIN_NS = 1_000_000
# ... and at least this many times the typical length at that place: a long op that is 40 % slower
# in one step (frequency scaling, cache) is not a pause.
PAUSE_FACTOR = 2.0
MIN_ALIGNED_STEPS = 3


def _runs(step: np.ndarray) -> tuple[list[int], list[int]]:
    """Where each run of equal values of ``step`` (sorted by step) begins, and its length."""
    first = np.concatenate(([0], np.flatnonzero(step[1:] != step[:-1]) + 1))
    return first.tolist(), np.diff(np.concatenate((first, [len(step)]))).tolist()


@dataclass(frozen=True)
class Places:
    """A (steps × n) matrix of positions into the thread's arrays: row i the n places from
    ``begins[i]`` on. Where the steps follow one another (every step of a loop of one shape), the
    matrix is one stretch of the arrays and is read as a slice, not gathered."""

    begins: list[int]
    n: int

    def positions(self) -> np.ndarray:
        """The matrix of positions itself (what :meth:`take` reads through, without making it)."""
        return np.asarray(self.begins, dtype=np.int64)[:, None] + np.arange(self.n, dtype=np.int64)[None, :]

    def _stretches(self) -> list[tuple[int, int]]:
        """The steps (rows) as runs that follow one another in the arrays: (first row, rows)."""
        begins = np.asarray(self.begins, dtype=np.int64)
        breaks = (np.flatnonzero(np.diff(begins) != self.n) + 1).tolist()
        return [(lo, hi - lo) for lo, hi in zip([0, *breaks], [*breaks, len(begins)])]

    def take(self, values: np.ndarray) -> np.ndarray:
        """``values`` at the places, as the (steps × n) matrix: each stretch of steps that follow
        one another a slice of ``values`` (the whole matrix a view where they all do), never a
        position per cell (a 1 GB trace's 40,000 steps of 1,470 events: 470 MB of positions)."""
        stretches = self._stretches()

        def stretch(row: int, rows: int) -> np.ndarray:
            first = self.begins[row]
            return values[first:first + rows * self.n].reshape(rows, self.n)

        if len(stretches) == 1:
            return stretch(*stretches[0])
        out = np.empty((len(self.begins), self.n), dtype=values.dtype)
        for row, rows in stretches:
            out[row:row + rows] = stretch(row, rows)
        return out

    def at(self, step_row: np.ndarray, place: np.ndarray) -> np.ndarray:
        """The positions of the cells (step row, place column)."""
        return np.asarray(self.begins, dtype=np.int64)[step_row] + place


def shape_groups(step: np.ndarray, codes: np.ndarray) -> list[Places]:
    """Groups of steps of one shape: ``step`` and ``codes`` (event-name codes) are the step's
    thread's events, sorted by step, then time. Each group's places are a (steps × events) matrix
    of positions into those arrays — row i the events of one step, column k the k-th event of
    each — for every shape shared by at least ``MIN_ALIGNED_STEPS`` steps."""
    if not len(step):
        return []
    shapes: dict[tuple[int, bytes], list[int]] = {}
    for begin, n in zip(*_runs(step)):  # one entry per step, not per event
        shapes.setdefault((n, codes[begin:begin + n].tobytes()), []).append(begin)
    return [Places(begins, n) for (n, _), begins in shapes.items() if len(begins) >= MIN_ALIGNED_STEPS and n]


# Steps tested at a time: the block's temporaries stay in cache, where whole-matrix ones would
# each be a fresh allocation the size of the step thread's events.
_BLOCK_STEPS = 256


def paused_cells(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cells of a (steps × places) matrix of lengths that hold a pause (see the module's rule):
    (step row, place column, pause ns — the excess over the median of its place), in row order."""
    if not lengths.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    typical = _column_medians(lengths)
    floor = PAUSE_FACTOR * typical
    paused = np.empty(lengths.shape, dtype=bool)
    for low in range(0, len(lengths), _BLOCK_STEPS):
        block = lengths[low:low + _BLOCK_STEPS]
        np.logical_and(block - typical >= PAUSE_MIN_NS, block >= floor, out=paused[low:low + _BLOCK_STEPS])
    # Work the program does every few steps (a log line every N steps) stretches the same place in
    # each step that does it; a place stretched in two steps or more is that, not a pause.
    paused &= np.count_nonzero(paused, axis=0) == 1
    step_row, place = np.nonzero(paused)
    return step_row, place, (lengths[step_row, place] - typical[place]).astype(np.int64)


def event_pauses(rows: np.ndarray, step: np.ndarray, codes: np.ndarray, own: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """The paused part of the events' own time (``own``, ns, per table row) on the step's thread.

    ``rows``, ``step``, ``codes``: the thread's events (table rows) sorted by step, then time, with
    their step and name code. Returns the positions (into ``rows``, ascending) of the events that
    hold a pause, the pause of each, and the shape group of each step that was compared (step →
    group). Pauses are rare: only their cells are written, no array per event."""
    positions: list[np.ndarray] = []
    amounts: list[np.ndarray] = []
    group_of_step: dict[int, int] = {}
    for g, places in enumerate(shape_groups(step, codes)):
        step_row, place, ns = paused_cells(own[places.take(rows)])
        positions.append(places.at(step_row, place))
        amounts.append(ns)
        group_of_step.update(dict.fromkeys(step[np.asarray(places.begins, dtype=np.int64)].tolist(), g))
    if not positions:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), {}
    position, amount = np.concatenate(positions), np.concatenate(amounts)
    order = np.argsort(position, kind="stable")
    return position[order], amount[order], dict(sorted(group_of_step.items()))


def gap_pauses(gap_step: np.ndarray, length: np.ndarray, group_of_step: dict[int, int]) -> np.ndarray:
    """The paused part of each gap between the step thread's top-level events (``gap_step``: the
    step of each gap, sorted by step then time; ``length``: ns, 0 for abutting events), for steps
    in a shape group (``group_of_step``); a group whose steps do not all have as many gaps is
    left alone."""
    pause = np.zeros(len(length), dtype=np.int64)
    if not len(length) or not group_of_step:
        return pause
    members: dict[int, list[tuple[int, int]]] = {}
    for begin, n in zip(*_runs(gap_step)):
        group = group_of_step.get(int(gap_step[begin]))
        if group is not None:
            members.setdefault(group, []).append((begin, n))
    for spans in members.values():
        sizes = {n for _, n in spans}
        if len(spans) < MIN_ALIGNED_STEPS or len(sizes) != 1:
            continue
        places = Places([b for b, _ in spans], sizes.pop())
        step_row, place, ns = paused_cells(places.take(length))
        pause[places.at(step_row, place)] = ns
    return pause


def _column_medians(lengths: np.ndarray) -> np.ndarray:
    """``np.median(lengths, axis=0)``: compiled, a selection per column (traceview/_passes.c)
    instead of numpy's partition of a copy of the whole matrix."""
    if compiled.passes is None or lengths.ndim != 2:
        return np.median(lengths, axis=0)
    matrix = np.ascontiguousarray(lengths, dtype=np.int64)
    typical = np.empty(matrix.shape[1], dtype=np.float64)
    compiled.passes.column_medians(matrix, matrix.shape[0], matrix.shape[1], typical)
    return typical


def without_pauses(times: np.ndarray, parent: np.ndarray, holders: np.ndarray,
                   paused: tuple[np.ndarray, np.ndarray] | tuple[()]) -> np.ndarray:
    """Per-row ``times`` less the pauses each of the ``holders`` holds (:func:`_pause_held`);
    ``times`` itself, not a copy, when there are none (nearly every trace)."""
    if not len(paused) or not len(paused[0]):
        return times
    return times - _pause_held(parent, holders, paused)


def _pause_held(parent: np.ndarray, holders: np.ndarray, paused: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per event row, the pauses it holds: each paused event's pause (``paused``: rows, ns, as
    :attr:`traceview.results.Attribution.paused_events`) counts for the event itself when it is
    one of ``holders`` (a row mask), else for its nearest ancestor that is. Tables of ops by name
    take it off their times, as the attribution takes it off its causes."""
    held = np.zeros(len(holders), dtype=np.int64)
    for row, ns in zip(paused[0].tolist(), paused[1].tolist()):  # one per pause: a few per step
        while row >= 0 and not holders[row]:
            row = int(parent[row])
        if row >= 0:
            held[row] += ns
    return held
