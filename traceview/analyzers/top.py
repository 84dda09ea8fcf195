"""The heaviest kernels and framework ops of the steady-state steps.

Kernels: on device traces, device ``kernel`` events; on CPU-only traces, compute ops by self
time (what the attribution counts as ``kernel``), less the waits for compiled work on other threads
(XLA's thunk executor waiting for its thunks, ``categories.XLA_PROGRAM_WAIT``; a sync inside
compiled code: their own time is a wait, and the work is counted on the threads that run it). Framework ops: top-level host ops (ops whose parent is
not an op), with inclusive host time, so ``aten::linear`` counts its ``aten::addmm``.
All numbers are per steady-state step (totals divided by the number of steady steps).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from traceview.analyzers.pauses import without_pauses
from traceview.arrays import column_codes, membership
from traceview.normalize import compute_self_time, math_ops, op_name_codes, top_level_ops
from traceview.results import Steps
from traceview.schema import Kind, Timeline
from traceview.table import Table

TOP_N = 10


def _steady_mask(timeline: Timeline, steps: Steps) -> tuple[np.ndarray, int]:
    return steps.in_steady(timeline.table), max(len(steps.steady_positions), 1)


def _summarize(codes: np.ndarray, values: list[Any], durations: np.ndarray, n_steps: int,
               limit: int | None) -> Table:
    """Count and total duration per name, per step; names given as ``codes`` into ``values`` (-1:
    missing, shown as "nan")."""
    if not len(codes):
        numbers = ("count_per_step", "time_per_step_ns", "mean_ns", "share")
        return Table({"name": np.zeros(0, dtype=object), **{column: np.zeros(0) for column in numbers}}, 0)
    # Summed per code first (exactly, in the durations' dtype), then per name as text: two codes
    # can read the same (a framework op named like an event), and only the few codes become text.
    slots = len(values) + 1
    slot = np.where(codes >= 0, codes, slots - 1)
    count = np.bincount(slot, minlength=slots)
    total = np.zeros(slots, dtype=durations.dtype)
    np.add.at(total, slot, durations)
    used = np.flatnonzero(count)
    text = np.empty(slots, dtype=object)
    text[:-1] = values
    text[-1] = "nan"
    names, by_name = np.unique(text[used].astype(str), return_inverse=True)
    name_count = np.zeros(len(names), dtype=np.int64)
    np.add.at(name_count, by_name, count[used])
    name_sum = np.zeros(len(names), dtype=total.dtype)
    np.add.at(name_sum, by_name, total[used])
    whole = float(name_sum.sum()) or 1.0
    per_step = name_sum / n_steps
    order = np.lexsort((names, -per_step))  # (most time first; equal times by name)
    if limit is not None:
        order = order[:limit]
    return Table(
        {
            "name": names[order].astype(object),
            "count_per_step": name_count[order] / n_steps,
            "time_per_step_ns": per_step[order],
            "mean_ns": name_sum[order] / name_count[order],
            "share": name_sum[order] / whole,
        },
        len(order),
    )


def top_kernels(timeline: Timeline, steps: Steps, limit: int | None = TOP_N,
                paused: tuple[np.ndarray, np.ndarray] | tuple[()] = ()) -> Table:
    """Kernels ranked by time per steady step; ``share`` is of all kernel time. ``paused``: the
    attribution's pauses (:attr:`~traceview.results.Attribution.paused_events`), left out of a
    CPU trace's compute ops as the attribution leaves them out of ``kernel``."""
    ev = timeline.table
    steady, n = _steady_mask(timeline, steps)
    if timeline.has_device:
        mask = steady & membership(ev["kind"])([Kind.KERNEL.value])
        codes, values = column_codes(ev["name"])
        return _summarize(codes[mask], values, ev["dur"][mask], n, limit)
    # CPU: compute ops by their self time (what the attribution counts as kernel time), named by
    # the framework op when the reader knows it (TF eager runs every op as KernelAndDeviceFunc::Run).
    mask = steady & math_ops(ev)
    codes, values = op_name_codes(ev)
    own = without_pauses(compute_self_time(ev), ev["parent"], mask, paused)
    return _summarize(codes[mask], values, own[mask], n, limit)


def top_ops(timeline: Timeline, steps: Steps, limit: int | None = TOP_N,
            paused: tuple[np.ndarray, np.ndarray] | tuple[()] = ()) -> Table:
    """Top-level framework ops ranked by inclusive host time per steady step, the attribution's
    pauses (``paused``) left out."""
    ev = timeline.table
    steady, n = _steady_mask(timeline, steps)
    mask = steady & top_level_ops(ev)
    codes, values = column_codes(ev["name"])
    dur = without_pauses(ev["dur"], ev["parent"], mask, paused)
    return _summarize(codes[mask], values, dur[mask], n, limit)
