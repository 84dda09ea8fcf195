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
import pandas as pd

from traceview.analyzers.pauses import without_pauses
from traceview.analyzers.steps import Steps
from traceview.arrays import column_codes, membership
from traceview.normalize import compute_self_time, math_ops, op_name_codes, self_time, top_level_ops
from traceview.schema import Kind, Timeline

TOP_N = 10


def _steady_mask(timeline: Timeline, steps: Steps) -> tuple[np.ndarray, int]:
    return steps.in_steady(timeline.events), max(len(steps.steady_positions), 1)


def _summarize(codes: np.ndarray, values: list[Any], durations: np.ndarray, n_steps: int,
               limit: int | None) -> pd.DataFrame:
    """Count and total duration per name, per step; names given as ``codes`` into ``values`` (-1:
    missing, shown as "nan")."""
    if not len(codes):
        return pd.DataFrame(columns=["name", "count_per_step", "time_per_step_ns", "mean_ns", "share"])
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
    text[-1] = np.nan
    frame = pd.DataFrame({"name": text[used].astype(str), "count": count[used], "sum": total[used]})
    agg = frame.groupby("name", sort=True)[["count", "sum"]].sum()
    total = float(agg["sum"].sum()) or 1.0
    out = pd.DataFrame(
        {
            "name": agg.index.to_numpy(),
            "count_per_step": agg["count"].to_numpy() / n_steps,
            "time_per_step_ns": agg["sum"].to_numpy() / n_steps,
            "mean_ns": agg["sum"].to_numpy() / agg["count"].to_numpy(),
            "share": agg["sum"].to_numpy() / total,
        }
    )
    out = out.sort_values(["time_per_step_ns", "name"], ascending=[False, True], kind="stable")
    return (out if limit is None else out.head(limit)).reset_index(drop=True)


def top_kernels(timeline: Timeline, steps: Steps, limit: int | None = TOP_N,
                paused: tuple[np.ndarray, np.ndarray] | tuple[()] = ()) -> pd.DataFrame:
    """Kernels ranked by time per steady step; ``share`` is of all kernel time. ``paused``: the
    attribution's pauses (:attr:`~traceview.results.Attribution.paused_events`), left out of a
    CPU trace's compute ops as the attribution leaves them out of ``kernel``."""
    ev = timeline.events
    steady, n = _steady_mask(timeline, steps)
    if timeline.has_device:
        mask = steady & membership(ev["kind"].array)([Kind.KERNEL.value])
        codes, values = column_codes(ev["name"])
        return _summarize(codes[mask], values, ev["dur"].to_numpy()[mask], n, limit)
    # CPU: compute ops by their self time (what the attribution counts as kernel time), named by
    # the framework op when the reader knows it (TF eager runs every op as KernelAndDeviceFunc::Run).
    mask = steady & math_ops(ev)
    codes, values = op_name_codes(ev)
    own = without_pauses(compute_self_time(ev), ev["parent"].to_numpy(), mask, paused)
    return _summarize(codes[mask], values, own[mask], n, limit)


def top_ops(timeline: Timeline, steps: Steps, limit: int | None = TOP_N,
            paused: tuple[np.ndarray, np.ndarray] | tuple[()] = ()) -> pd.DataFrame:
    """Top-level framework ops ranked by inclusive host time per steady step, the attribution's
    pauses (``paused``) left out."""
    ev = timeline.events
    steady, n = _steady_mask(timeline, steps)
    mask = steady & top_level_ops(ev)
    codes, values = column_codes(ev["name"])
    dur = without_pauses(ev["dur"].to_numpy(), ev["parent"].to_numpy(), mask, paused)
    return _summarize(codes[mask], values, dur[mask], n, limit)
