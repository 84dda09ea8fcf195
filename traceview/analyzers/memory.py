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
import pandas as pd

from traceview.arrays import at_rows, membership, values_at
from traceview.normalize import top_level_ops
from traceview.results import MemoryUse, Steps
from traceview.schema import Timeline

OUTSIDE_OPS = "(outside ops)"
NOT_RECORDED = "(op not recorded)"


def memory_use(timeline: Timeline, steps: Steps, top: int | None = 10) -> MemoryUse | None:
    memory = timeline.memory
    if memory is None or not len(memory) or not len(steps.table):
        return None
    ts = memory["ts"].to_numpy()
    nbytes = memory["bytes"].to_numpy()
    table = steps.table
    starts, ends = table["start"].to_numpy(), table["end"].to_numpy()
    step = np.searchsorted(starts, ts, side="right") - 1
    inside = (step >= 0) & (ts < at_rows(ends, step))
    per_step = _per_step(memory, step, inside, table)
    steady = inside & np.isin(step, steps.steady_positions)
    ops = _per_op(timeline, memory, steady & (nbytes > 0), len(steps.steady_positions), top)
    steady_rows = per_step[per_step["step"].isin(steps.steady_positions)]
    peak = int(steady_rows["peak_allocated"].max()) if len(steady_rows) else 0
    return MemoryUse(steps=per_step, ops=ops, steady_peak=peak, samples=len(memory))


def _per_step(memory: pd.DataFrame, step: np.ndarray, inside: np.ndarray, table: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame({
        "step": step[inside],
        "device": memory["device"].to_numpy()[inside],
        "total": memory["total_allocated"].to_numpy()[inside],
        "allocated": np.maximum(memory["bytes"].to_numpy()[inside], 0),
        "freed": np.maximum(-memory["bytes"].to_numpy()[inside], 0),
    })
    grouped = frame.groupby(["step", "device"], sort=True)
    out = pd.DataFrame({
        "peak_allocated": grouped["total"].max(),
        "allocated": grouped["allocated"].sum(),
        "freed": grouped["freed"].sum(),
        "samples": grouped.size(),
    }).reset_index()
    out.insert(1, "number", table["number"].to_numpy()[out["step"].to_numpy()])
    return out.astype({"step": np.int64, "number": np.int64, "device": np.int64, "peak_allocated": np.int64,
                       "allocated": np.int64, "freed": np.int64, "samples": np.int64})


def _per_op(timeline: Timeline, memory: pd.DataFrame, chosen: np.ndarray, steady_steps: int,
            top: int | None) -> pd.DataFrame:
    rows = np.flatnonzero(chosen)
    recorded = memory["op"].astype(object).to_numpy()
    op = recorded[rows]  # the op the allocator recorded, "" when none
    unnamed = np.flatnonzero(op == "")
    if len(unnamed):
        # An allocator that names ops names the one running (TF: the executing kernel's node), not
        # the outermost; where it names none, an enclosing op would be a runtime loop
        # (ExecutorState::Process), so the sample says so instead.
        names_ops = bool((recorded != "").any())
        op[unnamed] = NOT_RECORDED if names_ops else _enclosing_ops(timeline, memory, rows[unnamed])
    frame = pd.DataFrame({"op": op, "device": memory["device"].to_numpy()[rows],
                          "bytes": memory["bytes"].to_numpy()[rows]})
    grouped = frame.groupby(["op", "device"], sort=True)["bytes"]
    out = pd.DataFrame({"allocations": grouped.size(), "bytes": grouped.sum()}).reset_index()
    out["bytes_per_step"] = out["bytes"] // max(steady_steps, 1)
    out = out.sort_values(["bytes", "op", "device"], ascending=[False, True, True], kind="stable")
    out = out.reset_index(drop=True).astype({"device": np.int64, "allocations": np.int64, "bytes": np.int64,
                                             "bytes_per_step": np.int64})
    return out if top is None else out.head(top)


def _enclosing_ops(timeline: Timeline, memory: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """For each chosen sample, the name of the outermost host op enclosing it on its thread
    (:data:`OUTSIDE_OPS` when none does)."""
    events = timeline.events
    enclosing = _enclosing_events(timeline, memory, rows)
    op_rows = np.full(len(rows), -1, dtype=np.int64)
    has = enclosing >= 0
    if has.any():
        op_rows[has] = _outermost(events, enclosing[has], top_level_ops(events))
    return np.where(op_rows >= 0, values_at(events["name"], np.maximum(op_rows, 0)), OUTSIDE_OPS).astype(object)


def _enclosing_events(timeline: Timeline, memory: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """For each chosen sample, the innermost host event on its thread whose span holds it (-1 if none)."""
    events = timeline.events
    out = np.full(len(rows), -1, dtype=np.int64)
    if not len(rows):
        return out
    host = events["device"].to_numpy() < 0
    ts = events["ts"].to_numpy()
    end = ts + events["dur"].to_numpy()
    parent = events["parent"].to_numpy()
    track_in = membership(events["track"].array)
    sample_track = memory["track"].astype(object).to_numpy()[rows]
    sample_ts = memory["ts"].to_numpy()[rows]
    for label in pd.unique(sample_track):
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


def _outermost(events: pd.DataFrame, rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each row, the outermost row up its parent chain (itself included) where ``wanted``; -1 if none."""
    parent = events["parent"].to_numpy()
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
