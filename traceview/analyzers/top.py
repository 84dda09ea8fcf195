"""The heaviest kernels and framework ops of the steady-state steps.

Kernels: on device traces, device ``kernel`` events; on CPU-only traces, compute ops by self
time (what the attribution counts as ``kernel``). Framework ops: top-level host ops (ops whose parent is
not an op), with inclusive host time, so ``aten::linear`` counts its ``aten::addmm``.
All numbers are per steady-state step (totals divided by the number of steady steps).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceview.analyzers.steps import Steps
from traceview.normalize import compute_ops, op_names, self_time, top_level_ops
from traceview.schema import Kind, Timeline

TOP_N = 10


def _steady_mask(timeline: Timeline, steps: Steps) -> tuple[np.ndarray, int]:
    return steps.in_steady(timeline.events), max(len(steps.steady_positions), 1)


def _summarize(names: np.ndarray, durations: np.ndarray, n_steps: int, limit: int | None) -> pd.DataFrame:
    if not len(names):
        return pd.DataFrame(columns=["name", "count_per_step", "time_per_step_ns", "mean_ns", "share"])
    frame = pd.DataFrame({"name": names.astype(str), "dur": durations})
    agg = frame.groupby("name", sort=True)["dur"].agg(["count", "sum"])
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


def top_kernels(timeline: Timeline, steps: Steps, limit: int | None = TOP_N) -> pd.DataFrame:
    """Kernels ranked by time per steady step; ``share`` is of all kernel time."""
    ev = timeline.events
    steady, n = _steady_mask(timeline, steps)
    if timeline.has_device:
        mask = steady & (ev["kind"].to_numpy() == Kind.KERNEL.value)
        return _summarize(ev["name"].to_numpy()[mask], ev["dur"].to_numpy()[mask], n, limit)
    # CPU: compute ops by their self time (what the attribution counts as kernel time), named by
    # the framework op when the reader knows it (TF eager runs every op as KernelAndDeviceFunc::Run).
    mask = steady & compute_ops(ev)
    return _summarize(op_names(ev)[mask], self_time(ev)[mask], n, limit)


def top_ops(timeline: Timeline, steps: Steps, limit: int | None = TOP_N) -> pd.DataFrame:
    """Top-level framework ops ranked by inclusive host time per steady step."""
    ev = timeline.events
    steady, n = _steady_mask(timeline, steps)
    mask = steady & top_level_ops(ev)
    return _summarize(ev["name"].to_numpy()[mask], ev["dur"].to_numpy()[mask], n, limit)
