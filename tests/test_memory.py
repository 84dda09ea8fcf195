"""Allocator samples: read from a real torch capture (profile_memory=True), summed per step and
charged to the ops that allocate. The fixture (scripts/capture_torch_memory.py) builds a 64 MiB
scratch tensor with torch.ones in step 3 only: that step's peak and that op must stand out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from traceview.analyzers.memory import memory_use
from traceview.loader import load_with_steps, trace_paths
from traceview.readers import kineto
from traceview.schema import MEMORY_COLUMNS

FIXTURE = Path(__file__).resolve().parent / "data" / "torch_cpu_memory"
SCRATCH = 16 * 2**20 * 4  # 64 MiB of float32


def test_memory_samples_are_read_into_the_memory_table() -> None:
    path = trace_paths(FIXTURE)[0]
    timeline = kineto.read(path)
    memory = timeline.memory
    assert memory is not None and list(memory.columns) == list(MEMORY_COLUMNS)
    assert len(memory) == timeline.meta.dropped["memory sample (in the memory table)"]
    assert (np.diff(memory["ts"].to_numpy()) >= 0).all()
    # Every allocation is freed or still held: the running total matches the signed bytes.
    total = memory["total_allocated"].to_numpy()
    assert (np.diff(total) == memory["bytes"].to_numpy()[1:]).all()
    assert (memory["device"].to_numpy() == -1).all()  # a CPU capture: host memory only
    assert SCRATCH in memory["bytes"].to_numpy()


def test_peak_per_step_and_the_op_that_allocates() -> None:
    timeline, steps = load_with_steps(trace_paths(FIXTURE)[0])
    use = memory_use(timeline, steps)
    assert use is not None
    peaks = dict(zip(use.steps["number"].tolist(), use.steps["peak_allocated"].tolist()))
    others = [v for k, v in peaks.items() if k != 3]
    assert peaks[3] >= SCRATCH and max(others) < SCRATCH // 50
    top = use.ops.iloc[0]
    assert top["op"] == "aten::ones" and top["bytes"] == SCRATCH and top["allocations"] == 1
    assert use.steady_peak == peaks[3]
    # Bytes charged to ops add up to all steady-step allocations.
    steady = use.steps[use.steps["step"].isin(steps.steady_positions)]
    assert memory_use(timeline, steps, top=None).ops["bytes"].sum() == steady["allocated"].sum()


def test_no_samples_no_memory_use() -> None:
    sample = next((Path(__file__).resolve().parent.parent / "sample_traces" / "mlp2" / "torch-eager").glob("*.json.gz"))
    timeline, steps = load_with_steps(sample)
    assert timeline.memory is None and memory_use(timeline, steps) is None
