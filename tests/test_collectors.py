"""Collectors: paired workloads, captures, manifests, loss parity, the capture API, the samples.

Traces are checked with the raw files (gzip JSON for Kineto, TensorFlow's own ``xplane_pb2`` for
XPlane), not with traceview's readers, so these tests stand on their own.

The workload x mode matrix is captured once (module fixture, in-process, one steady step, no
unprofiled run) and every other check reads from it where it can. torch.compile is captured
live for two workloads only: on a fresh machine inductor's C++ builds cost ~10 s per workload,
which would double this file's run time; the other compile pairs are checked through the
committed samples (made by the same code), and ``TRACEVIEW_TEST_ALL_COMPILE=1`` captures them
live too. torch/TF/JAX tests skip cleanly when the framework is missing.
"""

from __future__ import annotations

import collections
import gzip
import importlib.util
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

import traceview

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from traceview.collectors import manifest as mf  # noqa: E402
from traceview.collectors import parity  # noqa: E402
from traceview.collectors.runner import CaptureSettings, collect, plan  # noqa: E402
from traceview.collectors.workloads import MODES, WORKLOADS, cold_step_count, materialize, not_applicable, pairs  # noqa: E402
from traceview.errors import MissingExtraError, UsageError  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_traces"
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TF = importlib.util.find_spec("tensorflow") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None
# Frameworks whose profilers write XPlane (TensorBoard layout plugins/profile/<run>/<host>.xplane.pb).
XPLANE_FRAMEWORKS = ("tf", "jax")
# Workloads whose torch-compile pair the live matrix captures (all of them with the env switch).
LIVE_COMPILE = set(WORKLOADS) if os.environ.get("TRACEVIEW_TEST_ALL_COMPILE") else {"mlp2", "cnn-infer"}

# Names torch.compile writes into the cold step (FIELD_NOTES; a cache hit still shows these).
TORCH_COMPILE_EVENTS = ("_compile.compile_inner (dynamo_timed)", "backend_compile", "entire_frame_compile", "dynamo")
TORCH_COMPILED_RUN_EVENTS = ("Torch-Compiled Region", "CompiledFunction", "TorchDynamo Cache Lookup")
TF_GRAPH_BUILD_EVENT = "tf.function-graph_building"
TF_XLA_COMPILE_EVENTS = ("CpuCompiler::RunBackend", "JitCompiler::Compile", "HLO passes through layout assignment")
# jax.jit's first call lowers the traced step to XLA, then PJRT compiles it (names JAX 0.10 records;
# trace_to_jaxpr_dynamic marks only nested jitted library functions such as jax.nn.relu, not the step).
JAX_LOWER_EVENTS = ("lower_sharding_computation",)
JAX_COMPILE_EVENTS = ("PjRtCpuClient::Compile", "backend_compile_and_load", "JitCompiler::Compile")
JAX_RUN_EVENTS = ("ThunkExecutor::Execute",)


def _quiet() -> Any:
    from rich.console import Console

    return Console(file=io.StringIO(), width=200)


# ---------------------------------------------------------------------------------------------
# Raw trace helpers
# ---------------------------------------------------------------------------------------------


def torch_steps(path: Path) -> list[tuple[int, collections.Counter[str]]]:
    """(N, names of events inside ProfilerStep#N) for every step marker, in time order."""
    with gzip.open(path, "rb") as fh:
        doc = orjson.loads(fh.read())
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    out = []
    for s in steps:
        start, end = s["ts"], s["ts"] + s["dur"]
        names = collections.Counter(e["name"] for e in events if e is not s and start <= e["ts"] <= end)
        out.append((int(s["name"].split("#")[1]), names))
    return out


def xplane_steps(path: Path) -> list[tuple[int, collections.Counter[str]]]:
    """(step_num, names of /host:CPU events starting inside that `train` event), in time order."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    host = [p for p in space.planes if p.name == "/host:CPU"]
    assert host, f"no /host:CPU plane in {path}"
    plane = host[0]
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    events: list[tuple[int, int, str]] = []
    steps: list[tuple[int, int, int]] = []
    for line in plane.lines:
        for ev in line.events:
            name = plane.event_metadata[ev.metadata_id].name
            start = line.timestamp_ns * 1000 + ev.offset_ps
            events.append((start, start + ev.duration_ps, name))
            if name == "train" and line.name == "python":
                stats = {stat_names.get(s.metadata_id): s for s in ev.stats}
                assert "step_num" in stats, "train event without step_num"
                num = stats["step_num"].int64_value or stats["step_num"].uint64_value
                steps.append((start, start + ev.duration_ps, int(num)))
    steps.sort()
    return [
        (num, collections.Counter(n for s, _, n in events if a <= s <= b and n != "train")) for a, b, num in steps
    ]


def trace_steps(manifest: dict[str, Any], folder: Path) -> list[tuple[int, collections.Counter[str]]]:
    path = mf.trace_path(folder, manifest)
    assert path is not None and path.is_file(), f"trace missing: {path}"
    if manifest["trace"]["format"] == "xplane":
        return xplane_steps(path)
    return torch_steps(path)


def _any(names: collections.Counter[str], wanted: tuple[str, ...]) -> bool:
    return any(n in names for n in wanted) or any(w in n for n in names for w in wanted)


# ---------------------------------------------------------------------------------------------
# Pure parts: no framework needed
# ---------------------------------------------------------------------------------------------


def test_matrix_has_every_mode_and_the_documented_gaps() -> None:
    everything = {name: pairs(spec) for name, spec in WORKLOADS.items()}
    assert set(everything) >= {"mlp2", "mlp-adam", "mlp-bn", "linreg-gd", "linreg-gd-large", "lstm", "cnn", "cnn-infer"}
    for name, ps in everything.items():
        for fw in ("torch", "tf"):
            assert {m for f, m in ps if f == fw} >= set(MODES[fw]) - ({"fit"} if name == "cnn-infer" else set())
    assert ("numpy", "eager") in everything["linreg-gd"]
    assert ("numpy", "eager") not in everything["mlp2"]
    assert "inference only" in (not_applicable(WORKLOADS["cnn-infer"], "tf", "fit") or "")
    assert cold_step_count("torch", "torchscript") == 2 and cold_step_count("tf", "function") == 1


def test_list_table_names_every_workload_and_mode() -> None:
    from rich.console import Console

    from traceview.commands.collect import render_matrix

    console = Console(record=True, width=220, color_system=None)
    render_matrix(console)
    text = console.export_text()
    for name in WORKLOADS:
        assert name in text
    for fw, modes in MODES.items():
        for m in modes:
            assert f"{fw}-{m}" in text


def test_initial_state_is_seeded_and_shared() -> None:
    for spec in WORKLOADS.values():
        a, b = materialize(spec), materialize(spec)
        assert a.params.keys() == b.params.keys()
        for key in a.params:
            np.testing.assert_array_equal(a.params[key], b.params[key])
            assert a.params[key].dtype == np.float32
        np.testing.assert_array_equal(a.x, b.x)
        assert a.x.dtype == (np.int64 if spec.token_input else np.float32)
        assert a.x.shape == (spec.n_samples, *spec.input_shape)
        assert len(a.batches()) == spec.n_batches
    # The parity variant changes only what cannot match across frameworks.
    bn = WORKLOADS["mlp-bn"]
    assert bn.dropout == 0.5 and bn.parity_variant().dropout == 0.0 and not bn.parity_same_as_run


def test_parity_rule() -> None:
    spec = WORKLOADS["mlp2"]
    refs = {"torch-eager": [1.0, 0.5, 0.25], "tf-eager": [1.0, 0.50001, 0.25]}
    ok = parity.check(spec, "tf-function", [1.0, 0.5, 0.25000001], refs)
    assert ok.ok is True and ok.cross_framework and ok.to_dict()["mismatches"] == []
    bad = parity.check(spec, "tf-function", [1.0, 0.5, 0.26], refs)
    assert bad.ok is False
    assert "step 2" in bad.mismatches()[0]
    alone = parity.check(spec, "torch-eager", [1.0], {"torch-eager": [1.0]}, ["tf-eager: tensorflow is not installed"])
    assert alone.ok is None and alone.to_dict()["missing"]


def test_plan_rejects_unknown_names_and_reports_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    from traceview.collectors import runner

    monkeypatch.setattr(runner, "framework_installed", lambda fw: True)
    with pytest.raises(UsageError, match="unknown framework"):
        plan(WORKLOADS["mlp2"], "mxnet", None)
    with pytest.raises(UsageError, match="unknown mode"):
        plan(WORKLOADS["mlp2"], None, "turbo")
    chosen, messages = plan(WORKLOADS["mlp2"], "torch,tf", "eager,function")
    assert chosen == [("torch", "eager"), ("tf", "eager"), ("tf", "function")]
    assert any("torch has no mode 'function'" in m for m in messages)
    _, messages = plan(WORKLOADS["mlp2"], "numpy", None)
    assert any("numpy baseline exists only" in m for m in messages)


def test_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from traceview.collectors import runner

    monkeypatch.setattr(runner, "framework_installed", lambda fw: fw == "numpy")
    with pytest.raises(MissingExtraError, match=r"pip install 'traceview\[tf\]'"):
        plan(WORKLOADS["mlp2"], "tf", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'traceview\[torch\]'"):
        runner.load_backend("torch")
    # Left to default, missing frameworks are skipped with the same hint.
    chosen, messages = plan(WORKLOADS["linreg-gd"], None, None)
    assert chosen == [("numpy", "eager")]
    assert any("traceview[torch]" in m for m in messages) and any("traceview[tf]" in m for m in messages)
    assert any("traceview[jax]" in m for m in messages)
    with pytest.raises(MissingExtraError, match=r"pip install 'traceview\[jax\]'"):
        plan(WORKLOADS["transformer"], "jax", "jit")


# ---------------------------------------------------------------------------------------------
# The full matrix, captured once
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every workload x pair at 1 cold + 1 steady step, in this process; "workload/pair" -> outcome."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("matrix")
    settings = CaptureSettings(steps=1, warmup=0, threads=2, unprofiled=False)
    out: dict[str, dict[str, Any]] = {}
    for name in WORKLOADS:
        leave_out = () if name in LIVE_COMPILE else ("torch-compile",)
        for o in collect(name, root / name, settings=settings, isolate=False, console=_quiet(), leave_out=leave_out):
            out[f"{name}/{o.label}"] = {"outcome": o, "manifest": o.manifest, "folder": o.folder}
    return out


def test_every_pair_captures_with_markers_and_parity(matrix: dict[str, dict[str, Any]]) -> None:
    expected = {
        f"{name}/{fw}-{m}"
        for name, spec in WORKLOADS.items()
        for fw, m in pairs(spec)
        if (fw, m) != ("torch", "compile") or name in LIVE_COMPILE
    }
    assert set(matrix) == expected
    for key, item in matrix.items():
        o = item["outcome"]
        assert o.error is None, f"{key}: {o.error}"
        if o.skipped:  # only torch.compile without a C++ compiler may be skipped
            assert o.mode == "compile", f"{key} skipped: {o.skipped}"
            continue
        m = item["manifest"]
        on_disk = mf.read(item["folder"])
        assert on_disk["parity"] == m["parity"]
        assert m["parity"]["ok"] is True, f"{key}: {m['parity']}"
        assert m["parity"]["cross_framework"] is True, key
        total = m["steps"]["total"]
        assert m["cold_steps"] == list(range(cold_step_count(o.framework, o.mode)))
        assert len(m["timing"]["profiled_s"]) == total == len(m["losses"]["profiled"])
        assert m["trace"]["bytes"] == mf.trace_path(item["folder"], m).stat().st_size
        steps = trace_steps(m, item["folder"])
        assert [n for n, _ in steps] == list(range(total)), f"{key}: step markers {[n for n, _ in steps]}"
        assert m["trace"]["format"] == ("xplane" if o.framework in XPLANE_FRAMEWORKS else "kineto-json")
        if o.framework in XPLANE_FRAMEWORKS:
            rel = m["trace"]["path"]
            assert rel.startswith("plugins/profile/") and rel.endswith(".xplane.pb")


def test_tf_cold_step_holds_graph_building_and_compilation(matrix: dict[str, dict[str, Any]]) -> None:
    for mode in ("function", "fit", "xla"):
        item = matrix[f"mlp2/tf-{mode}"]
        steps = trace_steps(item["manifest"], item["folder"])
        assert steps[0][1][TF_GRAPH_BUILD_EVENT] >= 1, f"tf-{mode} step 0 has no {TF_GRAPH_BUILD_EVENT}"
        assert all(TF_GRAPH_BUILD_EVENT not in names for _, names in steps[1:]), f"tf-{mode} retraced"
    xla = trace_steps(matrix["mlp2/tf-xla"]["manifest"], matrix["mlp2/tf-xla"]["folder"])
    assert _any(xla[0][1], TF_XLA_COMPILE_EVENTS)
    assert not any(_any(names, TF_XLA_COMPILE_EVENTS) for _, names in xla[1:])
    v1 = trace_steps(matrix["mlp2/tf-graph-v1"]["manifest"], matrix["mlp2/tf-graph-v1"]["folder"])
    assert "tf.compat.v1-graph_building" in v1[0][1]
    eager = trace_steps(matrix["mlp2/tf-eager"]["manifest"], matrix["mlp2/tf-eager"]["folder"])
    assert all(TF_GRAPH_BUILD_EVENT not in names for _, names in eager)


def test_torch_cold_step_holds_compilation(matrix: dict[str, dict[str, Any]]) -> None:
    item = matrix["mlp2/torch-compile"]
    if item["outcome"].skipped:
        pytest.skip(item["outcome"].skipped)
    steps = trace_steps(item["manifest"], item["folder"])
    assert _any(steps[0][1], TORCH_COMPILE_EVENTS), sorted(steps[0][1])[:50]
    for _, names in steps[1:]:
        assert not _any(names, TORCH_COMPILE_EVENTS)
        assert _any(names, TORCH_COMPILED_RUN_EVENTS)
    # FIELD_NOTES list the cold-cache names (inductor_compile, compile_fx_inner). Our captures show
    # that a warm inductor cache replaces them with cache loads; dynamo's own phases stay.
    env = item["manifest"]["environment"]
    cold = steps[0][1]
    assert "inductor_compile" in cold or "AOTAutogradCache.inductor_load" in cold
    if not env["inductor_cache_warm"]:
        assert "inductor_compile" in cold
    script = matrix["mlp2/torch-torchscript"]
    steps = trace_steps(script["manifest"], script["folder"])
    assert "torch.jit.script" in steps[0][1]
    assert all("torch.jit.script" not in names for _, names in steps[1:])


def test_jax_cold_step_holds_lowering_and_compilation(matrix: dict[str, dict[str, Any]]) -> None:
    captured = [key for key in matrix if key.endswith("/jax-jit")]
    if not captured:
        pytest.skip("jax not installed")
    assert len(captured) == len(WORKLOADS)
    for key in captured:
        steps = trace_steps(matrix[key]["manifest"], matrix[key]["folder"])
        cold, steady = steps[0][1], steps[1:]
        assert _any(cold, JAX_LOWER_EVENTS) and _any(cold, JAX_COMPILE_EVENTS), f"{key}: {sorted(cold)[:40]}"
        assert steady, key
        for _, names in steady:  # one compile only: every later call runs the compiled executable
            assert not _any(names, JAX_LOWER_EVENTS + JAX_COMPILE_EVENTS), key
            assert _any(names, JAX_RUN_EVENTS), key


# ---------------------------------------------------------------------------------------------
# Timing with and without the profiler; parity mismatch; isolation; the capture API
# ---------------------------------------------------------------------------------------------


def test_manifest_records_profiled_and_unprofiled_times(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    settings = CaptureSettings(steps=3, warmup=1, threads=1)
    (o,) = collect("mlp2", tmp_path, "torch", "eager", settings, isolate=False, console=_quiet())
    m = mf.read(o.folder)
    t = m["timing"]
    assert len(t["profiled_s"]) == len(t["unprofiled_s"]) == 5
    assert m["cold_steps"] == [0] and m["warmup_steps"] == [1] and m["steady_steps"] == [2, 3, 4]
    assert t["steady_median_profiled_s"] > 0 and t["steady_median_unprofiled_s"] > 0
    assert t["profiler_overhead"] is not None
    assert m["losses"]["profiled_equals_unprofiled"] is True
    assert m["versions"]["torch"] and m["versions"]["numpy"] and m["threads"]["torch_intra_op"] == 1
    with pytest.raises(UsageError, match="already holds a capture"):
        collect("mlp2", tmp_path, "torch", "eager", CaptureSettings(steps=1), isolate=False, console=_quiet())


def perturb_initial_weights(monkeypatch: pytest.MonkeyPatch, backend: Any, param: str) -> None:
    """Make ``backend`` start from the canonical weights with ``param`` 5 % larger (parity must fail)."""
    original = backend.build_program

    def perturbed(spec: Any, state: Any, mode: str, device: str) -> Any:
        params = dict(state.params)
        params[param] = params[param] * np.float32(1.05)
        return original(spec, type(state)(spec=state.spec, params=params, x=state.x, y=state.y), mode, device)

    monkeypatch.setattr(backend, "build_program", perturbed)


def test_parity_mismatch_is_loud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from rich.console import Console

    from traceview.collectors import tf_collector

    perturb_initial_weights(monkeypatch, tf_collector, "dense0/kernel")
    buf = io.StringIO()
    outcomes = collect(
        "mlp2",
        tmp_path,
        "torch,tf",
        "eager",
        CaptureSettings(steps=2, warmup=0, threads=1, unprofiled=False),
        isolate=False,
        console=Console(file=buf, width=200),
    )
    by_label = {o.label: mf.read(o.folder) for o in outcomes}
    assert by_label["tf-eager"]["parity"]["ok"] is False
    assert by_label["torch-eager"]["parity"]["ok"] is False
    assert by_label["tf-eager"]["parity"]["mismatches"]
    assert "LOSS PARITY MISMATCH" in buf.getvalue()


def collect_cli(*args: str) -> Any:
    """``traceview collect ARGS`` through the command's own Typer function (each capture in a worker)."""
    import typer
    from typer.testing import CliRunner

    from traceview.commands.collect import collect as collect_command

    app = typer.Typer()
    app.command("collect")(collect_command)
    app.callback()(lambda: None)
    return CliRunner().invoke(app, ["collect", *args])


def test_cli_runs_each_capture_in_its_own_process(tmp_path: Path) -> None:
    result = collect_cli("linreg-gd", "--framework", "numpy", "-o", str(tmp_path), "--steps", "3", "--threads", "1")
    assert result.exit_code == 0, result.output
    m = mf.read(tmp_path / "numpy-eager")
    assert m["process"]["pid"] != os.getpid()
    assert m["process"]["first_capture_in_process"] is True
    assert [n for n, _ in torch_steps(mf.trace_path(tmp_path / "numpy-eager", m))] == [0, 1, 2, 3, 4]
    if HAS_TORCH and HAS_TF:
        refs = {"torch-eager", "tf-eager"} | ({"jax-jit"} if HAS_JAX else set())
        assert m["parity"]["ok"] is True and set(m["parity"]["compared_with"]) == refs
    listing = collect_cli("--list")
    assert listing.exit_code == 0 and "linreg-gd-large" in listing.output
    assert "transformer" in listing.output and "jax-jit" in listing.output


# ---------------------------------------------------------------------------------------------
# JAX and the transformer, end to end through the CLI
# ---------------------------------------------------------------------------------------------


def collect_one(tmp_path: Path, workload: str, framework: str, mode: str, steady: int) -> tuple[Path, dict[str, Any]]:
    """``traceview collect WORKLOAD --framework FRAMEWORK -m MODE`` with one thread, no warm-up: (folder, manifest)."""
    result = collect_cli(workload, "--framework", framework, "-m", mode, "-o", str(tmp_path),
                         "--steps", str(steady), "--warmup", "0", "--threads", "1")
    assert result.exit_code == 0, result.output
    folder = tmp_path / f"{framework}-{mode}"
    m = mf.read(folder)
    assert m["workload"]["name"] == workload and m["framework"] == framework and m["mode"] == mode
    assert m["process"]["pid"] != os.getpid()  # captured by a worker process
    assert m["steps"]["total"] == 1 + steady and m["cold_steps"] == [0]
    return folder, m


def test_cli_captures_the_transformer_in_torch_eager(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    folder, m = collect_one(tmp_path, "transformer", "torch", "eager", 2)
    steps = torch_steps(mf.trace_path(folder, m))
    assert [n for n, _ in steps] == [0, 1, 2]
    for _, names in steps:
        # The attention is written out: its matmuls, the mask and the softmax are ops of their own.
        assert names["aten::softmax"] >= 1 and names["aten::masked_fill"] >= 1 and names["aten::embedding"] >= 1
        assert names["aten::layer_norm"] >= 3 and names["aten::matmul"] >= 2
        assert not any("scaled_dot_product" in n for n in names)
    refs = set(m["parity"]["compared_with"])
    assert refs == {label for label, ok in (("tf-eager", HAS_TF), ("jax-jit", HAS_JAX)) if ok}
    if refs:
        assert m["parity"]["ok"] is True and m["parity"]["cross_framework"] is True, m["parity"]
    assert len(m["losses"]["profiled"]) == 3 and m["losses"]["profiled_equals_unprofiled"] is True


def test_cli_captures_jax_jit_and_diagnose_reads_it(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    folder, m = collect_one(tmp_path, "mlp-adam", "jax", "jit", 3)
    assert m["versions"]["jax"] and m["versions"]["jaxlib"]
    rel = m["trace"]["path"]
    assert m["trace"]["format"] == "xplane" and rel.startswith("plugins/profile/") and rel.endswith(".xplane.pb")
    # One trace of record: JAX's trace-viewer copy of the same events is removed.
    assert not list(folder.rglob("*.trace.json.gz"))
    assert "intra_op_parallelism_threads=1" in m["threads"]["xla_flags"]
    refs = set(m["parity"]["compared_with"])
    assert refs == {label for label, ok in (("torch-eager", HAS_TORCH), ("tf-eager", HAS_TF)) if ok}
    if refs:
        assert m["parity"]["ok"] is True and m["parity"]["cross_framework"] is True, m["parity"]
    if HAS_TF:  # TensorFlow's own XPlane proto reads the markers independently of traceview
        assert [n for n, _ in xplane_steps(mf.trace_path(folder, m))] == [0, 1, 2, 3]

    # traceview's own reader and analyzers read the capture (and its manifest) without JAX or TF.
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(folder), "--format", "json"],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    report = orjson.loads(proc.stdout)
    assert report["trace"]["framework"] == "jax" and report["trace"]["mode"] == "jax-jit"
    assert report["trace"]["format"] == "xplane"
    steps = report["steps"]
    assert steps["rule"] == "markers" and steps["count"] == 4
    # Step 0 compiles. The first run of the compiled step after it is 2-3x slower than the later
    # ones on this machine (buffers allocated, caches cold) and may, under load, pass the warm-up
    # factor: the cold steps are step 0 and at most a warm-up prefix after it, never the last.
    cold = steps["cold"]
    assert cold[:1] == [0] and cold == list(range(len(cold))) and 3 not in cold
    table = steps["table"]
    assert [row["number"] for row in table] == [0, 1, 2, 3]
    assert table[0]["graph_build_events"] > 0 and table[0]["buckets_ns"]["graph_build"] > 0
    assert all(row["graph_build_events"] == 0 for row in table[1:])


def test_keras_adam_needs_summed_embedding_gradients_for_parity() -> None:
    """The transformer's embedding gradient reaches Keras' Adam as one slice per token occurrence;
    Keras squares the slices one by one, torch squares their sum. Summed first, the losses agree."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    import keras

    from traceview.collectors import tf_collector, torch_collector
    from traceview.collectors.harness import StepRecorder

    spec = WORKLOADS["transformer"]

    def losses(backend: Any, mode: str) -> list[float]:
        backend.configure(1, "cpu")
        rec = StepRecorder()
        backend.build_program(spec, materialize(spec), mode, "cpu").run(spec.parity_steps, rec)
        return [float(v) for v in rec.losses if v is not None]

    reference = losses(torch_collector, "eager")
    summed = parity.compare(losses(tf_collector, "eager"), reference, "torch-eager", spec.parity_rtol, spec.parity_atol)
    assert summed.ok, summed
    original = tf_collector.make_optimizer
    b1, b2 = spec.adam_betas
    try:
        tf_collector.make_optimizer = lambda s: keras.optimizers.Adam(  # type: ignore[assignment]
            learning_rate=s.lr, beta_1=b1, beta_2=b2, epsilon=s.adam_eps)
        sliced = parity.compare(losses(tf_collector, "eager"), reference, "torch-eager",
                                spec.parity_rtol, spec.parity_atol)
    finally:
        tf_collector.make_optimizer = original
    assert not sliced.ok and sliced.first_bad_step == 1, sliced  # step 0's loss is before any update


def test_jax_parity_mismatch_is_loud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    from rich.console import Console

    from traceview.collectors import jax_collector

    # The logits' scale (a 5 % larger value projection moves the loss by only 3e-5: the residual
    # stream carries the token embeddings past the attention).
    perturb_initial_weights(monkeypatch, jax_collector, "head/kernel")
    buf = io.StringIO()
    outcomes = collect("transformer", tmp_path, "torch,jax", "eager,jit",
                       CaptureSettings(steps=1, warmup=0, threads=1, unprofiled=False),
                       isolate=False, console=Console(file=buf, width=200))
    by_label = {o.label: mf.read(o.folder) for o in outcomes}
    assert set(by_label) == {"torch-eager", "jax-jit"}
    assert by_label["jax-jit"]["parity"]["ok"] is False and by_label["jax-jit"]["parity"]["mismatches"]
    assert "LOSS PARITY MISMATCH transformer: jax-jit vs torch-eager" in buf.getvalue()


def test_capture_api_torch_user_loop(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from traceview.collectors.capture import capture

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    with capture(tmp_path / "mine", framework="torch", max_steps=3) as cap:
        for _ in range(5):
            with cap.step() as step:
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                step.loss = loss.item()
    m = cap.manifest
    assert m is not None and m == mf.read(tmp_path / "mine")
    assert m["framework"] == "torch" and m["cold_steps"] == [0] and m["steps"]["total"] == 3
    assert len(m["timing"]["unprofiled_s"]) == 2 and len(m["losses"]["profiled"]) == 3
    steps = torch_steps(mf.trace_path(tmp_path / "mine", m))
    assert [n for n, _ in steps] == [0, 1, 2]
    assert all(names["aten::mse_loss"] == 1 for _, names in steps)
    with pytest.raises(UsageError, match="already holds a capture"):
        with capture(tmp_path / "mine", framework="torch"):
            pass


def test_capture_api_tf_user_loop(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from traceview.collectors.capture import capture

    w = tf.Variable(tf.ones((4, 1)))
    x, y = tf.random.normal((32, 4)), tf.random.normal((32, 1))

    @tf.function
    def train_step() -> Any:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    with capture(tmp_path / "mine", framework="tf") as cap:
        for _ in range(3):
            with cap.step() as step:
                step.loss = float(train_step())
    m = mf.read(tmp_path / "mine")
    assert m["framework"] == "tf" and m["trace"]["path"].startswith("plugins/profile/")
    steps = xplane_steps(mf.trace_path(tmp_path / "mine", m))
    assert [n for n, _ in steps] == [0, 1, 2]
    assert TF_GRAPH_BUILD_EVENT in steps[0][1]
    assert all(TF_GRAPH_BUILD_EVENT not in names for _, names in steps[1:])


def test_capture_api_jax_user_loop(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    from traceview.collectors.capture import capture

    jnp = jax.numpy
    x, y = jnp.ones((32, 4)), jnp.zeros((32, 1))

    @jax.jit
    def train_step(w: Any) -> Any:
        loss, grad = jax.value_and_grad(lambda w: jnp.mean(jnp.square(x @ w - y)))(w)
        return w - 0.1 * grad, loss

    w = jnp.ones((4, 1))
    with capture(tmp_path / "mine", framework="jax", max_steps=3) as cap:
        for _ in range(4):
            with cap.step() as step:
                w, loss = train_step(w)
                step.loss = float(loss)  # waits for the step's result
    m = mf.read(tmp_path / "mine")
    assert m["framework"] == "jax" and m["trace"]["path"].startswith("plugins/profile/")
    assert m["trace"]["format"] == "xplane" and m["cold_steps"] == [0] and len(m["timing"]["unprofiled_s"]) == 1
    assert "python_tracer_level 0" in m["trace"]["options"]  # JAX's Python tracer stays off by default
    assert not list((tmp_path / "mine").rglob("*.trace.json.gz"))  # JAX's viewer copy is not kept
    diagnosis = traceview.diagnose(tmp_path / "mine")
    assert diagnosis.timeline.meta.framework == "jax"
    table = diagnosis.steps.table
    assert diagnosis.steps.rule == "markers" and list(table["number"]) == [0, 1, 2] and bool(table["cold"][0])
    with pytest.raises(UsageError, match="JAX's profiler records no allocation"):
        capture(tmp_path / "other", framework="jax", memory=True)


def test_capture_api_rejects_unknown_framework(tmp_path: Path) -> None:
    from traceview.collectors.capture import capture

    with pytest.raises(UsageError, match="use 'torch', 'tf' or 'jax'"):
        capture(tmp_path, framework="mxnet")


# ---------------------------------------------------------------------------------------------
# The committed samples
# ---------------------------------------------------------------------------------------------


def _sample_folders() -> list[tuple[str, str, str]]:
    return [(name, fw, m) for name, spec in WORKLOADS.items() for fw, m in pairs(spec)]


def test_sample_traces_cover_the_matrix_and_stay_small() -> None:
    if not SAMPLES.is_dir():
        pytest.skip("sample_traces/ not present")
    missing = [
        f"{n}/{fw}-{m}"
        for n, fw, m in _sample_folders()
        if not (SAMPLES / n / f"{fw}-{m}" / mf.MANIFEST_NAME).is_file()
    ]
    assert not missing, f"samples missing (run python -m traceview.collectors.capture_samples): {missing}"
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    # 13.2 MiB with the JAX and transformer captures; each trace stays under 1 MiB.
    assert total < 15 * 1024 * 1024, f"sample_traces is {total / 1e6:.1f} MB"
    assert (SAMPLES / "README.md").is_file()
    for n, fw, m in _sample_folders():
        folder = SAMPLES / n / f"{fw}-{m}"
        manifest = mf.read(folder)
        assert manifest["parity"]["ok"] is True, f"{n}/{fw}-{m}: {manifest['parity'].get('mismatches')}"
        assert manifest["process"]["first_capture_in_process"] is True
        trace = mf.trace_path(folder, manifest)
        assert trace is not None and trace.is_file() and trace.stat().st_size == manifest["trace"]["bytes"]
        assert trace.stat().st_size < 1024 * 1024, f"{n}/{fw}-{m}: {trace.stat().st_size} bytes"
        if fw not in XPLANE_FRAMEWORKS:
            steps = torch_steps(trace)
            assert [k for k, _ in steps] == list(range(manifest["steps"]["total"]))


def test_sample_traces_read_by_traceview_readers() -> None:
    """The project's own readers find every step marker in every committed sample."""
    if not SAMPLES.is_dir():
        pytest.skip("sample_traces/ not present")
    from traceview.readers import detect

    for n, fw, m in _sample_folders():
        folder = SAMPLES / n / f"{fw}-{m}"
        manifest = mf.read(folder)
        trace = mf.trace_path(folder, manifest)
        assert trace is not None
        reader = detect(trace)
        expected = "xplane" if fw in XPLANE_FRAMEWORKS else "kineto"
        assert reader.__name__.endswith(expected), f"{n}/{fw}-{m}: {reader.__name__}"
        events = reader.read(trace).events
        steps = events[events["kind"] == "step"]
        assert len(steps) == manifest["steps"]["total"], f"{n}/{fw}-{m}: {len(steps)} step events"


def test_lstm_compile_sample_records_the_eager_fallback() -> None:
    """torch 2.13's dynamo does not trace nn.LSTM; the capture says so instead of hiding it."""
    folder = SAMPLES / "lstm" / "torch-compile"
    if not folder.is_dir():
        pytest.skip("sample_traces/lstm/torch-compile not present")
    report = mf.read(folder)["compile_report"]
    assert any("LSTM" in reason for reason in report["fell_back_to_eager"])


def sample_steps(workload: str, pair: str) -> tuple[dict[str, Any], list[tuple[int, collections.Counter[str]]]]:
    """A committed sample's manifest and its steps' event names (every marker present, in order);
    ``({}, [])`` when the sample is not there."""
    folder = SAMPLES / workload / pair
    if not folder.is_dir():
        return {}, []
    manifest = mf.read(folder)
    steps = trace_steps(manifest, folder)
    assert [k for k, _ in steps] == list(range(manifest["steps"]["total"])), f"{workload} {pair}"
    return manifest, steps


def test_sample_traces_show_cold_work_only_in_the_cold_step() -> None:
    if not SAMPLES.is_dir():
        pytest.skip("sample_traces/ not present")
    for name in WORKLOADS:
        manifest, steps = sample_steps(name, "torch-compile")
        if not steps:
            continue
        assert _any(steps[0][1], TORCH_COMPILE_EVENTS), name
        assert not any(_any(names, TORCH_COMPILE_EVENTS) for _, names in steps[1:]), name
        # The samples start from an empty inductor cache: the whole first compile is in step 0.
        assert manifest["environment"]["inductor_cache_warm"] is False, name
        if manifest["compile_report"]["fell_back_to_eager"]:
            # Dynamo gave up on the frame (nn.LSTM): it traced in step 0, then everything ran eagerly.
            assert "inductor_compile" not in steps[0][1], name
            assert not any(_any(names, TORCH_COMPILED_RUN_EVENTS) for _, names in steps[1:]), name
            continue
        # torch 2.13 names it "compile_fx_inner (dynamo_timed)" (FIELD_NOTES: compile_fx_inner).
        assert "inductor_compile" in steps[0][1] and _any(steps[0][1], ("compile_fx_inner",)), name
        assert all(_any(names, TORCH_COMPILED_RUN_EVENTS) for _, names in steps[1:]), name
    pytest.importorskip("tensorflow")
    for name in WORKLOADS:
        for mode in ("function", "xla", "fit"):
            _, steps = sample_steps(name, f"tf-{mode}")
            if not steps:
                continue
            assert TF_GRAPH_BUILD_EVENT in steps[0][1], f"{name} tf-{mode}"
            assert not any(TF_GRAPH_BUILD_EVENT in names for _, names in steps[1:]), f"{name} tf-{mode}"
    for name in WORKLOADS:
        _, steps = sample_steps(name, "jax-jit")
        if not steps:
            continue
        assert _any(steps[0][1], JAX_LOWER_EVENTS) and _any(steps[0][1], JAX_COMPILE_EVENTS), f"{name} jax-jit"
        assert not any(_any(names, JAX_LOWER_EVENTS + JAX_COMPILE_EVENTS) for _, names in steps[1:]), name


def test_cuda_graphs_are_captured_only_when_named_and_only_on_a_gpu(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from traceview.collectors import runner
    from traceview.collectors.runner import CaptureSettings, ModeUnavailable, capture_pair

    monkeypatch.setattr(runner, "framework_installed", lambda fw: True)
    assert ("torch", "cudagraphs") not in plan(WORKLOADS["mlp2"], "torch", None)[0]  # not in all
    assert plan(WORKLOADS["mlp2"], "torch", "cudagraphs")[0] == [("torch", "cudagraphs")]
    with pytest.raises(ModeUnavailable, match="--device cuda only"):
        capture_pair(WORKLOADS["mlp2"], "torch", "cudagraphs", tmp_path / "cg", CaptureSettings(device="cpu"))
