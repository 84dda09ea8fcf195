"""Device busy / idle over the whole trace, per device — the quantity HTA's temporal breakdown reports.

Definitions, chosen to match Holistic Trace Analysis (``get_temporal_breakdown``) so the numbers
can be checked against it: over all device events of a device (kernels, memcpy, memset and
stream sync records; not the ``gpu_user_annotation`` mirrors), span = last end − first start,
busy = length of the union of their intervals, idle = span − busy, compute = union of kernel
intervals, non-compute = busy − compute. traceview's step attribution differs on purpose: it
covers step windows only and splits device-idle time by what the host was doing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceview.schema import Kind, Timeline

_BUSY_KINDS = (Kind.KERNEL.value, Kind.MEMCPY.value, Kind.MEMSET.value, Kind.DEVICE_SYNC.value)


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by a set of intervals (ns)."""
    if not len(starts):
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    # A new block starts where an interval begins after everything before it has ended.
    new_block = np.empty(len(s), dtype=bool)
    new_block[0] = True
    new_block[1:] = s[1:] > run_end[:-1]
    block_start = s[new_block]
    block_end = np.maximum.reduceat(e, np.flatnonzero(new_block))
    return int((block_end - block_start).sum())


def device_time(timeline: Timeline) -> pd.DataFrame:
    """One row per device: span_ns, busy_ns, idle_ns, compute_ns, non_compute_ns and shares."""
    ev = timeline.events
    kind = ev["kind"].to_numpy()
    device = ev["device"].to_numpy()
    ts = ev["ts"].to_numpy()
    end = ts + ev["dur"].to_numpy()
    rows = []
    for dev in sorted(int(d) for d in np.unique(device[device >= 0])):
        busy_mask = (device == dev) & np.isin(kind, _BUSY_KINDS)
        if not busy_mask.any():
            continue
        span = int(end[busy_mask].max() - ts[busy_mask].min())
        busy = union_length(ts[busy_mask], end[busy_mask])
        kmask = busy_mask & (kind == Kind.KERNEL.value)
        compute = union_length(ts[kmask], end[kmask])
        rows.append(
            {
                "device": dev,
                "span_ns": span,
                "busy_ns": busy,
                "idle_ns": span - busy,
                "compute_ns": compute,
                "non_compute_ns": busy - compute,
                "idle_share": (span - busy) / span if span else 0.0,
                "compute_share": compute / span if span else 0.0,
            }
        )
    return pd.DataFrame(rows)
