"""What traceview's own H200 captures (benchmarks/gpu, benchmarks/truth/cases/gpu-*) hold it to,
beyond the scorer's per-case verdicts (tests/test_truth.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceview
from traceview.loader import load
from traceview.schema import Kind

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "benchmarks" / "truth" / "cases"
CAPTURES = ROOT / "benchmarks" / "gpu" / "captures"


def _trace(folder: Path) -> Path:
    found = sorted(folder.glob("*.pt.trace.json.gz")) or sorted(folder.glob("plugins/profile/*/*.xplane.pb.gz"))
    assert len(found) == 1, f"{folder}: {found}"
    return found[0]


def test_a_pageable_copy_call_is_the_copy_and_waits_for_it() -> None:
    """64 MB device → pageable host memory each step: the cudaMemcpyAsync call lasts 52.5 ms, its
    device copy 50.9 ms. The call's time outside the device copy is the host's part of the copy
    (memcpy.pageable), not launch overhead; replayed without the copy, the call ends with it."""
    trace = _trace(CASES / "gpu-large-d2h" / "injected")
    timeline = load(trace)
    ev = timeline.table
    copies = np.flatnonzero(timeline.kind_mask(Kind.MEMCPY))
    names = ev["name"].at(copies)
    pageable = copies[np.array(["Pageable" in str(n) for n in names], dtype=bool)]
    assert len(pageable), "the case copies to pageable memory every step"
    calls = np.flatnonzero(np.isin(ev["correlation"], ev["correlation"][pageable]) & (ev["device"] < 0))
    roles = {str(r) for r in ev["role"].at(calls)}
    assert roles == {"copy_pageable"}, roles
    diag = traceview.diagnose(trace)
    details = diag.steady_details()
    assert details.get("memcpy.pageable", 0.0) > 1e6  # ~1.55 ms a step outside the device copy
    assert details.get("launch_overhead.launch_api", 0.0) < 0.5e6
    first = next(f for f in diag.findings if f.grade in ("high", "moderate"))
    assert first.rule == "memcpy", [(f.rule, f.grade) for f in diag.findings]
    replayed = traceview.whatif(trace, without=["memcpy"])
    step = sum(diag.steady_attribution().values())
    # The copy and the call around it leave the step: it keeps the MLP's ~1.6 ms and the host's
    # unrecorded ~3.4 ms after each copy (freeing 64 MB of pageable memory), not the 52 ms call.
    assert replayed.predicted_step_ns < 0.15 * step, (replayed.predicted_step_ns, step)


def test_a_cuda_graph_replay_is_kernel_time_under_its_launch() -> None:
    """The clean twin of gpu-cuda-graph replays 800 tiny ops as one graph a step: the kernels it
    runs are kernel time, each tied to the one cudaGraphLaunch, and the report counts them per
    graph launch."""
    trace = _trace(CASES / "gpu-cuda-graph" / "clean")
    diag = traceview.diagnose(trace)
    stats = diag.launch
    assert stats.graph_launches_per_step == pytest.approx(1.0)
    assert stats.kernels_per_graph_launch >= 800  # 400 ops, each a multiply and an add
    assert diag.steady_attribution()["kernel"] > 0.3 * sum(diag.steady_attribution().values())


def test_the_eager_ops_against_their_graph_name_launch_overhead_as_the_gap() -> None:
    folder = CASES / "gpu-cuda-graph"
    cmp = traceview.compare(_trace(folder / "clean"), _trace(folder / "injected"))
    gaps = [f.rule for f in cmp.findings if f.grade in ("high", "moderate")]
    assert gaps and gaps[0] == "gap_launch_overhead", gaps


def test_a_host_ops_per_call_cost_is_dispatch_on_a_device_trace() -> None:
    """400 tiny ops a step (aten::mul / aten::add on 16 elements): on a device trace their whole
    host time is dispatch. The per-call split of CPU traces once left the first 3 µs of each in no
    layer, 2.4 ms a step of "idle (nothing recorded)" beside no gap in the trace."""
    diag = traceview.diagnose(_trace(CASES / "gpu-tiny-ops" / "injected"))
    steady, details = diag.steady_attribution(), diag.steady_details()
    unexplained = steady["idle"] - sum(v for k, v in details.items() if k.startswith("idle."))
    assert unexplained < 50_000, (steady["idle"], details)


def test_jax_replays_its_jitted_step_as_one_cuda_graph() -> None:
    """XLA names its graph launches "cuGraphLaunch (CudaGraph:N)": a launch of the step's 90
    kernels, one correlation id for all of them, which is no duplicate."""
    diag = traceview.diagnose(_trace(CAPTURES / "transformer" / "jax-jit"))
    assert diag.launch.graph_launches_per_step == pytest.approx(1.0)
    assert diag.launch.kernels_per_graph_launch == pytest.approx(90.0)
    assert diag.launch.graph_kernel_share == pytest.approx(1.0)
    assert diag.steady_details().get("launch_overhead.launch_api", 0.0) > 100_000  # the launch call itself
    assert not diag.quality.to_dict()["checks"].get("duplicate_correlation", {}).get("count"), \
        diag.quality.to_dict()["checks"].get("duplicate_correlation")


def test_kernels_compilation_launches_are_graph_building() -> None:
    """torch.compile given a new batch size every step runs the graph's ops on the device while it
    traces and lowers it (~97 ms of kernels a step, launched from inside its compile ranges): the
    compiler's work, which goes with the compile when graph building is removed."""
    trace = _trace(CASES / "gpu-compile-recompile" / "injected")
    diag = traceview.diagnose(trace)
    details = diag.steady_details()
    assert details.get("graph_build.device", 0.0) > 50e6, details.get("graph_build.device")
    assert diag.steady_attribution()["kernel"] < 5e6  # the step's own math: ~1 ms
    # The first calls of each newly compiled graph (AOT autograd's CompiledFunction and its backward,
    # ~15 ms a step outside their recorded work) hold the compile: a tracing call's set-up.
    assert details.get("graph_build.instantiate", 0.0) > 10e6, details.get("graph_build.instantiate")
    replayed = traceview.whatif(trace, without=["graph_build"])
    assert replayed.predicted_step_ns < 15e6  # (104 ms while they were kernel and dispatch time; the fix: 2.3 ms)


def test_xlas_autotuner_on_the_compile_threads_is_graph_building() -> None:
    """A jitted step given a new batch size every step: XLA autotunes the new program's GEMMs,
    launching candidate kernels and buffer copies from PjRt's compile threads
    (tf_pjrt_compile_thread_pool). That device work is the compile's, not the step's math."""
    trace = _trace(CASES / "gpu-jax-retrace" / "injected")
    diag = traceview.diagnose(trace)
    assert diag.steady_details().get("graph_build.device", 0.0) > 20e6
    assert diag.steady_attribution()["kernel"] < 1e6
    assert traceview.whatif(trace, without=["graph_build"]).predicted_step_ns < 20e6  # (49.7 ms before)


def test_a_step_already_in_cuda_graphs_is_not_told_to_capture_them() -> None:
    """torch.compile(mode='reduce-overhead') on the H200: the compiled regions replay as CUDA graphs
    and the loss and optimizer launch one by one; the advice names what lies outside the graphs."""
    diag = traceview.diagnose(_trace(CAPTURES / "mlp2" / "torch-cudagraphs"))
    advice = {f.rule: f.advice for f in diag.findings if f.rule in ("launch_bound", "short_kernels")}
    assert set(advice) == {"launch_bound", "short_kernels"}
    for rule, words in advice.items():
        assert "already replay as CUDA graphs" in words, (rule, words)
        assert "mode='reduce-overhead'" not in words, (rule, words)


SHARED_RESNET = ROOT.parent / "shared" / "traces" / "torch_gpu" / "resnet_v100_1rank.pt.trace.json.gz"


@pytest.mark.skipif(not SHARED_RESNET.is_file(), reason="shared GPU traces not present")
def test_faster_kernels_shorten_every_step_of_a_device_bound_loop() -> None:
    """ResNet on a V100 (a public trace): the device runs 93.6 ms of kernels a 95.7 ms step and the
    host, ~1,000 launches ahead, spends 72 ms a step in launch calls that wait for room in the
    queue. Those calls are waits for the device: with kernels twice as fast every step shortens
    (the last step alone did, where the loop waited for the whole queue)."""
    timeline = load(SHARED_RESNET)
    ev = timeline.table
    blocked = np.flatnonzero(np.array([str(r) == "launch_blocked" for r in ev["role"].at(np.arange(len(ev)))]))
    assert len(blocked) > 100
    replayed = traceview.whatif(SHARED_RESNET, scale={"kernel": 0.5})
    steps = replayed.steps
    saved = steps["recorded_ns"] - steps["predicted_ns"]
    assert (saved > 0.2 * steps["recorded_ns"]).all(), saved
