"""Collective communication against compute: how much of it the compute kernels hide.

Communication kernels are the device kernels whose role is ``device_communication`` (launched by
a collective op, else named like NCCL / RCCL kernels: ``traceview/roles.py``); compute kernels
are those whose role is ``device_kernel``. A trace without them whose collectives run on the host
(torch.distributed's Gloo backend on CPU: ``gloo:all_reduce`` ranges on the process group's work
threads, role ``communication``) is measured the same way, with the host's compute ops (roles
``compute``, ``compiled_code``, any thread) as the compute. Per step window, pooled over the
trace's devices (or host threads):

- ``comm_ns``: time in which at least one communication kernel runs (the union of their
  intervals, so concurrent collectives count once);
- ``overlapped_ns``: the part of it in which a compute kernel runs too;
- ``exposed_ns`` = ``comm_ns`` − ``overlapped_ns``: on a device, exactly the step's
  ``communication`` bucket (attribution gives an instant to ``kernel`` first, then to
  ``communication``); on the host, attribution follows the step's thread (its own framework work
  comes before another thread's collective), so the bucket is at most this;
- ``overlap_share`` = ``overlapped_ns`` / ``comm_ns`` (0 when there is no communication);
- ``collectives``: communication kernels that start in the step.

The whole-trace figures (``trace_comm_ns``, ``trace_overlapped_ns``) take the same union over
every event of the trace: Holistic Trace Analysis' ``get_comm_comp_overlap`` (the share of
communication kernel time overlapped by compute kernels, one number per rank) where the
definitions match. Where they differ is in docs/attribution.md.
"""

from __future__ import annotations

import numpy as np

from traceview.analyzers.intervals import covered, int_bincount, window_segments
from traceview.arrays import membership
from traceview.results import CommOverlap, Steps
from traceview.roles import Role
from traceview.schema import Timeline
from traceview.table import Table


def comm_overlap(timeline: Timeline, steps: Steps) -> CommOverlap | None:
    """Communication vs compute per step and over the whole trace; ``None`` when the trace runs no
    communication kernel (the reports then say nothing about it)."""
    ev = timeline.table
    role_in = membership(ev["role"])
    on_device = ev["device"] >= 0
    comm = on_device & role_in([Role.DEVICE_COMMUNICATION.value])
    if comm.any():
        compute = on_device & role_in([Role.DEVICE_KERNEL.value])
    else:
        comm = ~on_device & role_in([Role.COMMUNICATION.value])
        if not comm.any():
            return None
        compute = ~on_device & role_in([Role.COMPUTE.value, Role.COMPILED_CODE.value])
    ts = ev["ts"]
    end = ts + ev["dur"]
    table = steps.table
    comm_ns, overlapped_ns = _overlap(ts, end, comm, compute, table["start"], table["end"])
    n = len(table)
    step = ev["step"][comm]
    collectives = np.bincount(step[step >= 0], minlength=n)[:n].astype(np.int64)
    per_step = Table({
        "comm_ns": comm_ns,
        "overlapped_ns": overlapped_ns,
        "exposed_ns": comm_ns - overlapped_ns,
        "collectives": collectives,
        "overlap_share": np.divide(overlapped_ns, comm_ns, out=np.zeros(n), where=comm_ns > 0),
    }, n)
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
