"""Allocator samples: read from real captures, summed per step and charged to the ops that allocate.

torch (profile_memory=True; scripts/capture_torch_memory.py): a 64 MiB scratch tensor built with
torch.ones in step 3 only: that step's peak and that op must stand out.

TensorFlow (BFC CPU allocator, MemoryAllocation / MemoryDeallocation; scripts/capture_tf_memory.py):
a tf.function step that broadcasts a scalar into a 4 MiB tensor (node ``scratch``) every step, and
a 16 MiB eager ``tf.fill`` in step 3. xprof's own memory profile of the same file
(tests/data/tf_cpu_memory/xprof_memory_profile.json) gives the peak to agree with.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from traceview.analyzers.memory import memory_use
from traceview.loader import load_with_steps, trace_paths
from traceview.readers import kineto, xplane
from traceview.schema import MEMORY_COLUMNS, MEMORY_SAMPLE_REASON

DATA = Path(__file__).resolve().parent / "data"
FIXTURE = DATA / "torch_cpu_memory"
SCRATCH = 16 * 2**20 * 4  # 64 MiB of float32

TF_FIXTURE = DATA / "tf_cpu_memory"
TF_SCRATCH = 2**20 * 4  # scripts/capture_tf_memory.py: SCRATCH_BYTES, allocated by node "scratch" every step
TF_BIG = 4 * 2**20 * 4  # BIG_BYTES, filled eagerly (op Fill) in step 3
TF_BIG_STEP = 3
TF_STEPS = 6


def test_memory_samples_are_read_into_the_memory_table() -> None:
    path = trace_paths(FIXTURE)[0]
    timeline = kineto.read(path)
    memory = timeline.memory.to_pandas() if timeline.memory is not None else None
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
    top = use.ops.row(0)
    assert top["op"] == "aten::ones" and top["bytes"] == SCRATCH and top["allocations"] == 1
    assert use.steady_peak == peaks[3]
    # Bytes charged to ops add up to all steady-step allocations.
    per_step = use.steps.to_pandas()
    steady = per_step[per_step["step"].isin(steps.steady_positions)]
    assert memory_use(timeline, steps, top=None).ops["bytes"].sum() == steady["allocated"].sum()


def test_no_samples_no_memory_use() -> None:
    sample = next((Path(__file__).resolve().parent.parent / "sample_traces" / "mlp2" / "torch-eager").glob("*.json.gz"))
    timeline, steps = load_with_steps(sample)
    assert timeline.memory is None and memory_use(timeline, steps) is None


def tf_trace() -> Path:
    return trace_paths(TF_FIXTURE)[0]


def test_tf_allocator_samples_are_read_into_the_memory_table() -> None:
    timeline = xplane.read(tf_trace())
    meta = timeline.meta
    memory = timeline.memory.to_pandas() if timeline.memory is not None else None
    assert memory is not None and list(memory.columns) == list(MEMORY_COLUMNS)
    assert len(memory) == meta.dropped[MEMORY_SAMPLE_REASON]
    assert sum(meta.kept.values()) + sum(meta.dropped.values()) == meta.input_events
    assert (np.diff(memory["ts"].to_numpy()) >= 0).all()
    # One allocator (TF's CPU BFC allocator), host memory, no reserved total in TF's stats.
    assert set(memory["allocator"].astype(str)) == {"bfc_cpu_allocator_for_gpu"}
    assert (memory["device"] == -1).all() and (memory["total_reserved"] == -1).all()
    # The allocator's bytes_allocated moves by each sample's allocation_bytes.
    total = memory["total_allocated"].to_numpy()
    assert (np.diff(total) == memory["bytes"].to_numpy()[1:]).all()
    # Every scratch tensor is allocated and freed whole, the free named after its allocation.
    scratch = memory[memory["op"] == "scratch"]
    assert sorted(set(scratch["bytes"].tolist())) == [-TF_SCRATCH, TF_SCRATCH]
    assert (scratch["bytes"] > 0).sum() == TF_STEPS


def test_tf_peak_per_step_and_the_ops_that_allocate() -> None:
    timeline, steps = load_with_steps(tf_trace())
    assert steps.table["number"].tolist() == list(range(TF_STEPS))
    use = memory_use(timeline, steps, top=None)
    assert use is not None
    # Each step allocates its scratch tensor once.
    memory = timeline.memory.to_pandas() if timeline.memory is not None else None
    scratch_ts = memory["ts"].to_numpy()[(memory["op"] == "scratch").to_numpy() & (memory["bytes"] > 0).to_numpy()]
    starts, ends = steps.table["start"], steps.table["end"]
    assert [int(((scratch_ts >= s) & (scratch_ts < e)).sum()) for s, e in zip(starts, ends)] == [1] * TF_STEPS
    # Every step holds the scratch tensor at its peak; step 3 the 16 MiB fill.
    peaks = dict(zip(use.steps["number"].tolist(), use.steps["peak_allocated"].tolist()))
    others = [v for k, v in peaks.items() if k != TF_BIG_STEP]
    assert peaks[TF_BIG_STEP] >= TF_BIG and min(others) >= TF_SCRATCH and max(others) < TF_BIG
    assert use.steady_peak == peaks[TF_BIG_STEP]
    # The ops as the allocator names them: the scratch node once a steady step, the fill once.
    ops = use.ops.to_pandas().set_index("op")
    steady = len(steps.steady_positions)
    assert steady == TF_STEPS - 1 and use.ops["op"][0] == "scratch"
    assert (ops.loc["scratch", "allocations"], ops.loc["scratch", "bytes"]) == (steady, steady * TF_SCRATCH)
    assert ops.loc["scratch", "bytes_per_step"] == TF_SCRATCH
    assert (ops.loc["Fill", "allocations"], ops.loc["Fill", "bytes"]) == (1, TF_BIG)
    # Bytes charged to ops add up to all steady-step allocations.
    steady_rows = np.isin(use.steps["step"], steps.steady_positions)
    assert use.ops["bytes"].sum() == use.steps["allocated"][steady_rows].sum()


def test_tf_peak_agrees_with_xprof() -> None:
    """xprof's memory profile (peak of heap allocated bytes + stack reserved bytes within the
    profile, per allocator) of the same file; its time is the event's offset within its XLine."""
    reference = json.loads((TF_FIXTURE / "xprof_memory_profile.json").read_text())["allocators"]
    timeline, steps = load_with_steps(tf_trace())
    memory = timeline.memory.to_pandas() if timeline.memory is not None else None
    for allocator, theirs in reference.items():
        ours = memory[memory["allocator"] == allocator]
        assert int(ours["total_allocated"].max()) == theirs["peak_heap_allocated_bytes"] + theirs[
            "peak_stack_reserved_bytes"]
    use = memory_use(timeline, steps)
    assert use is not None
    assert use.steady_peak == reference["bfc_cpu_allocator_for_gpu"]["peak_heap_allocated_bytes"]


def test_diagnose_reports_tf_memory_and_no_quality_problem() -> None:
    from traceview.api import diagnose, render

    diag = diagnose(TF_FIXTURE)
    assert diag.memory is not None and diag.memory.ops["op"][0] == "scratch"
    report = json.loads(render(diag, "json"))
    assert report["memory"]["steady_peak_bytes"] == diag.memory.steady_peak
    # The samples are kept in the memory table: an expected drop, not lost data.
    assert report["quality"]["problems"] == [] and report["quality"]["checks"]["dropped"]["count"] == 0
    assert report["quality"]["expected_drops"][MEMORY_SAMPLE_REASON] == diag.memory.samples
    text = render(diag, "terminal", width=120)
    assert "Memory (allocator samples)" in text and "scratch" in text
