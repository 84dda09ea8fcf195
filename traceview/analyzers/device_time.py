"""Device busy / idle over the whole trace, per device — the quantity HTA's temporal breakdown reports.

Definitions, chosen to match Holistic Trace Analysis 0.5.0 (``get_temporal_breakdown``) so the
numbers can be checked against it (``tests/test_hta_differential.py``): over all device events of
a device (kernels, memcpy, memset and stream sync records; not the ``gpu_user_annotation``
mirrors), span = last end − first start, busy = length of the union of their intervals,
idle = span − busy, compute = union of the computation kernels (kernels that are not
communication kernels: HTA's ``^nccl.*Kernel``, which also names RCCL's kernels),
non-compute = busy − compute (copies, memsets, sync records, collectives).

Where traceview differs from HTA on purpose (the differential test reproduces each rule and
shows the numbers then agree to the nanosecond, or to HTA's float resolution):

- Event selection: HTA drops the device work launched from the last ``ProfilerStep`` onwards
  (unless ``include_last_profiler_step=True``) whenever a trace has two or more step markers;
  traceview covers the whole trace, last step included.
- Timestamps: for traces with fractional µs timestamps HTA rounds every event inward to whole µs
  (start up, end down) unless ``HTA_DISABLE_NS_ROUNDING=1``; that alone moves the ResNet trace's
  idle share by about one point. traceview keeps the nanoseconds.
- Compute: HTA classifies by kernel name, so a ``Stream Wait Event`` sync record counts as
  compute and a kernel whose name contains ``Memcpy`` or ``Sync`` does not; traceview uses the
  event kind (``kernel`` vs ``memcpy``/``memset``/``device_sync``) and only the communication
  kernel names.
- Devices: HTA reports one row per rank (trace file), all devices pooled; traceview one per device.
- Host rows: HTA takes any event with ``args.stream`` for device work, so torch inductor's Triton
  launches, recorded as host ``cpu_op`` ranges that carry the CUDA stream, count as busy compute
  (the H200 CUDA-graph captures in benchmarks/gpu/captures: 0.03 % and 0.14 % of the span, all in
  their first steps); traceview's device events are the device's.
- HTA's inward rounding gives sub-µs kernels negative durations, and its breakdown then fails
  its own assertions (6 of the 14 H200 torch traces, at HTA's default setting); traceview has no
  rounding to fail.

traceview's step attribution differs again: it covers step windows only and splits device-idle
time by what the host was doing.
"""

from __future__ import annotations

import re

import numpy as np

from traceview.arrays import column_codes, membership
from traceview.schema import Kind, Timeline
from traceview.table import Table

_BUSY_KINDS = (Kind.KERNEL.value, Kind.MEMCPY.value, Kind.MEMSET.value, Kind.DEVICE_SYNC.value)
# Collective-communication kernels (NCCL, and RCCL which keeps NCCL's kernel names): HTA's
# ``hta.utils.utils.NCCL_KERNEL_RE``.
COMMUNICATION_KERNEL = re.compile(r"^nccl.*Kernel")


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


def device_time(timeline: Timeline) -> Table:
    """One row per device: span_ns, busy_ns, idle_ns, compute_ns, non_compute_ns and shares."""
    ev = timeline.table
    kind_in = membership(ev["kind"])
    busy_kind, kernel = kind_in(_BUSY_KINDS), kind_in([Kind.KERNEL.value])
    device = ev["device"]
    ts = ev["ts"]
    end = ts + ev["dur"]
    communication = _communication_kernels(ev)
    rows = []
    for dev in sorted(int(d) for d in np.unique(device[device >= 0])):
        busy_mask = (device == dev) & busy_kind
        if not busy_mask.any():
            continue
        span = int(end[busy_mask].max() - ts[busy_mask].min())
        busy = union_length(ts[busy_mask], end[busy_mask])
        kmask = busy_mask & kernel & ~communication
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
    return Table.from_records(rows)


def _communication_kernels(events: Table) -> np.ndarray:
    """Rows that are collective-communication kernels (the pattern is matched once per distinct name)."""
    codes, categories = column_codes(events["name"])
    hits = np.fromiter((COMMUNICATION_KERNEL.match(str(c)) is not None for c in categories), bool, len(categories))
    is_comm = np.append(hits, False)[codes]  # code -1 (missing name) picks the appended False
    return is_comm & membership(events["kind"])([Kind.KERNEL.value])
