"""How the host feeds the device: launches per step, launch-call cost, queueing, short kernels.

Definitions (HTA's ``cuda_kernel_analysis`` where they match):
- launch call: a host ``launch`` event with a correlation id that a device event shares;
- launch delay = device start − (launch start + launch duration), clipped at 0 (HTA: launch_delay);
- short kernel: device duration < its launch call's duration (HTA's definition; HTA's plot also
  leaves out launch calls over 50 µs, traceview counts every launch);
- outliers: launch call > 50 µs, launch delay > 100 µs (HTA's defaults);
- graph launches: a CUDA/HIP graph launch replays its kernels under one call (its correlation id);
  each of them is compared with that call (HTA 0.5.0 counts only cudaLaunchKernel / ExC launches,
  none of a graph's), and the stats say how many kernels a graph launch runs and how many of the
  kernels launched one by one are short.
CPU-only traces have no launches; they report the framework ops dispatched per step
(normalize.dispatched_ops) and the host time of the step's framework calls per op.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from traceview import categories as cat
from traceview.analyzers.pauses import without_pauses
from traceview.arrays import membership, rows_matching
from traceview.normalize import dispatched_ops, launch_rows, top_level_ops
from traceview.results import LaunchStats, Steps
from traceview.schema import Kind, Timeline

LAUNCH_OUTLIER_NS = 50_000
DELAY_OUTLIER_NS = 100_000


def launch_stats(timeline: Timeline, steps: Steps, paused: tuple[np.ndarray, np.ndarray] = ()) -> LaunchStats:
    """``paused``: the pauses taken off events' own time (:attr:`Attribution.paused_events`), which
    the host time per op leaves out, as the attribution does."""
    ev = timeline.table
    steady_idx = steps.steady_positions
    n = max(len(steady_idx), 1)
    in_steady = steps.in_steady(ev)
    calls = in_steady & top_level_ops(ev)
    ops = in_steady & dispatched_ops(ev)  # (the calls, a wrapper that ran ops one at a time opened)
    dur = ev["dur"]
    host_ns = float(without_pauses(dur, ev["parent"], calls, paused)[calls].sum())
    stats = LaunchStats(
        steady_steps=len(steady_idx),
        ops_per_step=float(ops.sum()) / n,
        host_ns_per_op=host_ns / int(ops.sum()) if ops.any() else 0.0,
    )
    if not timeline.has_device:
        return stats
    rows = launch_rows(ev)
    kernels = np.flatnonzero(membership(ev["kind"])([Kind.KERNEL.value]) & (rows >= 0))
    launches = rows[kernels]
    keep = in_steady[launches]
    kernels, launches = kernels[keep], launches[keep]
    if not len(kernels):
        return stats
    ts = ev["ts"]
    call = dur[launches]
    delay = np.maximum(ts[kernels] - (ts[launches] + call), 0)
    short = dur[kernels] < call
    # A graph launch replays many kernels under its one call (its correlation id): how many graph
    # launches a step makes, and how many kernels each runs.
    graph = rows_matching(ev["name"].take(launches), cat.GRAPH_LAUNCH)
    graph_calls = np.unique(launches[graph])
    return dataclasses.replace(
        stats,
        launches_per_step=len(kernels) / n,
        launch_call_median_ns=float(np.median(call)),
        launch_call_p95_ns=float(np.percentile(call, 95)),
        launch_delay_median_ns=float(np.median(delay)),
        launch_delay_p95_ns=float(np.percentile(delay, 95)),
        short_kernels_per_step=float(short.sum()) / n,
        short_kernel_share=float(short.mean()),
        launch_call_outliers=int((call > LAUNCH_OUTLIER_NS).sum()),
        launch_delay_outliers=int((delay > DELAY_OUTLIER_NS).sum()),
        device_ns_per_kernel=float(dur[kernels].mean()),
        graph_launches_per_step=len(graph_calls) / n,
        kernels_per_graph_launch=int(graph.sum()) / len(graph_calls) if len(graph_calls) else 0.0,
        graph_kernel_share=float(graph.mean()),
        short_kernel_share_outside_graphs=float(short[~graph].mean()) if (~graph).any() else 0.0,
    )
