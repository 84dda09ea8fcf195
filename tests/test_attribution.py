"""Attribution: buckets sum to the step on real traces; priority rules on small hand-built cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import TORCH_GPU_TRACES, XPLANE_GPU_TRACES, cached_diagnosis, sample_kineto_traces, sample_xplane_traces
import traceview
from traceview.analyzers.attribution import attribute
from traceview.analyzers.layers import PER_CALL_MAX_NS
from traceview.analyzers.steps import find_steps
from traceview.normalize import normalize
from traceview.results import BUCKETS, AttributionOptions
from traceview.schema import build_events, event_table, Timeline, TraceMeta

ALL_TRACES = TORCH_GPU_TRACES + XPLANE_GPU_TRACES + sample_kineto_traces() + sample_xplane_traces()


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_buckets_sum_to_each_step(path):
    diag = cached_diagnosis(path)
    per = np.stack([diag.attribution.per_step[b] for b in BUCKETS], axis=1)
    durations = diag.steps.table["duration"]
    assert len(durations) >= 1
    assert (per >= 0).all()
    # Exact in integer ns, not merely within rounding.
    np.testing.assert_array_equal(per.sum(axis=1), durations)
    steady = diag.steady_attribution()
    assert abs(sum(steady.values()) - durations[diag.steady_positions].mean()) <= 1e-6 * max(durations.max(), 1)


def _timeline(rows: list[dict]) -> Timeline:
    columns = {k: [r.get(k) for r in rows] for k in ("ts", "dur", "kind", "name", "track", "device", "stream",
                                                       "correlation", "copy_kind")}
    defaults = {"device": -1, "stream": -1, "correlation": -1, "copy_kind": "", "track": "host"}
    for key, default in defaults.items():
        columns[key] = [default if v is None else v for v in columns[key]]
    frame = build_events(columns)
    meta = TraceMeta(source="hand-built", format="test", framework="torch", input_events=len(rows))
    return normalize(Timeline(events=frame, meta=meta))


def _attribute(rows, gap_ns=0):
    tl = _timeline(rows)
    steps = find_steps(tl)
    return attribute(tl, steps, AttributionOptions(dispatch_gap_ns=gap_ns)), steps


def test_kernel_beats_memcpy_beats_host_states():
    rows = [
        {"ts": 0, "dur": 1000, "kind": "step", "name": "ProfilerStep#0"},
        {"ts": 10, "dur": 100, "kind": "launch", "name": "cudaLaunchKernel", "correlation": 1},
        {"ts": 200, "dur": 300, "kind": "kernel", "name": "k", "device": 0, "stream": 7, "correlation": 1, "track": "GPU 0 stream 7"},
        {"ts": 400, "dur": 200, "kind": "memcpy", "name": "Memcpy HtoD", "device": 0, "stream": 8, "copy_kind": "H2D", "track": "GPU 0 stream 8"},
        {"ts": 650, "dur": 100, "kind": "sync", "name": "cudaDeviceSynchronize"},
    ]
    attribution, _ = _attribute(rows)
    step = attribution.per_step.row(0)
    assert step["kernel"] == 300  # 200..500
    assert step["memcpy"] == 100  # 500..600 (400..500 overlaps the kernel)
    assert step["launch_overhead"] == 100 + 90  # launch call 10..110, queued 110..200
    assert step["sync_wait"] == 100
    assert step["idle"] == 10 + 50 + 250  # 0..10, 600..650, 750..1000
    assert step["total"] == 1000
    assert attribution.details.row(0)["memcpy.H2D"] == 100
    assert attribution.details.row(0)["launch_overhead.queued"] == 90


def test_cpu_trace_leaf_ops_are_kernel_time_and_wrappers_are_dispatch():
    us = 1_000
    rows = [
        {"ts": 0, "dur": 1000 * us, "kind": "step", "name": "ProfilerStep#0"},
        {"ts": 100 * us, "dur": 400 * us, "kind": "host_op", "name": "aten::linear"},
        {"ts": 150 * us, "dur": 20 * us, "kind": "host_op", "name": "aten::t"},
        {"ts": 200 * us, "dur": 250 * us, "kind": "host_op", "name": "aten::addmm"},
        {"ts": 600 * us, "dur": 100 * us, "kind": "graph_build", "name": "dynamo"},
        {"ts": 800 * us, "dur": 100 * us, "kind": "python", "name": "train.py(10): step"},
    ]
    attribution, _ = _attribute(rows)
    step = attribution.per_step.row(0)
    per_call = PER_CALL_MAX_NS  # the fixed cost of the addmm call
    assert attribution.mode == "cpu"
    assert step["kernel"] == 250 * us - per_call  # aten::addmm only: aten::linear wraps it, aten::t is a view op
    assert step["launch_overhead"] == 150 * us + per_call  # aten::linear outside addmm, incl. aten::t
    assert attribution.details.row(0)["launch_overhead.per_call"] == per_call
    assert step["graph_build"] == 100 * us
    assert step["host_compute"] == 100 * us
    assert step["idle"] == (1000 - 250 - 150 - 100 - 100) * us


def test_a_compiled_call_that_lasts_no_time_holds_no_dispatch():
    # A zero-length compiled call (a clock's resolution) beside dispatch: no interval to hold it.
    rows = [
        {"ts": 0, "dur": 1000, "kind": "step", "name": "ProfilerStep#0"},
        {"ts": 10, "dur": 100, "kind": "host_op", "name": "aten::mm"},
        {"ts": 1000, "dur": 1000, "kind": "step", "name": "ProfilerStep#1"},
        {"ts": 1000, "dur": 0, "kind": "host_op", "name": "CompiledFunction"},
        {"ts": 1010, "dur": 100, "kind": "host_op", "name": "aten::mm"},
    ]
    attribution, _ = _attribute(rows)
    per = attribution.per_step
    assert (sum(per[b] for b in per.columns if b != "total") == per["total"]).all()


def test_short_gaps_between_framework_ops_are_inferred_dispatch():
    rows = [
        {"ts": 0, "dur": 10_000, "kind": "step", "name": "ProfilerStep#0"},
        {"ts": 0, "dur": 1_000, "kind": "host_op", "name": "aten::mm"},
        {"ts": 1_030, "dur": 1_000, "kind": "host_op", "name": "aten::mm"},  # 30 ns gap
        {"ts": 9_000, "dur": 1_000, "kind": "host_op", "name": "aten::mm"},  # 6970 ns gap
    ]
    without, _ = _attribute(rows, gap_ns=0)
    with_rule, _ = _attribute(rows, gap_ns=100)
    assert without.details.row(0)["launch_overhead.inferred"] == 0
    assert with_rule.details.row(0)["launch_overhead.inferred"] == 30
    # The long gap is unrecorded host work on the step's thread (user code), not idle time.
    assert without.per_step.row(0)["idle"] == 7_000
    assert with_rule.details.row(0)["host_compute.inferred"] == 6_970
    assert with_rule.per_step.row(0)["idle"] == 0


def test_input_work_is_input_even_when_it_runs_framework_ops():
    rows = [
        {"ts": 0, "dur": 100_000, "kind": "step", "name": "ProfilerStep#0"},
        {"ts": 0, "dur": 50_000, "kind": "input", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"},
        {"ts": 10_000, "dur": 20_000, "kind": "host_op", "name": "aten::stack"},
        {"ts": 60_000, "dur": 10_000, "kind": "host_op", "name": "aten::clamp_min"},
    ]
    attribution, _ = _attribute(rows)
    step = attribution.per_step.row(0)
    # aten::stack runs inside the DataLoader: input-pipeline time, not the step's math.
    assert step["kernel"] == 10_000 - PER_CALL_MAX_NS
    assert step["input"] == 50_000


def test_step_windows_cover_device_work_and_do_not_overlap():
    rows = [
        {"ts": 0, "dur": 100, "kind": "step", "name": "ProfilerStep#1"},
        {"ts": 10, "dur": 10, "kind": "launch", "name": "cudaLaunchKernel", "correlation": 5},
        {"ts": 50, "dur": 150, "kind": "kernel", "name": "k", "device": 0, "stream": 7, "correlation": 5, "track": "GPU 0 stream 7"},
        {"ts": 120, "dur": 100, "kind": "step", "name": "ProfilerStep#2"},
        {"ts": 205, "dur": 5, "kind": "host_op", "name": "aten::add"},  # (a step holds events: empty ones are no steps)
    ]
    attribution, steps = _attribute(rows)
    table = steps.table
    assert table["end"].tolist()[0] == 200  # extended to the kernel's end
    assert table["start"].tolist()[1] == 200  # next step starts after it
    assert attribution.per_step["total"].tolist() == table["duration"].tolist()


def test_gaps_at_step_marker_edges_are_inferred_dispatch_too():
    rows = [
        {"ts": 0, "dur": 10_000, "kind": "step", "name": "train"},
        {"ts": 3_000, "dur": 1_000, "kind": "host_op", "name": "EagerLocalExecute: MatMul"},
        {"ts": 5_000, "dur": 1_000, "kind": "host_op", "name": "EagerLocalExecute: MatMul"},
    ]
    attribution, _ = _attribute(rows, gap_ns=3_500)
    # marker start → first op (3000 ns) and op → op (1000 ns) are short; last op → marker end (4000 ns) is not.
    assert attribution.details.row(0)["launch_overhead.inferred"] == 3_000 + 1_000
    assert attribution.details.row(0)["host_compute.inferred"] == 4_000
    assert attribution.per_step.row(0)["idle"] == 0


def test_a_gap_on_one_thread_is_not_hidden_by_a_later_op_on_another_thread():
    rows = [
        {"ts": 0, "dur": 100_000, "kind": "step", "name": "ProfilerStep#0", "track": "main"},
        {"ts": 0, "dur": 90_000, "kind": "host_op", "name": "aten::mm", "track": "worker"},
        {"ts": 10_000, "dur": 1_000, "kind": "host_op", "name": "aten::mm", "track": "main"},
        {"ts": 11_500, "dur": 1_000, "kind": "host_op", "name": "aten::mm", "track": "main"},
    ]
    # The 500 ns gap on "main" lies inside the worker's op, which ends later: it is still a gap on "main".
    tl = _timeline(rows)
    from traceview.analyzers.gaps import gaps_less_pauses, split_gaps, unrecorded_gaps

    steps = find_steps(tl)
    gaps = unrecorded_gaps(tl.table, steps)
    gaps = gaps_less_pauses(gaps, np.zeros(len(gaps.start), dtype=np.int64), {})
    (starts, ends), _, _, _ = split_gaps(gaps, AttributionOptions(dispatch_gap_ns=1_000))
    assert (11_000, 11_500) in set(zip(starts.tolist(), ends.tolist()))


def test_docs_tables_are_the_code_tables():
    from tests.conftest import REPO, gen_docs

    docs = gen_docs()
    doc = (REPO / "docs" / "attribution.md").read_text(encoding="utf-8")
    assert docs.render(doc) == doc, "docs/attribution.md is stale: run python scripts/gen_docs.py"
    schema = (REPO / "docs" / "schema.md").read_text(encoding="utf-8")
    assert docs.render(schema, docs.SCHEMA_BLOCKS) == schema, "docs/schema.md is stale: run scripts/gen_docs.py"


def test_a_waiting_call_takes_what_the_other_threads_do():
    rows = [
        {"ts": 0, "dur": 1000, "kind": "step", "name": "train", "track": "python"},
        {"ts": 0, "dur": 1000, "kind": "host_op", "name": "EagerLocalExecute: __inference_step_1", "track": "python"},
        {"ts": 100, "dur": 300, "kind": "host_op", "name": "dense/MatMul:MatMul", "track": "tf_Compute/1"},
        {"ts": 300, "dur": 300, "kind": "input", "name": "IteratorGetNextOp::DoCompute", "track": "tf_data/2"},
        {"ts": 700, "dur": 100, "kind": "host_op", "name": "ExecutorState::Process", "track": "tf_Compute/1"},
    ]
    attribution, _ = _attribute(rows)
    step = attribution.per_step.row(0)
    details = attribution.details.row(0)
    assert step["kernel"] == 300 and details["kernel.other_threads"] == 300  # compute first, even under input
    assert step["input"] == 200  # 400..600
    assert details["launch_overhead.dispatch"] == 100  # executor bookkeeping 700..800
    assert details["launch_overhead.call"] == 100 + 100 + 200  # nothing elsewhere: 0..100, 600..700, 800..1000
    assert step["total"] == 1000


def test_compute_on_another_thread_does_not_count_while_the_step_thread_works():
    rows = [
        {"ts": 0, "dur": 100_000, "kind": "step", "name": "ProfilerStep#0", "track": "main"},
        {"ts": 0, "dur": 100_000, "kind": "host_op", "name": "aten::addmm", "track": "main"},
        {"ts": 0, "dur": 100_000, "kind": "host_op", "name": "aten::mm", "track": "worker"},
    ]
    attribution, _ = _attribute(rows)
    assert attribution.details.row(0).get("kernel.other_threads", 0) == 0
    assert attribution.per_step.row(0)["kernel"] == 100_000 - PER_CALL_MAX_NS


@pytest.mark.parametrize("waiting_kind, waiting_name, own_bucket", [
    ("annotation", "user_metrics_range", "host_compute.annotation"),  # a user's range with nothing inside
    # JAX fetching an array's value: the wait is the program's compute, the rest the runtime's own.
    ("annotation", "np.asarray(jax.Array)", "launch_overhead.call"),
    ("host_op", "ParseArguments", "launch_overhead.dispatch"),  # framework runtime (a non-math op)
])
def test_the_step_thread_outside_its_own_compute_waits_for_compute_elsewhere(waiting_kind, waiting_name, own_bucket):
    """PjRt on CPU: the step's thread sits in the runtime's range while the client thread runs the
    XLA program; those moments are the program's compute, the rest of the range stays its own."""
    rows = [
        {"ts": 0, "dur": 1000, "kind": "step", "name": "train", "track": "python"},
        {"ts": 100, "dur": 800, "kind": waiting_kind, "name": waiting_name, "track": "python"},
        {"ts": 200, "dur": 500, "kind": "host_op", "name": "ThunkExecutor::Execute", "track": "client"},
        {"ts": 250, "dur": 300, "kind": "host_op", "name": "dot.2", "track": "client"},
        {"ts": 300, "dur": 200, "kind": "input", "name": "IteratorGetNextOp::DoCompute", "track": "tf_data/2"},
    ]
    attribution, _ = _attribute(rows)
    details = attribution.details.row(0)
    assert details["kernel.other_threads"] == 500  # 200..700: the execution and its instruction
    assert details[own_bucket] == 300  # 100..200 and 700..900: nothing runs elsewhere
    assert attribution.per_step.row(0)["input"] == 0  # a pipeline elsewhere is not the wait


def test_instructions_at_the_top_of_an_xla_worker_thread_are_compute():
    from traceview.role_passes import assign_roles

    rows = [
        {"ts": 0, "dur": 1000, "kind": "step", "name": "train", "track": "python"},
        {"ts": 10, "dur": 50, "kind": "host_op", "name": "TFE_DeleteTensorHandle", "track": "python"},
        {"ts": 100, "dur": 300, "kind": "host_op", "name": "ThunkExecutor::Execute", "track": "python"},
        {"ts": 120, "dur": 100, "kind": "host_op", "name": "dot.1", "track": "python"},
        {"ts": 100, "dur": 100, "kind": "host_op", "name": "ThunkExecutor::Execute", "track": "XLAEigen/1"},
        {"ts": 300, "dur": 100, "kind": "host_op", "name": "ynn_fusion.3", "track": "XLAEigen/1"},  # nothing around it
        {"ts": 300, "dur": 100, "kind": "host_op", "name": "copy_fusion", "track": "other/2"},  # no executions there
    ]
    events = _timeline(rows).events
    role = dict(zip(events["name"].astype(str) + "@" + events["track"].astype(str), assign_roles(event_table(events))))
    assert role["ynn_fusion.3@XLAEigen/1"] == "compute"
    assert role["dot.1@python"] == "compute"  # inside an execution: the nesting rule
    assert role["copy_fusion@other/2"] == "dispatch"  # a thread that runs no executions
    assert role["TFE_DeleteTensorHandle@python"] == "dispatch"  # not at the top of a worker


def test_user_frame_between_framework_calls_is_the_binding_and_long_user_work_is_host_compute():
    rows = [
        {"ts": 0, "dur": 10_000, "kind": "step", "name": "ProfilerStep#0", "track": "main"},
        {"ts": 0, "dur": 10_000, "kind": "python", "name": "train.py(3): step", "track": "main"},
        {"ts": 0, "dur": 1_000, "kind": "host_op", "name": "aten::addmm", "track": "main"},
        {"ts": 1_500, "dur": 1_000, "kind": "host_op", "name": "aten::addmm", "track": "main"},  # 500 ns binding
        {"ts": 9_000, "dur": 1_000, "kind": "host_op", "name": "aten::addmm", "track": "main"},  # 6.5 µs user work
    ]
    attribution, _ = _attribute(rows, gap_ns=1_000)
    details = attribution.details.row(0)
    assert details["launch_overhead.binding"] == 500
    assert details["host_compute.python"] == 6_500


def test_ops_on_tiny_recorded_inputs_are_dispatch():
    frame = build_events({"ts": [0, 0, 100], "dur": [1000, 50, 50], "kind": ["step", "host_op", "host_op"],
                          "name": ["ProfilerStep#0", "aten::mul", "aten::mul"], "track": ["t"] * 3})
    frame["elements"] = np.array([-1, 8, 1_000_000])
    tl = normalize(Timeline(events=frame, meta=TraceMeta(source="x", format="test", framework="torch")))
    assert tl.events["role"].astype(str).tolist() == ["step", "dispatch", "compute"]


def test_a_runtime_call_too_long_for_steady_state_is_startup():
    rows = [
        {"ts": 0, "dur": 400_000_000, "kind": "host_op", "name": "aten::empty_strided"},
        {"ts": 10, "dur": 300_000_000, "kind": "runtime", "name": "cudaDeviceGetStreamPriorityRange"},
        {"ts": 300_000_100, "dur": 1_000, "kind": "runtime", "name": "cudaStreamIsCapturing"},
    ]
    tl = _timeline(rows)
    assert tl.events["role"].astype(str).tolist() == ["view_alloc", "startup", "runtime"]


def test_copy_layers_cover_every_copy_kind():
    from traceview.analyzers.layers import COPY_KINDS
    from traceview.schema import CopyKind

    assert sorted(COPY_KINDS) == sorted(kind.value for kind in CopyKind if kind is not CopyKind.NONE)


@pytest.mark.parametrize("gaps,expected", [
    ([20_000] * 50 + [5_000_000] * 4, 100_000),  # a jump from 20 µs to 5 ms: threshold at the floor
    ([int(10_000 * 1.5 ** k) for k in range(14)], 2_000_000),  # one continuous population: the ceiling
    ([30_000] * 10 + [300_000] * 10 + [3_000_000] * 3, 300_000),  # equal jumps: the higher one
])
def test_gap_threshold_is_the_top_of_the_glue_population(gaps, expected):
    from traceview.analyzers.gaps import calibrated_gap_threshold

    threshold, rule = calibrated_gap_threshold(np.array(gaps))
    assert threshold == expected, rule


def test_capture_manifest_facts_apply_only_to_the_trace_they_name(tmp_path):
    import json
    import shutil

    from tests.conftest import SAMPLES
    from traceview.capture_facts import capture_facts

    source = SAMPLES / "mlp2" / "torch-eager"
    if not source.is_dir():
        pytest.skip("sample traces not present")
    folder = tmp_path / "capture"
    shutil.copytree(source, folder)
    trace = next(folder.glob("*.pt.trace.json.gz"))
    facts = capture_facts(trace)
    assert facts["cold_steps"] == [0] and facts["unprofiled_step_ns"] > 0 and facts["intra_op_threads"] >= 1
    other = folder / "other.pt.trace.json.gz"
    shutil.copy(trace, other)
    assert capture_facts(other) == {}
    (folder / "manifest.json").write_text(json.dumps({"trace": "not a dict"}))
    assert capture_facts(trace) == {}


def test_per_call_cost_of_a_shared_entry_point_is_taken_off_compute_calls():
    frame = build_events({
        "ts": [0, 0, 100, 200], "dur": [1000, 50, 30, 300],
        "kind": ["step", "host_op", "host_op", "host_op"],
        "name": ["train", "KernelAndDeviceFunc::Run", "KernelAndDeviceFunc::Run", "KernelAndDeviceFunc::Run"],
        "track": ["python"] * 4})
    frame["fw_op"] = pd.Categorical(["", "ReadVariableOp", "Identity", "MatMul"])
    frame["fn_call"] = pd.Categorical([""] * 4)
    tl = normalize(Timeline(events=frame, meta=TraceMeta(source="x", format="test", framework="tensorflow")))
    steps = find_steps(tl)
    attribution = attribute(tl, steps, AttributionOptions(dispatch_gap_ns=0))
    details = attribution.details.row(0)
    # No-math calls cost 50 and 30 ns by themselves: median 40 ns of the MatMul call is the call.
    assert details["launch_overhead.per_call"] == 40
    assert attribution.per_step.row(0)["kernel"] == 260


TRUTH_CASES = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases"


@pytest.mark.parametrize("case, python_events", [("tf-user-python", False), ("torch-user-python", True)])
def test_host_compute_says_when_no_python_calls_could_tell_user_code_from_framework_code(
        case: str, python_events: bool) -> None:
    """TF records no Python calls: the user's loop shows only as unrecorded time on the step's
    thread, which the framework's own Python (a Session.run wrapper, Keras layers) would too."""
    folder = TRUTH_CASES / case / "injected"
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    diagnosis = traceview.diagnose(folder)
    finding = next(f for f in diagnosis.findings if f.rule == "host_compute")
    assert finding.grade in ("high", "moderate") and finding.evidence["python_events"] is python_events
    assert ("records no Python calls" in finding.summary) is (not python_events), finding.summary


PYTHON_LISTS = Path(__file__).resolve().parent / "data" / "torch_cpu_python"  # (how: capture.py there)


def test_glue_many_times_the_recorded_dispatch_is_flagged_as_possibly_user_code():
    """Real captures: a torch step that builds its batch from Python lists (0.29 of 0.75 ms
    unprofiled). Without Python events the tokenizer's time is unrecorded gaps between ops,
    which the gap rule calls framework glue: launch_bound's advice first says how to tell the
    two apart. With Python events the tokenizer is recorded (host compute), and the advice is
    the usual one."""
    plain = traceview.diagnose(PYTHON_LISTS / "tokenize")
    found = next(f for f in plain.findings if f.rule == "launch_bound")
    assert found.evidence["python_events"] is False
    assert found.evidence["inferred_ns_per_op"] > 3 * found.evidence["recorded_ns_per_op"]
    assert found.advice.startswith("first tell glue from your code")
    stacked = traceview.diagnose(PYTHON_LISTS / "tokenize_stack")
    assert stacked.steady_attribution()["host_compute"] > 0.3 * stacked.steady_step_ns
    found = next(f for f in stacked.findings if f.rule == "launch_bound")
    assert found.evidence["python_events"] is True and not found.advice.startswith("first tell")


def test_an_update_run_one_tensor_at_a_time_is_pointed_at_a_foreach_optimizer():
    """Real captures (tests/data/torch_cpu_optimizer/capture.py): Adam over 100 parameter tensors,
    foreach=False (3.94 ms a step unprofiled) and foreach=True (3.12 ms). Where most of the step's
    ops are the update's, one tensor at a time, launch_bound first advises a foreach / fused
    optimizer; where the update is already multi-tensor, it does not."""
    data = Path(__file__).resolve().parent / "data" / "torch_cpu_optimizer"
    per_tensor = next(f for f in traceview.diagnose(data / "per_tensor").findings if f.rule == "launch_bound")
    foreach = next(f for f in traceview.diagnose(data / "foreach").findings if f.rule == "launch_bound")
    assert per_tensor.evidence["optimizer_ops_per_step"] >= 400 and per_tensor.evidence["optimizer_op_share"] > 0.5
    assert per_tensor.advice.startswith("most of the step's ops are the optimizer's update")
    assert "foreach" not in foreach.advice and foreach.evidence["optimizer_ops_per_step"] == 0


def test_pauses_beside_the_programs_own_dataloader_workers_point_at_them():
    """A real capture (tests/data/torch_cpu_workers/capture.py): a DataLoader with two worker
    processes on a two-core machine. Where the step's thread pauses, the other process is likely
    the program's own workers: the advice says so first (it only said "capture on an otherwise
    idle machine"); a trace without workers keeps the machine's advice."""
    data = Path(__file__).resolve().parent / "data"
    workers = next(f for f in traceview.diagnose(data / "torch_cpu_workers" / "two_workers").findings
                   if f.rule == "paused")
    assert workers.evidence["dataloader_workers"] is True
    assert workers.advice.startswith("the program's own DataLoader worker processes run beside the step")
    alone = next(f for f in traceview.diagnose(data / "torch_cpu_optimizer" / "per_tensor").findings
                 if f.rule == "paused")
    assert alone.grade == "skipped" or (alone.evidence["dataloader_workers"] is False
                                        and alone.advice.startswith("time the machine took"))


def test_overhead_outside_the_step_functions_calls_is_not_sent_to_the_compiler():
    """A real capture (tests/data/tf_cpu_callback_save/capture.py): Keras fit with a callback that
    saves the weights after every batch, inside the step marker. The train function (a
    tf.function) is a fifth of the step; the rest is the save's eager ops and the gaps between
    them. launch_bound said "let XLA fuse the function's ops (jit_compile=True)"; it now says
    the overhead lies outside the function's calls. Every tf.function sample keeps the mode's
    advice (their overhead is inside the calls)."""
    from tests.conftest import SAMPLES
    from traceview.analyzers.findings.diagnosis import OUTSIDE_CALLS_SHARE
    from traceview.loader import trace_paths

    data = Path(__file__).resolve().parent / "data" / "tf_cpu_callback_save"
    diag = traceview.diagnose(trace_paths(data)[0])
    assert diag.mode == "tensorflow-function"
    launch = next(f for f in diag.findings if f.rule == "launch_bound")
    assert launch.grade == "high" and launch.evidence["launch_outside_calls_share"] >= OUTSIDE_CALLS_SHARE
    assert "outside the step's tf.function calls" in launch.advice and "jit_compile" not in launch.advice
    for folder in sorted(SAMPLES.glob("*/tf-function")) + sorted(SAMPLES.glob("*/tf-xla")):
        sample = next(f for f in cached_diagnosis(trace_paths(folder)[0]).findings if f.rule == "launch_bound")
        if sample.grade != "none":
            assert sample.evidence["launch_outside_calls_share"] < OUTSIDE_CALLS_SHARE, folder
            assert "outside the step's tf.function calls" not in sample.advice


def test_torch_compile_overhead_outside_the_compiled_code_is_named_and_cpu_gets_no_cuda_graphs():
    """The torch.compile samples (CPU, one compiled region a step): most of their launch/dispatch
    time lies outside the compiled code — torch.compile's wrappers around the region and the eager
    loss / optimizer between regions. The advice said "the step is already one compiled graph:
    capture it in CUDA graphs", on traces without a device; it now says where the overhead is."""
    from tests.conftest import SAMPLES
    from traceview.analyzers.findings.diagnosis import OUTSIDE_CALLS_SHARE
    from traceview.loader import trace_paths

    checked = 0
    for folder in sorted(SAMPLES.glob("*/torch-compile")):
        diag = cached_diagnosis(trace_paths(folder)[0])
        launch = next(f for f in diag.findings if f.rule == "launch_bound")
        if diag.mode != "torch-compile" or launch.grade == "none":
            continue  # (lstm: dynamo falls back to eager)
        assert launch.evidence["launch_outside_calls_share"] >= OUTSIDE_CALLS_SHARE, folder
        assert "outside the compiled code" in launch.advice and "CUDA graphs" not in launch.advice, folder
        checked += 1
    assert checked >= 5


def test_input_advice_follows_what_the_tf_data_pipeline_already_does():
    """tf.data's iterators name their place in the pipeline (Iterator::Root::Prefetch::Map::…).
    A pipeline that maps one element at a time and never prefetches (the tf-input-map ground-truth
    case) is told both; one that already prefetches and maps in parallel (Keras fit's own, on the
    mlp2 sample) is told its producer is slower than the step — not to "prefetch" again."""
    from tests.conftest import SAMPLES
    from traceview.analyzers.findings.diagnosis import tf_data_components
    from traceview.loader import trace_paths

    truth = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases" / "tf-input-map" / "injected"
    plain = cached_diagnosis(trace_paths(truth)[0])
    assert {"Map", "BatchV2"} <= tf_data_components(plain) and "Prefetch" not in tf_data_components(plain)
    advice = next(f for f in plain.findings if f.rule == "input_bound").advice
    assert "num_parallel_calls=tf.data.AUTOTUNE" in advice and ".prefetch(tf.data.AUTOTUNE)" in advice
    fit = cached_diagnosis(trace_paths(SAMPLES / "mlp2" / "tf-fit")[0])
    assert {"Prefetch", "ParallelMapV2"} <= tf_data_components(fit)
    finding = next(f for f in fit.findings if f.rule == "input_bound")
    assert finding.grade != "none" and finding.evidence["tf_data_datasets"]
    assert finding.advice.startswith("the tf.data pipeline already prefetches and maps in parallel")
    assert "num_parallel_calls" not in finding.advice


def test_time_between_profiler_steps_is_the_profilers_own_step_call():
    """torch's ProfilerStep#N runs from one prof.step() call to the next: the loop's own work is
    inside the steps, the gap between them is step()'s bookkeeping (42.7 µs on the mlp2 sample,
    graded "move logging out of the loop"). TF's Trace markers end where the user's step does:
    time between them is the user's (the tf-python-between-steps ground-truth case)."""
    from tests.conftest import SAMPLES
    from traceview.loader import trace_paths

    torch_gap = next(f for f in cached_diagnosis(trace_paths(SAMPLES / "mlp2" / "torch-eager")[0]).findings
                     if f.rule == "host_between_steps")
    assert torch_gap.grade == "none" and torch_gap.evidence["profiler_step_transition"] is True
    assert torch_gap.evidence["mean_gap_ns"] > 0 and "own step() call" in torch_gap.summary
    truth = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases" / "tf-python-between-steps"
    tf_gap = next(f for f in cached_diagnosis(trace_paths(truth / "injected")[0]).findings
                  if f.rule == "host_between_steps")
    assert tf_gap.grade != "none" and "profiler_step_transition" not in tf_gap.evidence


def test_time_between_steps_says_what_it_holds_and_whether_it_is_occasional():
    """A real capture (tests/data/tf_cpu_unmarked/fit_validation): Keras fit with validation_data,
    the steps found without markers. Between two training steps the epoch ends: a validation pass
    (calls of the compiled evaluation function) and a new iterator. That one gap is most of the
    between-step time: the finding says it is occasional and what it holds, and advises on the
    validation pass (it said "move logging, metrics and checkpoint work out of the loop"). The
    ground-truth case with Python between every step keeps that advice."""
    from traceview.analyzers.findings.diagnosis import BETWEEN_STEPS_DEFAULT
    from traceview.loader import trace_paths

    data = Path(__file__).resolve().parent / "data" / "tf_cpu_unmarked" / "fit_validation"
    between = next(f for f in cached_diagnosis(trace_paths(data)[0]).findings if f.rule == "host_between_steps")
    assert between.evidence["largest_gap_ns"] >= 0.5 * between.evidence["mean_gap_ns"] * 2
    assert between.evidence["between_steps_compiled_calls_ns"] > between.evidence.get("between_steps_input_ns", 0)
    assert between.advice.startswith("the loop calls compiled functions between training steps")
    assert "occasional work" in between.summary
    truth = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases" / "tf-python-between-steps"
    user = next(f for f in cached_diagnosis(trace_paths(truth / "injected")[0]).findings
                if f.rule == "host_between_steps")
    assert user.advice == BETWEEN_STEPS_DEFAULT and "largest_gap_ns" not in user.evidence


def _backward_steps(hooked_us: list[int]) -> list[dict]:
    """Steps of 2 ms, each with two autograd node ranges around a 100 µs op: the first range's own
    time is ``hooked_us[i]`` in step i, the second's 5 µs (the engine's bookkeeping)."""
    rows = []
    for i, own_us in enumerate(hooked_us):
        t = i * 2_000_000
        rows += [
            {"ts": t, "dur": 2_000_000, "kind": "step", "name": f"ProfilerStep#{i}", "track": "main"},
            {"ts": t + 1_000, "dur": (own_us + 100) * 1_000, "kind": "host_op", "track": "main",
             "name": "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"},
            {"ts": t + 1_000 + own_us * 1_000, "dur": 100_000, "kind": "host_op", "track": "main",
             "name": "torch::autograd::AccumulateGrad"},
            {"ts": t + 1_000_000, "dur": 105_000, "kind": "host_op", "track": "main",
             "name": "autograd::engine::evaluate_function: AddmmBackward0"},
            {"ts": t + 1_000_000, "dur": 100_000, "kind": "host_op", "track": "main", "name": "AddmmBackward0"},
        ]
    return rows


def test_hooks_the_engine_runs_around_a_node_every_step_are_host_compute_and_a_stall_is_not():
    """A node range whose own time is far beyond the engine's bookkeeping in most steps ran hooks
    (a tensor hook on a weight: the user's Python without a Python tracer); its own time beyond
    the other ranges' median is host compute. Once in five steps is a stall, not a hook."""
    attribution, _ = _attribute(_backward_steps([600, 600, 600, 600, 600]))
    hooks = attribution.details["host_compute.hooks"]
    assert list(hooks) == [595_000] * 5  # 600 µs own time, less the 5 µs median bookkeeping
    attribution, _ = _attribute(_backward_steps([600, 5, 5, 5, 5]))
    assert "host_compute.hooks" not in attribution.details or not attribution.details["host_compute.hooks"].any()


@pytest.mark.parametrize("variant, hook_detail", [("function", "host_compute.python"),
                                                  ("tensor_hooks", "host_compute.hooks"),
                                                  ("module_hooks", "host_compute.hooks")])
def test_the_users_python_run_by_autograd_is_host_compute_without_a_python_tracer(variant, hook_detail):
    """Real captures (tests/data/torch_cpu_hooks/capture.py, no Python tracer): 1.8 ms of the
    user's Python a step in a custom autograd.Function's backward, in tensor hooks, in module
    backward hooks — each read as launch/dispatch (95-105 % of the gap to a clean step). Now
    host compute, about 1.8 ms, the first finding naming where it runs."""
    data = Path(__file__).resolve().parent / "data" / "torch_cpu_hooks"
    diag = traceview.diagnose(data / variant)
    details = diag.steady_details()
    assert 1.5e6 <= details[hook_detail] <= 2.3e6
    first = diag.findings[0]
    assert first.rule == "host_compute"
    if variant == "function":
        assert first.evidence["python_ops"] == ["ScaleGradBackward", "ScaleGrad"]
    else:
        assert first.evidence["hooked_nodes"][0] in ("torch::autograd::AccumulateGrad", "BackwardHookFunctionBackward")


def test_a_framework_range_holding_far_more_than_dispatch_is_named_before_fusing_advice():
    """A real capture (tests/data/torch_cpu_hooks/capture.py): an optimizer step post-hook running
    1.8 ms of Python inside torch.optim's range, no Python tracer: nothing in the trace tells whose
    Python it is, so the time stays launch/dispatch, but the advice first names the range whose own
    time holds it (94 µs of dispatch "per op" read as "fuse the ops"); the clean twin's advice
    does not change."""
    data = Path(__file__).resolve().parent / "data" / "torch_cpu_hooks"
    hooked = next(f for f in traceview.diagnose(data / "optimizer_hook").findings if f.rule == "launch_bound")
    assert hooked.evidence["heavy_own_op"] == "Optimizer.step#SGD.step"
    assert hooked.advice.startswith("first see what runs inside 'Optimizer.step#SGD.step'")
    assert 1.5e6 <= hooked.evidence["heavy_own_ns_per_step"] <= 2.3e6
    for variant in ("function", "tensor_hooks"):
        launch = next(f for f in traceview.diagnose(data / variant).findings if f.rule == "launch_bound")
        assert "heavy_own_op" not in launch.evidence


def test_a_jitted_call_that_compiles_is_a_tracing_call() -> None:
    """JAX records no 'traced' stat on its calls: a jitted call given a new static value every step
    holds the compile's ranges, and its unrecorded time around them (the Python tracing, with the
    Python tracer off) is graph building's (graph_build.instantiate), not the call's runtime."""
    folder = TRUTH_CASES / "jax-retrace" / "injected"
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    diagnosis = traceview.diagnose(folder)
    ev = diagnosis.timeline.table
    rows = np.arange(len(ev))
    names = ev["name"].at(rows)
    roles = ev["role"].at(rows)
    steady = np.isin(ev["step"], diagnosis.steady_positions)
    step_calls = np.array([str(n) == "PjitFunction(train_step)" for n in names]) & steady
    assert step_calls.any() and {str(r) for r in roles[step_calls]} == {"call_tracing"}
    details = diagnosis.steady_details()
    assert details.get("graph_build.instantiate", 0.0) > 5e6  # ~6.5 ms a step (was launch_overhead.call)
