"""One example per row of the role table (traceview.roles.ROLE_RULES), plus the nesting rules."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from traceview.normalize import normalize
from traceview.role_passes import XLA_CACHE_HIT_NS, assign_roles
from traceview.roles import ROLE_RULES, Role
from traceview.schema import build_events, event_table, Timeline, TraceMeta

# (row index, kind, name, fw_op, tf_function_call stat) → the row that must decide it.
EXAMPLES: list[tuple[int, str, str, str, str]] = [
    (0, "annotation", "## Call CompiledFxGraph fbhyvehkxiglyjy ##", "", ""),
    (1, "host_op", "CpuExecutable::ExecuteAsyncOnStream", "__inference__step_151", ""),
    (2, "annotation", "ThunkExecutor::Execute (wait for completion)", "", ""),
    (3, "host_op", "multi_step_on_iterator", "", "notTraced-nonXla"),
    (4, "host_op", "cluster_0:_XlaCompile", "", ""),
    (5, "host_op", "EagerLocalExecute: IteratorGetNext", "IteratorGetNext", ""),
    (6, "host_op", "iterator/MakeIterator:MakeIterator", "", ""),
    (7, "host_op", "KernelAndDeviceFunc::Run", "__inference__step_151", ""),
    (8, "host_op", "__inference__step_151:__inference__step_151", "", ""),
    (9, "host_op", "EagerLocalExecute: __inference_train_step_42", "", ""),
    (10, "host_op", "CompiledFunctionBackward", "", ""),
    (11, "host_op", "torch::jit::(anonymous namespace)::DifferentiableGraphBackward", "", ""),
    (12, "annotation", "SessionRun", "", ""),
    (13, "host_op", "PjitFunction(train_step)", "", ""),
    (14, "annotation", "np.asarray(jax.Array)", "", ""),
    (15, "host_op", "TorchDynamo Cache Lookup", "", ""),
    (16, "host_op", "autograd::engine::evaluate_function: AddmmBackward0", "", ""),
    (17, "host_op", "aten::empty_strided", "", ""),
    (18, "host_op", "aten::linear", "", ""),
    (19, "host_op", "dense/MatMul/ReadVariableOp:ReadVariableOp", "", ""),
    (20, "host_op", "KernelAndDeviceFunc::Run", "ReadVariableOp", ""),
    (21, "host_op", "EagerPyFunc:EagerPyFunc", "", ""),
    (22, "host_op", "KernelAndDeviceOp::Run", "EagerPyFunc", ""),
    (23, "host_op", "tf_print/StringFormat:StringFormat", "", ""),
    (24, "host_op", "KernelAndDeviceOp::Run", "PrintV2", ""),
    (25, "host_op", "aten::addmm", "", ""),
    (26, "host_op", "sgd_1/CollectiveReduceV2:CollectiveReduceV2", "", ""),
    (27, "host_op", "all-reduce.4", "", ""),
    (28, "host_op", "sgd_1/Mul_3:Mul", "", ""),
    (29, "host_op", "KernelAndDeviceFunc::Run", "MatMul", ""),
    (30, "host_op", "ynn_fusion.2", "jit(_eval_step)/conv_general_dilated", ""),
    (31, "annotation", "Optimizer.step#SGD.step", "", ""),
    (32, "annotation", "DistributedDataParallel.forward", "", ""),
    (33, "host_op", "TFE_Py_FastPathExecute_C", "", ""),
    (34, "annotation", "gloo:all_reduce", "", ""),
    (35, "annotation", "CollectiveExecutor::ExecuteAsync::Done", "", ""),
    (36, "annotation", "ExecutorState::ProcessAsync::Start", "", ""),
    (37, "annotation", "my_record_function_range", "", ""),
    (38, "python", "torch/_dynamo/convert_frame.py(1200): __call__", "", ""),
    (39, "python", "$pjit.py:466 _trace_for_jit", "", ""),
    (40, "python", "torch/nn/modules/module.py(1751): _call_impl", "", ""),
    (41, "python", "train.py(42): step", "", ""),
]
# Examples that carry XPlane's hlo_op stat (an XLA thunk), by name.
HLO_OPS = {"ynn_fusion.2": "ynn_fusion.2"}
# Device rows: (row index, kind, kernel name, launcher: the framework op that queued it).
DEVICE_EXAMPLES: list[tuple[int, str, str, str]] = [
    (42, "kernel", "cross_device_reduce_1stage", "record_param_comms"),
    (43, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all-reduce-start.1"),
    (44, "kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "jit(train_step)/all_gather"),
    (45, "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", ""),
]


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = build_events({key: [r.get(key, default) for r in rows] for key, default in
                          (("ts", 0), ("dur", 10), ("kind", "host_op"), ("name", ""), ("track", "t"),
                           ("parent", -1), ("depth", 0))})
    frame["fw_op"] = pd.Categorical([r.get("fw_op", "") for r in rows])
    frame["fn_call"] = pd.Categorical([r.get("fn_call", "") for r in rows])
    frame["hlo_op"] = pd.Categorical([r.get("hlo_op", "") for r in rows])
    return frame


def test_every_row_has_an_example():
    assert sorted([e[0] for e in EXAMPLES] + [e[0] for e in DEVICE_EXAMPLES]) == list(range(len(ROLE_RULES)))


@pytest.mark.parametrize("row,kind,name,fw_op,fn_call", EXAMPLES, ids=[f"row{e[0]}" for e in EXAMPLES])
def test_row_decides_its_example(row: int, kind: str, name: str, fw_op: str, fn_call: str):
    hlo_op = HLO_OPS.get(name, "")
    # (long enough to be what it is by name: an XLA compile op shorter than a lookup is the cache's)
    frame = _frame([{"kind": kind, "name": name, "fw_op": fw_op, "fn_call": fn_call, "hlo_op": hlo_op,
                     "dur": XLA_CACHE_HIT_NS * 10}])
    assert assign_roles(event_table(frame))[0] == ROLE_RULES[row].role.value
    # And no earlier row would have matched it: the example exercises this row.
    for earlier in ROLE_RULES[:row]:
        if kind not in earlier.kinds:
            continue
        hit = (earlier.name is None or bool(earlier.name.search(name))) and \
              (earlier.fw_op is None or bool(earlier.fw_op.search(fw_op))) and (not earlier.fn_call or fn_call != "") \
              and (not earlier.hlo_op or hlo_op != "")
        assert not hit or earlier.role == ROLE_RULES[row].role, earlier.source


@pytest.mark.parametrize("row,kind,name,launcher", DEVICE_EXAMPLES, ids=[f"row{e[0]}" for e in DEVICE_EXAMPLES])
def test_device_row_decides_its_example(row: int, kind: str, name: str, launcher: str):
    frame = build_events({"kind": [kind], "name": [name], "launcher": [launcher], "device": [0], "stream": [7]})
    assert assign_roles(event_table(frame))[0] == ROLE_RULES[row].role.value
    for earlier in ROLE_RULES[:row]:
        if kind not in earlier.kinds:
            continue
        hit = (earlier.name is None or bool(earlier.name.search(name))) and \
              (earlier.launcher is None or bool(earlier.launcher.search(launcher)))
        assert not hit, earlier.source


def test_kernels_no_collective_row_takes_stay_device_kernels():
    frame = build_events({"kind": ["kernel", "memcpy", "kernel"], "name": ["volta_sgemm_128x64_nn", "Memcpy DtoD",
                                                                           "all_reduce_fusion"],
                          "launcher": ["aten::mm", "c10d::allreduce_", "aten::add_"], "device": [0, 0, 0],
                          "stream": [7, 7, 7]})
    assert assign_roles(event_table(frame)).tolist() == [Role.DEVICE_KERNEL.value, Role.DEVICE_MEMCPY.value, Role.DEVICE_KERNEL.value]


def _timeline(rows: list[dict]) -> Timeline:
    frame = build_events({key: [r.get(key, default) for r in rows] for key, default in
                          (("ts", 0), ("dur", 10), ("kind", "host_op"), ("name", ""), ("track", "t"))})
    meta = TraceMeta(source="test", format="test", framework="unknown")
    return normalize(Timeline(events=frame, meta=meta))


def test_nesting_inside_build_and_input_and_builtins():
    tl = _timeline([
        {"ts": 0, "dur": 100, "kind": "graph_build", "name": "tf.function-graph_building"},
        {"ts": 10, "dur": 10, "kind": "host_op", "name": "aten::addmm"},
        {"ts": 200, "dur": 100, "kind": "input", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"},
        {"ts": 210, "dur": 10, "kind": "host_op", "name": "aten::stack"},
        {"ts": 400, "dur": 100, "kind": "python", "name": "train.py(3): step"},
        {"ts": 410, "dur": 10, "kind": "python", "name": "<built-in method append of list object at 0x1>"},
        {"ts": 600, "dur": 100, "kind": "host_op", "name": "CpuExecutable::ExecuteAsyncOnStream"},
        {"ts": 610, "dur": 10, "kind": "host_op", "name": "loop_add_fusion"},
    ])
    role = dict(zip(tl.events["name"].astype(str), tl.events["role"].astype(str)))
    assert role["aten::addmm"] == Role.GRAPH_BUILD.value
    assert role["aten::stack"] == Role.INPUT.value
    assert role["<built-in method append of list object at 0x1>"] == Role.PYTHON_USER.value
    assert role["loop_add_fusion"] == Role.COMPUTE.value


def test_the_passes_run_in_their_order_after_the_rows(monkeypatch: pytest.MonkeyPatch):
    """assign_role_codes runs the rows, then each pass of ROLE_PASSES in turn on what the one
    before returned: a pass added to the tuple runs, where it stands."""
    from traceview import role_passes

    names = [p.name for p in role_passes.ROLE_PASSES]
    assert len(set(names)) == len(names)
    for role_pass in role_passes.ROLE_PASSES:
        assert role_pass.decides and "\n" not in role_pass.decides, role_pass.name  # one paragraph
    seen: list[str] = []

    def recording(name: str, run):
        def record(context, role):
            seen.append(name)
            return run(context, role)
        return role_passes.RolePass(name, "", record)

    frame = _frame([{"kind": "host_op", "name": "aten::addmm"}, {"kind": "host_op", "name": "TFE_Py_Execute"}])
    expected = assign_roles(event_table(frame)).tolist()
    monkeypatch.setattr(role_passes, "ROLE_PASSES",
                        tuple(recording(p.name, p.run) for p in role_passes.ROLE_PASSES))
    assert assign_roles(event_table(frame)).tolist() == expected == [Role.COMPUTE.value, Role.DISPATCH.value]
    assert seen == names


def test_unknown_host_events_are_never_compute():
    frame = _frame([{"kind": "host_op", "name": "SomethingNew"}, {"kind": "annotation", "name": "forward"},
                    {"kind": "host_op", "name": "forward"}])
    assert not np.isin(assign_roles(event_table(frame)), [Role.COMPUTE.value, Role.COMPILED_CODE.value]).any()


def test_calls_inside_a_tracing_call_are_tracing_calls():
    frame = build_events({"ts": [0, 10, 20, 500], "dur": [400, 300, 200, 100],
                          "kind": ["host_op"] * 4, "track": ["t"] * 4,
                          "name": ["_step", "TFE_Py_ExecuteCancelable", "EagerLocalExecute: __inference__step_1",
                                   "_step"]})
    frame["parent"] = [-1, 0, 1, -1]
    frame["depth"] = np.array([0, 1, 2, 0], dtype=np.int16)
    frame["fw_op"] = pd.Categorical(["", "", "", ""])
    frame["fn_call"] = pd.Categorical(["traced-nonXla", "", "", "notTraced-nonXla"])
    role = assign_roles(event_table(frame)).tolist()
    assert role == [Role.CALL_TRACING.value, Role.DISPATCH.value, Role.CALL_TRACING.value, Role.CALL.value]


def test_no_call_wrapper_is_ever_a_compute_op_in_the_sample_captures():
    """In every sample capture (tf.function, fit, XLA, torch.compile, TorchScript …), no event whose
    role is a call (its body runs elsewhere) appears among the top compute ops."""
    from tests.conftest import SAMPLES
    from traceview.loader import diagnose
    from traceview.loader import trace_paths

    captures = sorted(p for p in SAMPLES.glob("*/*") if p.is_dir()) if SAMPLES.is_dir() else []
    if not captures:
        pytest.skip("sample traces not present")
    wrappers = re.compile(r"__inference_|multi_step_on_iterator|^CompiledFunction|DifferentiableGraph|"
                          r"^<(forward|backward) op>$|^SessionRun$|^PjitFunction")
    for folder in captures:
        diag = diagnose(trace_paths(folder)[0])
        ev = diag.timeline.events
        calls = set(ev.loc[ev["role"].isin([Role.CALL.value, Role.CALL_TRACING.value]), "name"].astype(str))
        top = [str(n) for n in diag.kernels["name"]] if diag.kernels is not None else []
        assert not (set(top) & calls), (folder, sorted(set(top) & calls))
        assert not [n for n in top if wrappers.search(n)], (folder, top)


@pytest.mark.parametrize("workload", ["cnn", "lstm"])
def test_xlas_wait_for_its_own_thunks_is_compiled_code_not_a_sync(workload: str):
    """A real tf.function(jit_compile=True) capture: CpuExecutable::ExecuteAsyncOnStream runs the
    program's thunks on worker threads and waits for them in a BlockUntilReady nested in it. That
    wait is the program running (compiled code), not the user's program blocking on a result: no
    sync wait, no sync_each_step finding ("avoid .item()") for it."""
    from tests.conftest import SAMPLES, cached_diagnosis
    from traceview.loader import trace_paths
    from traceview.schema import Kind

    folder = SAMPLES / workload / "tf-xla"
    if not folder.is_dir():
        pytest.skip("sample traces not present")
    diag = cached_diagnosis(trace_paths(folder)[0])
    ev = diag.timeline.events
    parent = ev["parent"].to_numpy()
    names = ev["name"].astype(str).to_numpy()
    nested_waits = (ev["kind"] == Kind.SYNC.value).to_numpy() & (parent >= 0)
    nested_waits[nested_waits] = np.char.startswith(names[parent[nested_waits]].astype(str), "CpuExecutable::")
    assert nested_waits.any()
    assert set(ev["role"].to_numpy()[nested_waits]) == {Role.COMPILED_CODE.value}
    assert diag.steady_attribution().get("sync_wait", 0.0) == 0.0
    assert next(f for f in diag.findings if f.rule == "sync_each_step").grade == "none"


def test_a_tensor_printed_each_step_is_the_users_output_not_dispatch():
    """A real capture with Python events (tests/data/torch_cpu_python/capture.py): an SGD step
    that prints its loss tensor (0.59 ms with the print, 0.33 ms without, unprofiled). torch
    formats the tensor in its own Python (Tensor.__repr__ → torch/_tensor_str.py): that Python,
    the framework builtins it calls included, is the user's output (host compute), not dispatch;
    the few ops it runs stay ops."""
    from pathlib import Path

    import traceview
    from traceview.schema import Kind

    diag = traceview.diagnose(Path(__file__).resolve().parent / "data" / "torch_cpu_python" / "print_stack")
    ev = diag.timeline.events
    names = ev["name"].astype(str)
    formatting = (ev["kind"] == Kind.PYTHON.value) & names.str.contains("torch/_tensor_str.py|__repr__", regex=True)
    assert formatting.any()
    assert set(ev.loc[formatting, "role"].astype(str)) == {Role.PYTHON_USER.value}
    parent = ev["parent"].to_numpy()
    inside = (ev["kind"] == Kind.PYTHON.value).to_numpy() & (parent >= 0)
    inside[inside] = formatting.to_numpy()[parent[inside]]
    tensor_builtins = inside & names.str.startswith("<built-in method ").to_numpy() & names.str.contains(
        "of Tensor object").to_numpy()
    assert tensor_builtins.any()  # (numel, dim, item … of the printed tensor)
    assert set(ev["role"].astype(str).to_numpy()[tensor_builtins]) == {Role.PYTHON_USER.value}
    assert diag.steady_attribution()["host_compute"] > 0.12 * diag.steady_step_ns


def test_python_below_a_framework_call_is_the_frameworks():
    """A real capture with JAX's Python tracer (tests/data/jax_cpu_fetch/capture.py): each step
    fetches its loss with jax.device_get. The value is fetched inside JAX's `np.asarray(jax.Array)`
    call, whose Python (`$array.py:615 _value`, waiting for the program) the tracer names without
    a folder: below a framework call it is the framework's, not the user's."""
    from pathlib import Path

    import traceview
    from traceview.schema import Kind

    diag = traceview.diagnose(Path(__file__).resolve().parent / "data" / "jax_cpu_fetch")
    ev = diag.timeline.events
    parent = ev["parent"].to_numpy()
    calls = (ev["role"] == Role.CALL.value).to_numpy()
    below = (ev["kind"] == Kind.PYTHON.value).to_numpy() & (parent >= 0)
    below[below] = calls[parent[below]]
    assert below.any()  # ($array.py:615 _value inside np.asarray(jax.Array))
    assert set(ev["role"].astype(str).to_numpy()[below]) == {Role.PYTHON_FRAMEWORK.value}


def test_python_called_back_from_inside_the_math_is_the_users():
    """A real capture (tests/data/jax_cpu_callback/capture.py): jax.debug.print inside a jitted
    step. The XLA program stops in a thunk (debug_print.1) that calls back into Python: that Python,
    JAX's callback plumbing included, is the user's (host compute), not framework dispatch; and so
    is the thunk's own time, which is no math (the top compute table named the callback 90 % of the
    math)."""
    from pathlib import Path

    import traceview
    from traceview.schema import Kind

    diag = traceview.diagnose(Path(__file__).resolve().parent / "data" / "jax_cpu_callback")
    ev = diag.timeline.events
    parent = ev["parent"].to_numpy()
    thunk = (ev["name"] == "debug_print.1").to_numpy()
    assert thunk.any() and set(ev["role"].astype(str).to_numpy()[thunk]) == {Role.PYTHON_USER.value}
    called_back = (ev["kind"] == Kind.PYTHON.value).to_numpy() & (parent >= 0)
    called_back[called_back] = thunk[parent[called_back]]
    assert called_back.any()
    assert set(ev["role"].astype(str).to_numpy()[called_back]) == {Role.PYTHON_USER.value}
    assert diag.steady_attribution()["host_compute"] > 0.25 * diag.steady_step_ns
    top = diag.kernels.to_pandas().set_index("name")["time_per_step_ns"]
    assert top.max() < 0.5 * diag.steady_attribution()["host_compute"]


def test_a_tf_print_each_step_is_the_users_output_not_math():
    """A real capture (tests/data/tf_cpu_print/capture.py): tf.print of a weight matrix inside a
    tf.function step. Its StringFormat / PrintV2 op kernels run on the executor's threads while the
    step's thread waits: the user's output (host compute), not math with 'speed up the math'
    advice."""
    from pathlib import Path

    import traceview

    diag = traceview.diagnose(Path(__file__).resolve().parent / "data" / "tf_cpu_print")
    ev = diag.timeline.events
    text_ops = ev["name"].astype(str).str.contains(r":(?:StringFormat|PrintV2)$")
    assert text_ops.any() and set(ev.loc[text_ops, "role"].astype(str)) == {Role.PYTHON_USER.value}
    assert diag.steady_details()["host_compute.other_threads"] > 0.5 * diag.steady_step_ns
    assert next(f for f in diag.findings if f.rule == "compute_bound").grade == "none"


@pytest.mark.parametrize("folder", ["cnn/tf-xla", "cnn/jax-jit", "linreg-gd/jax-jit", "transformer/jax-jit"])
def test_the_top_compute_ops_hold_no_wait_for_compiled_work(folder: str):
    """Real captures: XLA on CPU runs a program's thunks on worker threads while the calling thread
    waits — JAX's thunk executor in `ThunkExecutor::Execute (wait for completion)`, TF XLA's
    CpuExecutable in a nested BlockUntilReady. The wait is the program's time for the step, but
    no math of its own: it was the top "compute op" (42 % on a Keras-on-JAX fit; on the CNN
    CpuExecutable's own time held its 7.2 ms wait). The table counts the thunks on their threads."""
    from tests.conftest import SAMPLES, cached_diagnosis
    from traceview import categories as cat
    from traceview.loader import trace_paths
    from traceview.normalize import compute_self_time
    from traceview.schema import Kind

    path = SAMPLES / folder
    if not path.is_dir():
        pytest.skip("sample traces not present")
    diag = cached_diagnosis(trace_paths(path)[0])
    ev = diag.timeline.events
    names = ev["name"].astype(str)
    waits = names.str.match(cat.XLA_PROGRAM_WAIT) | ((ev["kind"] == Kind.SYNC.value) & (ev["role"] == Role.COMPILED_CODE.value))
    assert waits.any()  # (each of these captures waits for its program)
    table = [str(n) for n in diag.kernels["name"]]
    assert not set(table) & set(names[waits]), table
    top = next(f for f in diag.findings if f.rule == "compute_bound").evidence.get("top_kernel", "")
    assert not cat.XLA_PROGRAM_WAIT.match(top) and top != "BlockUntilReady"
    # A row's own math leaves out the wait nested in it.
    parent = ev["parent"].to_numpy()
    nested = np.flatnonzero(waits.to_numpy() & (parent >= 0))
    own = compute_self_time(event_table(ev))
    for row in nested:
        assert own[parent[row]] <= ev["dur"].iat[parent[row]] - ev["dur"].iat[row]


def test_a_tf_function_of_a_lambda_is_a_call_not_math():
    """TF names a function after its Python one: a tf.function over a lambda runs as
    `__inference_<lambda>_149` (KernelAndDeviceFunc::Run with that eager_op; the op kernel of the
    call inside a graph). It is a call whose body runs on executor threads, not a compute op (it
    was the top "compute op" of a Keras inference loop, 60 % of it)."""
    frame = _frame([{"kind": "host_op", "name": "KernelAndDeviceFunc::Run", "fw_op": "__inference_<lambda>_149"},
                    {"kind": "host_op", "name": "__inference_<lambda>_149:__inference_<lambda>_149"},
                    {"kind": "host_op", "name": "EagerLocalExecute: __inference_<lambda>_149"}])
    assert list(assign_roles(event_table(frame))) == [Role.CALL.value] * 3


def test_jax_tracing_a_jitted_function_is_graph_building_as_its_python_tracer_names_it():
    """A real capture with JAX's default Python tracer (tests/data/jax_cpu_python): on a cache miss
    jax.jit traces (`$pjit.py:466 _trace_for_jit`, partial_eval.py and the user's function below it)
    and lowers (`_resolve_and_lower`) in Python the tracer names by file base name. That is graph
    building (it read as dispatch: the path-based rule never matched a base name); the step
    holding it is the cold one and its graph_build holds the frames' time."""
    from traceview.loader import diagnose
    from traceview.loader import trace_paths
    from traceview.normalize import nearest_ancestor

    data = Path(__file__).resolve().parent / "data" / "jax_cpu_python" / "plugins"
    diag = diagnose(trace_paths(data)[0])
    ev = diag.timeline.events
    names = ev["name"].astype(str)
    tracing = names.str.match(r"^\$pjit\.py:\d+ (_trace_for_jit|_resolve_and_lower)$").to_numpy()
    assert tracing.any() and set(ev.loc[tracing, "role"].astype(str)) == {Role.COMPILE.value}
    below = np.flatnonzero(nearest_ancestor(event_table(ev), np.arange(len(ev)), tracing, include_self=False) >= 0)
    assert len(below) and set(ev["role"].astype(str).to_numpy()[below]) <= {Role.COMPILE.value}
    step = ev["step"].to_numpy()[tracing]
    cold = diag.steps.table["cold"]
    assert cold[step].all()
    outermost = np.flatnonzero(tracing)[nearest_ancestor(event_table(ev), np.flatnonzero(tracing), tracing, include_self=False) < 0]
    per_step = diag.attribution.per_step["graph_build"]
    for s in set(step.tolist()):
        assert per_step[s] >= 0.9 * ev["dur"].to_numpy()[outermost[ev["step"].to_numpy()[outermost] == s]].sum()


def test_an_xla_compile_op_that_hits_the_cache_is_dispatch():
    """XLA auto-clustering runs `cluster:_XlaCompile` before every launch of its cluster: the first
    compiles (235 ms on a CPU capture), the later ones look the executable up (47 µs): those are
    the framework's dispatch, not steady-state graph building."""
    frame = _frame([{"kind": "host_op", "name": "cluster_0_1/xla_compile:_XlaCompile", "dur": 235_000_000},
                    {"kind": "host_op", "name": "cluster_0_1/xla_compile:_XlaCompile", "dur": 47_000}])
    assert list(assign_roles(event_table(frame))) == [Role.COMPILE.value, Role.DISPATCH.value]


def test_a_python_autograd_function_is_the_users_python_and_torchs_own_stay_glue():
    """torch records ``Function.apply`` under the class's name and the backward node as
    ``<class>Backward``: the pair is a Python Function, whose own time is its Python (a custom
    Function's 1.8 ms Python backward read as launch/dispatch). torch's own Functions keep their
    glue as dispatch; AOT autograd's ``CompiledFunction`` stays a call; a backward node with no
    forward op beside it, or a C++ node (numbered), stays the engine's."""
    frame = _frame([{"name": n} for n in ("ClipGrad", "ClipGradBackward", "autograd::engine::evaluate_function: "
                                                                          "ClipGradBackward",
                                          "CheckpointFunction", "CheckpointFunctionBackward",
                                          "CompiledFunction", "CompiledFunctionBackward",
                                          "LonelyBackward", "Addmm", "AddmmBackward0")])
    assert list(assign_roles(event_table(frame))) == [Role.PYTHON_USER.value, Role.PYTHON_USER.value, Role.DISPATCH.value,
                                         Role.DISPATCH.value, Role.DISPATCH.value, Role.CALL.value, Role.CALL.value,
                                         Role.DISPATCH.value, Role.DISPATCH.value, Role.DISPATCH.value]
