"""The execution mode read from trace evidence matches how each sample was captured (its
manifest.json, written by the collector that ran it), and advice never asks for what the mode
already does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from traceview.loader import diagnose
from traceview.analyzers.modes import (ADVICE, COMPILE_CUDAGRAPHS, COMPILE_WITH_BREAKS, DOUBLE_BACKWARD, MODE_RULES, advice,
                                      execution_mode)
from traceview.loader import load_with_steps, trace_paths

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
FRAMEWORK = {"tf": "tensorflow", "torch": "torch", "jax": "jax"}
# How the collector's mode names read as traceview's (Keras fit runs its step as a tf.function).
COLLECTOR_MODE = {"fit": "function"}
CAPTURES = sorted(p.parent for p in SAMPLES.glob("*/*/manifest.json")
                  if json.loads(p.read_text())["framework"] in FRAMEWORK)


@pytest.mark.parametrize("folder", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_mode_from_the_trace_is_the_captured_mode(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    mode = COLLECTOR_MODE.get(manifest["mode"], manifest["mode"])
    if (manifest.get("compile_report") or {}).get("fell_back_to_eager"):  # the collector saw dynamo give up
        mode = "compile-fallback"
    expected = f"{FRAMEWORK[manifest['framework']]}-{mode}"
    timeline, steps = load_with_steps(trace_paths(folder)[0])
    assert execution_mode(timeline, steps) == expected


TRUTH = Path(__file__).resolve().parent.parent / "benchmarks" / "truth" / "cases"


@pytest.mark.parametrize(("case", "jitted"), [("jax-tiny-ops", "clean"), ("jax-eager-grad", "clean")])
def test_jax_ops_run_one_by_one_are_eager_mode(case: str, jitted: str) -> None:
    """A jitted step is one outermost jitted call per step; jax.numpy ops (or jax.grad) run
    without jax.jit are a jitted call each: hundreds per step in jax-tiny-ops, tens in
    jax-eager-grad. The advice then asks for jax.jit, not for what a jitted step would do."""
    timeline, steps = load_with_steps(trace_paths(TRUTH / case / "injected")[0])
    assert execution_mode(timeline, steps) == "jax-eager"
    timeline, steps = load_with_steps(trace_paths(TRUTH / case / jitted)[0])
    assert execution_mode(timeline, steps) == "jax-jit"
    assert "jax.jit" in advice("fuse", "jax-eager") and "already jitted" not in advice("fuse", "jax-eager")


def test_advice_does_not_ask_for_what_the_mode_already_does() -> None:
    assert "jit_compile=True" not in advice("fuse", "tensorflow-xla")
    assert "torch.compile" not in advice("fuse", "torch-torchscript")
    assert "with torch.compile" not in advice("fuse", DOUBLE_BACKWARD)
    assert "torch.compile" not in advice("fuse", "torch-compile").replace("compiled", "")
    assert "tf.function" not in advice("fuse", "torch-eager") and "torch.compile" not in advice("fuse",
                                                                                              "tensorflow-eager")
    for kind, table in ADVICE.items():
        assert "*" in table, kind
    # (variants: torch-compile with graph breaks or replayed as CUDA graphs, torch-eager differentiating twice)
    modes = {f"{r.framework}-{r.mode}" for r in MODE_RULES} | {COMPILE_WITH_BREAKS, COMPILE_CUDAGRAPHS, DOUBLE_BACKWARD}
    assert "reduce-overhead" not in advice("fuse", COMPILE_CUDAGRAPHS)
    for table in ADVICE.values():
        assert set(table) - {"*"} <= modes


def test_cold_compile_advice_names_the_cache_of_its_own_framework() -> None:
    assert "jax_compilation_cache_dir" in advice("cold", "jax-jit") and "TORCH" not in advice("cold", "jax-jit")
    assert "TORCHINDUCTOR_CACHE_DIR" in advice("cold", "torch-compile")
    assert "tf_xla_persistent_cache_directory" in advice("cold", "tensorflow-xla")
    assert "TORCH" not in advice("cold", "tensorflow-function") and "XLA" not in advice("cold", "tensorflow-function")
    jax = diagnose(trace_paths(SAMPLES / "mlp2" / "jax-jit")[0])
    assert next(f for f in jax.findings if f.rule == "cold_compile").advice == advice("cold", "jax-jit")


def test_a_finding_carries_the_advice_of_its_mode() -> None:
    diag = diagnose(trace_paths(SAMPLES / "mlp2" / "tf-xla")[0])
    launch = next(f for f in diag.findings if f.rule == "launch_bound")
    assert diag.mode == "tensorflow-xla" and launch.advice == advice("fuse", "tensorflow-xla")
    assert diag.to_dict()["trace"]["mode"] == "tensorflow-xla"


COMPILE = Path(__file__).resolve().parent / "data" / "torch_cpu_compile"  # (how: capture.py there)


def test_graph_breaks_are_told_from_a_step_compiled_whole():
    """Real captures: the same compiled training step, whole and with one graph break. The break
    shows as two torch.compile regions a step; launch_bound only advises removing breaks where
    there are some, and compare says which side has them."""
    from traceview.analyzers.compare import compare
    from traceview.renderers.terminal import render_comparison

    whole = diagnose(trace_paths(COMPILE / "whole")[0])
    broken = diagnose(trace_paths(COMPILE / "graph_break")[0])
    assert whole.mode == broken.mode == "torch-compile"
    advice = {name: next(f for f in diag.findings if f.rule == "launch_bound")
              for name, diag in (("whole", whole), ("broken", broken))}
    assert advice["whole"].evidence["compiled_regions_per_step"] == 1
    assert advice["broken"].evidence["compiled_regions_per_step"] == 2
    # (The whole step's overhead lies mostly outside its compiled code: the advice says where.)
    assert "graph breaks" not in advice["whole"].advice and "outside the compiled code" in advice["whole"].advice
    assert advice["broken"].advice.startswith("graph breaks split the compiled step")
    cmp = compare(whole, broken)
    assert cmp.compiled_regions == (1, 2)
    assert "graph breaks split the candidate's compiled step" in " ".join(render_comparison(cmp, width=100).split())


def test_a_compiled_steps_runtime_python_is_neither_compilation_nor_the_users():
    """A real capture (tests/data/torch_cpu_compile, whole_python_events): the compiled step in its
    steady state, with Python events. The runtime's Python — dynamo's guard check, AOT autograd's
    runtime forward (aot_autograd.py), inductor's generated module — read as 28 % graph building
    (HIGH steady_graph_build, "torch.compile recompiles") and 5 % the user's Python; the generated
    module is the framework's, the C++ kernels it calls (`<built-in function kernel>`) compiled
    code. Compilation's own frames still compile (the torch-compile-cold ground truth)."""
    diag = diagnose(trace_paths(COMPILE / "whole_python_events")[0])
    assert diag.mode == "torch-compile"
    buckets, details = diag.steady_attribution(), diag.steady_details()
    assert buckets["graph_build"] == 0 and buckets["host_compute"] < 0.01 * sum(buckets.values())
    assert details["kernel.compiled"] > 0 and details["launch_overhead.python"] > 0
    from traceview.categories import INDUCTOR_GENERATED_MODULE

    ev = diag.timeline.events
    names = ev["name"].astype(str)
    generated = names.map(lambda name: bool(INDUCTOR_GENERATED_MODULE.search(name)))
    assert generated.any() and set(ev["role"][generated].astype(str)) == {"python_framework"}
    assert set(ev["role"][names == "<built-in function kernel>"].astype(str)) == {"compiled_code"}
    assert next(f for f in diag.findings if f.rule == "steady_graph_build").grade == "none"


def test_input_advice_names_its_own_frameworks_pipeline() -> None:
    """A Keras fit fed by a PyDataset with a 3 ms sleep a batch ran 8.7 → 3.5 ms a batch with
    PyDataset(workers=4): TensorFlow is told so, not about DataLoader; torch not about tf.data."""
    assert "PyDataset(workers=N" in advice("input", "tensorflow-function") and "DataLoader" not in advice(
        "input", "tensorflow-function")
    torch_input = advice("input", "torch-eager")
    assert "DataLoader(num_workers>0" in torch_input and "tf.data" not in torch_input
    assert "DataLoader" not in advice("input", "jax-jit")


def test_a_step_that_differentiates_its_gradients_is_not_told_to_use_torch_compile():
    """A real capture (tests/data/torch_cpu_gradient_penalty/capture.py): a gradient penalty
    differentiates the gradients again (TanhBackwardBackward0 …). torch.compile refuses such a
    step ("does not currently support double backward"), so launch_bound does not advise it; a
    plain eager step still gets it."""
    from tests.conftest import SAMPLES

    data = Path(__file__).resolve().parent / "data" / "torch_cpu_gradient_penalty" / "penalty"
    penalty = next(f for f in diagnose(trace_paths(data)[0]).findings if f.rule == "launch_bound")
    assert penalty.evidence["double_backward"] is True
    assert "double backward" in penalty.advice and "with torch.compile" not in penalty.advice
    plain = next(f for f in diagnose(trace_paths(SAMPLES / "mlp2" / "torch-eager")[0]).findings
                 if f.rule == "launch_bound")
    assert "double_backward" not in plain.evidence and "torch.compile" in plain.advice


def test_xla_auto_clustering_is_the_xla_mode_and_its_cache_lookups_are_no_graph_building():
    """A real capture (tests/data/tf_cpu_autojit/capture.py): a tf.function under XLA
    auto-clustering runs its clusters as _XlaCompile / _XlaRun op kernels, with no jit_compile on
    the function. It runs as XLA (it was told "let XLA fuse the function's ops"); its cold step
    compiles; the later _XlaCompile calls are cache lookups (they read as 2 % of steady graph
    building, with retrace advice, beside "0 build/compile events")."""
    from traceview.roles import Role

    diag = diagnose(trace_paths(Path(__file__).resolve().parent / "data" / "tf_cpu_autojit")[0])
    assert diag.mode == "tensorflow-xla"
    ev = diag.timeline.events
    compile_ops = ev["name"].astype(str).str.endswith(":_XlaCompile").to_numpy()
    steady = diag.steps.in_steady(ev)
    assert (compile_ops & steady).any() and set(ev["role"].astype(str).to_numpy()[compile_ops & steady]) == {
        Role.DISPATCH.value}
    assert diag.steps.table["cold"][0] and diag.attribution.per_step["graph_build"][0] > 0
    assert next(f for f in diag.findings if f.rule == "steady_graph_build").grade == "none"
    launch = next(f for f in diag.findings if f.rule == "launch_bound")
    assert "jit_compile" not in launch.advice and launch.advice == advice("fuse", "tensorflow-xla")


def test_a_tf_function_run_eagerly_is_told_to_turn_the_switch_off():
    """A real capture (tests/data/tf_cpu_functions_eagerly/capture.py): a tf.function step with
    tf.config.run_functions_eagerly(True) left on runs op by op (7.9 ms a step against 1.6 ms):
    its calls carry the tf_function_call stat ``eager``. It read as an eager step and was told to
    "run the step as a tf.function", which it already is."""
    diag = diagnose(trace_paths(Path(__file__).resolve().parent / "data" / "tf_cpu_functions_eagerly")[0])
    assert diag.mode == "tensorflow-functions-eagerly"
    launch = next(f for f in diag.findings if f.rule == "launch_bound")
    assert launch.grade == "high" and "run_functions_eagerly(True) is on" in launch.advice
    # The ops counted are the ones the function ran one at a time (77 a step), not its one call.
    assert launch.evidence["ops_per_step"] == diag.launch.ops_per_step > 50


def test_a_call_wrapper_opens_where_it_ran_ops_one_at_a_time() -> None:
    from traceview.normalize import dispatched_ops
    from traceview.schema import categorical
    from traceview.table import Table

    # (name, role, parent): a wrapper around one function run (its binding, then the function)
    # stays one op; a wrapper around a wrapper that ran two ops opens, both of them; an op inside
    # an op is not counted on its own.
    rows = [
        ("step_fn", "call", -1), ("binding", "dispatch", 0), ("FunctionRun", "call", 1),
        ("outer", "call", -1), ("inner", "call", 3), ("MatMul", "compute", 4), ("Relu", "compute", 4),
        ("aten::linear", "dispatch", -1), ("aten::addmm", "compute", 7),
    ]
    events = Table({
        "kind": categorical(["host_op"] * len(rows)), "device": np.full(len(rows), -1),
        "name": categorical([r[0] for r in rows]), "role": categorical([r[1] for r in rows]),
        "parent": np.array([r[2] for r in rows], dtype=np.int64),
    })
    assert np.flatnonzero(dispatched_ops(events)).tolist() == [0, 5, 6, 7]


@pytest.mark.parametrize("folder, opened", [
    ("mlp2/tf-function", False),  # one call a step runs the function: one op
    ("mlp2/tf-xla", False),
    ("mlp2/torch-compile", False),
    ("mlp2/torch-torchscript", True),  # the backward graph's nodes run their aten ops one at a time
])
def test_ops_counted_are_the_ones_dispatched_one_at_a_time(folder: str, opened: bool) -> None:
    from traceview.normalize import dispatched_ops, top_level_ops

    diag = diagnose(trace_paths(SAMPLES / folder)[0])
    ev = diag.timeline.table
    steady = diag.steps.in_steady(ev)
    calls, ops = int((steady & top_level_ops(ev)).sum()), int((steady & dispatched_ops(ev)).sum())
    assert (ops > calls) if opened else (ops == calls)
    assert diag.launch.ops_per_step == ops / len(diag.steady_positions)


def test_a_jitted_step_with_jit_disabled_is_told_to_turn_the_switch_off():
    """Real captures (benchmarks/truth/cases/jax-disable-jit): the jitted step with jax_disable_jit
    on runs as Python, each operation a jitted call of its own inside the step's (15× slower); it
    was told "the step is already jitted". Jitted calls inside another are that mode only in steps
    that build no graph: a step retraced every call (jax-retrace) calls them while tracing, and a
    jitted step is recorded as two nested calls of its own name."""
    truth = Path(__file__).resolve().parent.parent / "benchmarks" / "truth" / "cases"
    disabled = diagnose(trace_paths(truth / "jax-disable-jit" / "injected")[0])
    assert disabled.mode == "jax-jit-disabled"
    launch = next(f for f in disabled.findings if f.rule == "launch_bound")
    assert launch.advice == advice("fuse", "jax-jit-disabled")
    for case in ("jax-disable-jit/clean", "jax-retrace/injected", "jax-cold/injected"):
        assert diagnose(trace_paths(truth / case)[0]).mode == "jax-jit", case


def test_math_on_float64_inputs_is_named_by_its_recorded_dtype():
    """The torch-float64 ground-truth pair (benchmarks/truth/cases/torch-float64): the same step with
    its model and data in float64; record_shapes writes each op's input types ("double"). The
    injected step's compute_bound says its math takes float64 inputs and what that costs (it said
    "speed up the math (dtype, shapes …)" alike for both); the float32 twin gets no such words."""
    from traceview.analyzers.findings.diagnosis import SLOW_DTYPE_SHARE, SLOWER_DTYPE_WHY

    truth = Path(__file__).resolve().parent.parent / "benchmarks" / "truth" / "cases" / "torch-float64"
    float64, float32 = (next(f for f in diagnose(trace_paths(truth / side)[0]).findings if f.rule == "compute_bound")
                        for side in ("injected", "clean"))
    assert float64.evidence["math_dtype"] == "double" and float64.evidence["math_dtype_share"] >= SLOW_DTYPE_SHARE
    assert "of the math takes double inputs" in float64.advice and SLOWER_DTYPE_WHY["double"] in float64.advice
    assert "math_dtype" not in float32.evidence and "double" not in float32.advice


def test_autograd_anomaly_detection_is_named_with_the_work_it_adds():
    """torch.autograd.set_detect_anomaly(True) left on: the NaN checks after each backward node and
    the Python stack each forward op stores are the framework's work (launch/dispatch), named by
    anomaly_detection, and the advice to fuse ops or speed up the math comes after turning it off.

    Ground truth (benchmarks/truth/cases/torch-anomaly-nan-checks): the NaN checks alone, both
    variants storing stacks, no Python events: the finding explains the checks' measured cost. A
    real capture with Python events (tests/data/torch_cpu_anomaly/capture.py): the stored stacks
    (torch/fx/traceback.py's format_stack inside forward ops) read as 43.8 % graph building with
    'torch.compile recompiles' advice; they are framework Python now, timed by the finding."""
    import json

    from benchmarks.truth.score import RATIO_RANGE
    from traceview.analyzers.findings.diagnosis import ANOMALY_FIRST

    truth = Path(__file__).resolve().parent.parent / "benchmarks" / "truth" / "cases" / "torch-anomaly-nan-checks"
    cost = json.loads((truth / "ground_truth.json").read_text())["score"]["cost_ns"]
    injected = {f.rule: f for f in diagnose(trace_paths(truth / "injected")[0]).findings}
    found = injected["anomaly_detection"]
    assert found.grade in ("high", "moderate") and found.evidence["nan_checked_nodes_per_step"] > 0
    assert RATIO_RANGE[0] <= found.explains_ns / cost <= RATIO_RANGE[1]
    assert not found.evidence["python_events"] and "not timed apart" in found.summary
    assert injected["launch_bound"].advice.startswith(ANOMALY_FIRST)
    assert injected["compute_bound"].advice.startswith(ANOMALY_FIRST)
    # (the clean twin stores stacks without checking: without Python events nothing shows it)
    clean = {f.rule: f for f in diagnose(trace_paths(truth / "clean")[0]).findings}
    assert "anomaly_detection" not in clean and not clean["launch_bound"].advice.startswith(ANOMALY_FIRST)

    captured = diagnose(Path(__file__).resolve().parent / "data" / "torch_cpu_anomaly" / "anomaly.pt.trace.json.gz")
    buckets = captured.steady_attribution()
    stacks = next(f for f in captured.findings if f.rule == "anomaly_detection").evidence
    assert buckets["graph_build"] == 0 and buckets["host_compute"] < 0.01 * sum(buckets.values())
    assert stacks["stacks_per_step"] > 0 and stacks["stack_ns_per_step"] > stacks["nan_check_ns_per_step"] > 0
    assert captured.steady_details()["launch_overhead.python"] >= stacks["stack_ns_per_step"]


def test_an_intra_op_pool_larger_than_the_cores_is_named():
    """Real captures (tests/data/torch_cpu_oversubscribed, README.md there): the mlp2 step with 2 and
    with 8 intra-op threads on a 2-core machine, 14.8x apart unprofiled. Their manifests say how
    many threads on how many cores: compute_bound says to set the pool to the core count (it said
    "give the intra-op pool every core"), and the comparison's kernel gap says why the candidate's
    same ops are slower; the capture with 2 threads keeps the usual advice."""
    from traceview.analyzers.compare import compare

    data = Path(__file__).resolve().parent / "data" / "torch_cpu_oversubscribed"
    two, eight = (diagnose(trace_paths(data / name)[0]) for name in ("threads2", "threads8"))
    over = next(f for f in eight.findings if f.rule == "compute_bound")
    assert over.evidence["intra_op_threads"] == 8 and over.evidence["cores"] == 2
    assert over.advice.startswith("the capture ran 8 intra-op threads on 2 cores")
    assert "torch.set_num_threads(2)" in over.advice and "every core" not in over.advice
    usual = next(f for f in two.findings if f.rule == "compute_bound")
    assert "on 2 cores" in usual.summary and "every core (torch.set_num_threads)" in usual.advice
    kernel = next(f for f in compare(two, eight).findings if f.rule == "gap_kernel")
    assert "the candidate ran 8 intra-op threads on 2 cores (the baseline 2)" in kernel.advice


def test_the_mode_table_tells_events_by_the_patterns_the_role_table_uses() -> None:
    """A name that decides both a mode and a role is stated once, in traceview.categories: the
    rows of both tables hold the same pattern (or a union of categories' patterns)."""
    from traceview import categories as cat
    from traceview.roles import ROLE_RULES

    role_names = {rule.name for rule in ROLE_RULES}
    mode_names = {rule.name for rule in MODE_RULES}
    for shared in (cat.JAX_JITTED_CALL, cat.TF_SESSION_RUN):
        assert shared in role_names and shared in mode_names
    mode_patterns = {name.pattern for name in mode_names if name is not None}
    for part in (cat.TORCH_COMPILED_FUNCTION, cat.INDUCTOR_GRAPH_CALL, cat.TORCHSCRIPT_GRAPH_CALL):
        assert part in role_names and any(part.pattern in p for p in mode_patterns), part.pattern


@pytest.mark.parametrize(("pattern", "name"), [
    ("TORCH_COMPILED_REGION", "Torch-Compiled Region: 0/0"), ("TORCH_COMPILED_REGION_RUN", "Torch-Compiled Region: 1/0"),
    ("TORCH_COMPILED_FUNCTION", "CompiledFunctionBackward"), ("INDUCTOR_GRAPH_CALL", "## Call CompiledFxGraph fx ##"),
    ("TORCHSCRIPT_GRAPH_CALL", "<backward op>"), ("TORCHSCRIPT_BUILD", "torch.jit.trace"),
    ("TORCH_DYNAMO_RAN", "entire_frame_compile"), ("TF_SESSION_RUN", "SessionRun"),
    ("TF_XLA_RUN_OP", "cluster_0_1/xla_run:_XlaRun"), ("JAX_JITTED_CALL", "PjitFunction(step)"),
])
def test_each_mode_evidence_pattern_matches_its_example(pattern: str, name: str) -> None:
    from traceview import categories as cat

    assert getattr(cat, pattern).search(name)
