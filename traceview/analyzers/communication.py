"""Collective communication against compute: how much of it the compute kernels hide.

Communication kernels are the device kernels whose role is ``device_communication`` (launched by
a collective op, else named like NCCL / RCCL kernels: ``traceview/roles.py``); compute kernels
are those whose role is ``device_kernel``. Per step window, pooled over the trace's devices:

- ``comm_ns``: time in which at least one communication kernel runs (the union of their
  intervals, so concurrent collectives count once);
- ``overlapped_ns``: the part of it in which a compute kernel runs too;
- ``exposed_ns`` = ``comm_ns`` − ``overlapped_ns``: exactly the step's ``communication`` bucket
  (attribution gives an instant to ``kernel`` first, then to ``communication``);
- ``overlap_share`` = ``overlapped_ns`` / ``comm_ns`` (0 when there is no communication);
- ``collectives``: communication kernels that start in the step.

The whole-trace figures (``trace_comm_ns``, ``trace_overlapped_ns``) take the same union over
every event of the trace: Holistic Trace Analysis' ``get_comm_comp_overlap`` (the share of
communication kernel time overlapped by compute kernels, one number per rank) where the
definitions match. Where they differ is in docs/attribution.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceview.analyzers.attribution import covered, int_bincount, window_segments
from traceview.analyzers.steps import Steps
from traceview.roles import Role
from traceview.schema import Timeline


@dataclass(frozen=True)
class CommOverlap:
    """Communication kernel time per step, and the part compute kernels overlap."""

    per_step: pd.DataFrame  # index: step position; comm_ns, overlapped_ns, exposed_ns, collectives, overlap_share
    trace_comm_ns: int  # whole trace (HTA's scope)
    trace_overlapped_ns: int

    @property
    def trace_overlap_share(self) -> float:
        return self.trace_overlapped_ns / self.trace_comm_ns if self.trace_comm_ns else 0.0

    def steady(self, positions: np.ndarray) -> dict[str, float]:
        """Means per step over ``positions`` (the steady steps); the share is of the summed times."""
        rows = self.per_step.iloc[positions]
        comm = float(rows["comm_ns"].sum())
        n = max(len(rows), 1)
        return {"comm_ns": comm / n, "overlapped_ns": float(rows["overlapped_ns"].sum()) / n,
                "exposed_ns": float(rows["exposed_ns"].sum()) / n, "collectives": float(rows["collectives"].sum()) / n,
                "overlap_share": float(rows["overlapped_ns"].sum()) / comm if comm else 0.0}

    def to_dict(self, positions: np.ndarray) -> dict[str, object]:
        return {
            "steady": self.steady(positions),
            "per_step": [{k: (float(v) if k == "overlap_share" else int(v)) for k, v in row.items()}
                         for row in self.per_step.to_dict(orient="records")],
            "trace": {"comm_ns": self.trace_comm_ns, "overlapped_ns": self.trace_overlapped_ns,
                      "overlap_share": self.trace_overlap_share},
        }


def comm_overlap(timeline: Timeline, steps: Steps) -> CommOverlap | None:
    """Communication vs compute per step and over the whole trace; ``None`` when the trace runs no
    communication kernel (the reports then say nothing about it)."""
    ev = timeline.events
    role = ev["role"].to_numpy()
    on_device = ev["device"].to_numpy() >= 0
    comm = on_device & (role == Role.DEVICE_COMMUNICATION.value)
    if not comm.any():
        return None
    compute = on_device & (role == Role.DEVICE_KERNEL.value)
    ts = ev["ts"].to_numpy()
    end = ts + ev["dur"].to_numpy()
    table = steps.table
    comm_ns, overlapped_ns = _overlap(ts, end, comm, compute, table["start"].to_numpy(), table["end"].to_numpy())
    n = len(table)
    step = ev["step"].to_numpy()[comm]
    collectives = np.bincount(step[step >= 0], minlength=n)[:n].astype(np.int64)
    per_step = pd.DataFrame({
        "comm_ns": comm_ns,
        "overlapped_ns": overlapped_ns,
        "exposed_ns": comm_ns - overlapped_ns,
        "collectives": collectives,
        "overlap_share": np.divide(overlapped_ns, comm_ns, out=np.zeros(n), where=comm_ns > 0),
    })
    first, last = np.array([ts.min()]), np.array([end.max()])
    trace_comm, trace_overlapped = _overlap(ts, end, comm, compute, first, last)
    return CommOverlap(per_step, int(trace_comm[0]), int(trace_overlapped[0]))


def _overlap(ts: np.ndarray, end: np.ndarray, comm: np.ndarray, compute: np.ndarray, starts: np.ndarray,
             ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per window [starts, ends): length of the union of the ``comm`` rows' intervals, and of its
    intersection with the union of the ``compute`` rows' intervals (int64 ns)."""
    intervals = [(ts[comm], end[comm]), (ts[compute], end[compute])]
    points, window, inside = window_segments(starts, ends, intervals)
    length = np.diff(points)
    in_comm = covered(points, *intervals[0]) & inside
    in_both = in_comm & covered(points, *intervals[1])
    n = len(starts)
    return int_bincount(window[in_comm], length[in_comm], n), int_bincount(window[in_both], length[in_both], n)
