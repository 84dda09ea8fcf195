"""Memory per step and the ops that allocate it, from the timeline's allocator samples.

Input: ``Timeline.memory`` (one row per allocation or free: torch ``profile_memory=True``,
TensorFlow / XLA ``MemoryAllocation`` / ``MemoryDeallocation``). Per step and device: the peak of
the allocator's running total inside the step window (the most the step held at once), the bytes
allocated and freed, the samples. Per op: every allocation inside the steady steps is charged to
the op the allocator recorded with it (TF's ``tf_op``: the graph node or eager op the tensor is
for; an allocation it names none for is ``(op not recorded)``); in a trace whose allocator names no
ops (torch), to the framework op the user's code called (the outermost host op enclosing the
sample on its thread, e.g. ``aten::linear`` for the matmul output it allocates through
``aten::addmm`` → ``aten::empty``); allocations outside any op are ``(outside ops)``.
"""

from __future__ import annotations

import numpy as np

from traceview.arrays import at_rows, factorize, membership, unique_inverse, values_at
from traceview.normalize import top_level_ops
from traceview.results import MemoryUse, Steps
from traceview.schema import Timeline
from traceview.table import Table

OUTSIDE_OPS = "(outside ops)"
NOT_RECORDED = "(op not recorded)"


def memory_use(timeline: Timeline, steps: Steps, top: int | None = 10) -> MemoryUse | None:
    memory = timeline.memory
    if memory is None or not len(memory) or not len(steps.table):
        return None
    ts = memory["ts"]
    nbytes = memory["bytes"]
    table = steps.table
    starts, ends = table["start"], table["end"]
    step = np.searchsorted(starts, ts, side="right") - 1
    inside = (step >= 0) & (ts < at_rows(ends, step))
    per_step = _per_step(memory, step, inside, table)
    steady = inside & np.isin(step, steps.steady_positions)
    ops = _per_op(timeline, memory, steady & (nbytes > 0), len(steps.steady_positions), top)
    steady_rows = np.isin(per_step["step"], steps.steady_positions)
    peak = int(per_step["peak_allocated"][steady_rows].max()) if steady_rows.any() else 0
    return MemoryUse(steps=per_step, ops=ops, steady_peak=peak, samples=len(memory))


def _per_step(memory: Table, step: np.ndarray, inside: np.ndarray, table: Table) -> Table:
    """Per (step, device) with samples, in that order: the peak of the running total, the bytes
    allocated and freed, the samples."""
    step = step[inside].astype(np.int64)
    device = memory["device"][inside].astype(np.int64)
    total = memory["total_allocated"][inside].astype(np.int64)
    nbytes = memory["bytes"][inside].astype(np.int64)
    pairs, group = _sorted_pairs(step, device)
    n = len(pairs)
    peak = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(peak, group, total)
    allocated, freed = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    np.add.at(allocated, group, np.maximum(nbytes, 0))
    np.add.at(freed, group, np.maximum(-nbytes, 0))
    return Table({"step": pairs[:, 0], "number": table["number"][pairs[:, 0]].astype(np.int64),
                  "device": pairs[:, 1], "peak_allocated": peak, "allocated": allocated, "freed": freed,
                  "samples": np.bincount(group, minlength=n).astype(np.int64)}, n)


def _per_op(timeline: Timeline, memory: Table, chosen: np.ndarray, steady_steps: int,
            top: int | None) -> Table:
    """Per (op, device) of the chosen allocations: their count and bytes; most bytes first."""
    rows = np.flatnonzero(chosen)
    recorded = memory["op"].values()
    op = recorded[rows]  # the op the allocator recorded, "" when none
    unnamed = np.flatnonzero(op == "")
    if len(unnamed):
        # An allocator that names ops names the one running (TF: the executing kernel's node), not
        # the outermost; where it names none, an enclosing op would be a runtime loop
        # (ExecutorState::Process), so the sample says so instead.
        names_ops = bool((recorded != "").any())
        op[unnamed] = NOT_RECORDED if names_ops else _enclosing_ops(timeline, memory, rows[unnamed])
    device = memory["device"][rows].astype(np.int64)
    nbytes = memory["bytes"][rows].astype(np.int64)
    op_codes, op_values = factorize(op)
    known = op_codes >= 0  # (a sample whose op is missing is in no group)
    op_codes, device, nbytes = op_codes[known], device[known], nbytes[known]
    by_name = np.argsort(op_values.astype(str), kind="stable")  # (codes by name: ties sort by op)
    names = op_values[by_name]
    rank = np.empty(len(op_values), dtype=np.int64)
    rank[by_name] = np.arange(len(op_values))
    pairs, group = _sorted_pairs(rank[op_codes], device)
    counts = np.bincount(group, minlength=len(pairs)).astype(np.int64)
    total = np.zeros(len(pairs), dtype=np.int64)
    np.add.at(total, group, nbytes)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -total))  # most bytes first; equal bytes by op, then device
    if top is not None:
        order = order[:top]
    return Table({"op": names[pairs[order, 0]], "device": pairs[order, 1], "allocations": counts[order],
                  "bytes": total[order], "bytes_per_step": total[order] // max(steady_steps, 1)}, len(order))


def _sorted_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs, sorted, as rows of a (pairs, 2) array, and each row's
    pair: one int64 key per row, sorted (numpy's unique by rows, or by hashing, is slower here)."""
    if not len(first):
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    low = int(second.min())
    width = int(second.max()) - low + 1
    keys, group = unique_inverse(first.astype(np.int64) * width + (second.astype(np.int64) - low))
    return np.stack([keys // width, keys % width + low], axis=1), group


def _enclosing_ops(timeline: Timeline, memory: Table, rows: np.ndarray) -> np.ndarray:
    """For each chosen sample, the name of the outermost host op enclosing it on its thread
    (:data:`OUTSIDE_OPS` when none does)."""
    events = timeline.table
    enclosing = _enclosing_events(timeline, memory, rows)
    op_rows = np.full(len(rows), -1, dtype=np.int64)
    has = enclosing >= 0
    if has.any():
        op_rows[has] = _outermost(events, enclosing[has], top_level_ops(events))
    return np.where(op_rows >= 0, values_at(events["name"], np.maximum(op_rows, 0)), OUTSIDE_OPS).astype(object)


def _enclosing_events(timeline: Timeline, memory: Table, rows: np.ndarray) -> np.ndarray:
    """For each chosen sample, the innermost host event on its thread whose span holds it (-1 if none)."""
    events = timeline.table
    out = np.full(len(rows), -1, dtype=np.int64)
    if not len(rows):
        return out
    host = events["device"] < 0
    ts = events["ts"]
    end = ts + events["dur"]
    parent = events["parent"]
    track_in = membership(events["track"])
    sample_track = memory["track"].at(rows)
    sample_ts = memory["ts"][rows]
    for label in dict.fromkeys(sample_track.tolist()):  # (each track once, in order met)
        on_track = np.flatnonzero(host & track_in([label]))  # rows sorted by ts
        mine = np.flatnonzero(sample_track == label)
        if not len(on_track):
            continue
        # The last event starting at or before the sample, then up its parents until one holds it.
        found = np.searchsorted(ts[on_track], sample_ts[mine], side="right") - 1
        current = np.where(found >= 0, at_rows(on_track, found), -1)
        pending = current >= 0
        while pending.any():
            idx = np.flatnonzero(pending)
            holds = end[current[idx]] >= sample_ts[mine][idx]
            pending[idx[holds]] = False
            climb = idx[~holds]
            current[climb] = parent[current[climb]]
            pending[climb] = current[climb] >= 0
        out[mine] = current
    return out


def _outermost(events: Table, rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each row, the outermost row up its parent chain (itself included) where ``wanted``; -1 if none."""
    parent = events["parent"]
    found = np.where(wanted[rows], rows, -1)
    current = rows.copy()
    climbing = parent[current] >= 0
    while climbing.any():
        idx = np.flatnonzero(climbing)
        current[idx] = parent[current[idx]]
        hit = wanted[current[idx]]
        found[idx[hit]] = current[idx[hit]]
        climbing[idx] = parent[current[idx]] >= 0
    return found
