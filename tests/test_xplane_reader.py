"""XPlane reader on real traces: JAX on AMD GPUs (shared traces), TF on CPU (captured here),
synthetic XSpaces for the cases no real file shows, and xprof as a differential oracle."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from traceview.errors import FormatError, InputError, install_hint
from traceview.normalize import normalize
from traceview.readers import xplane, xplane_runs
from traceview.readers.proto import xplane_descriptor
from traceview.schema import COLUMNS, event_table, Kind, MEMORY_COLUMNS, validate

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
GPU_DIR = SHARED_TRACES / "xplane_gpu"
# file -> (device events, kernels, memcpy, memset) as counted on the files (traces/README: 105 / 150
# "kernels" = every device event; ROCm runs hipMemcpy/hipMemset as __amd_rocclr_* blit kernels).
GPU_TRACES = {
    "jax_attention_mi300.xplane.pb": (105, 87, 18, 0),
    "jax_te_fused_attn_gfx950.xplane.pb": (150, 130, 0, 20),
}
TF_AVAILABLE = importlib.util.find_spec("tensorflow") is not None
XPROF_AVAILABLE = importlib.util.find_spec("xprof") is not None
DEVICE_KINDS = [Kind.KERNEL.value, Kind.MEMCPY.value, Kind.MEMSET.value]
STEPS = 4


def gpu_trace(name: str) -> Path:
    path = GPU_DIR / name
    if not path.exists():
        pytest.skip(f"shared GPU trace {path} not present (the ../shared/traces folder is not in a fresh clone)")
    return path


def counts_add_up(timeline: Any) -> None:
    meta = timeline.meta
    assert sum(meta.kept.values()) == len(timeline.events)
    assert sum(meta.kept.values()) + sum(meta.dropped.values()) == meta.input_events


# --------------------------------------------------------------------------------------------
# JAX on AMD GPUs (shared real traces)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(GPU_TRACES))
def test_gpu_trace_reads_kernels_launches_and_counts(name: str) -> None:
    path = gpu_trace(name)
    timeline = xplane.read(path)
    ev = timeline.events
    meta = timeline.meta
    device_events, kernels, memcpy, memset = GPU_TRACES[name]

    assert list(ev.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert list(ev.columns[len(COLUMNS) :]) == [*xplane.EXTRA_COLUMNS, "role"]  # role: set by the builder
    assert validate(timeline) == []
    counts_add_up(timeline)
    assert meta.format == "xplane" and meta.framework == "jax"

    device = ev[ev["device"] >= 0]
    assert len(device) == device_events
    assert set(device["kind"].astype(str)) <= set(DEVICE_KINDS)
    assert (device["kind"] == Kind.KERNEL.value).sum() == kernels
    assert (device["kind"] == Kind.MEMCPY.value).sum() == memcpy
    assert (device["kind"] == Kind.MEMSET.value).sum() == memset
    assert device["track"].astype(str).str.match(r"^GPU 0 stream \d+$").all()
    assert (device["stream"] == device["tid"]).all()
    assert [d.vendor for d in meta.devices] == ["amd"] and meta.devices[0].index == 0

    # Every device event links to exactly one host launch call with the same correlation id.
    launches = ev[ev["kind"] == Kind.LAUNCH.value]
    assert len(launches) == device_events
    assert (device["correlation"] >= 0).all()
    assert sorted(device["correlation"]) == sorted(launches["correlation"])
    assert launches["name"].astype(str).str.startswith("hip").all()
    assert launches["track"].astype(str).str.startswith("host Host Threads/").all()
    launch_ts = launches.set_index("correlation")["ts"]
    assert (device["ts"].to_numpy() >= launch_ts.loc[device["correlation"]].to_numpy()).all()

    # ts relative to the earliest kept event; origin anchored on the session start (epoch ns).
    assert ev["ts"].min() == 0
    start = meta.extra["profile_start_time_ns"]
    assert start <= meta.origin_ns <= meta.extra["profile_stop_time_ns"]

    # The framework op (JAX op path) reaches kernels and the launches that queued them.
    assert (device["launcher"].astype(str) != "").mean() > 0.5
    assert device["fw_op"].astype(str).str.startswith("jit(").any()

    # The normalized form is still sound.
    assert validate(normalize(timeline)) == []


def test_gpu_trace_host_kinds_and_drops() -> None:
    timeline = xplane.read(gpu_trace("jax_attention_mi300.xplane.pb"))
    ev = timeline.events
    kind_of = ev.groupby("name", observed=True)["kind"].agg(lambda k: set(k.astype(str)))
    assert kind_of["PjitFunction(matmul)"] == {Kind.HOST_OP.value}
    assert kind_of["jit_matmul:XLA GPU module"] == {Kind.HOST_OP.value}
    assert kind_of["custom-call.1"] == {Kind.HOST_OP.value}  # thunk inside the module execution
    assert kind_of["Thunks::Prepare"] == {Kind.ANNOTATION.value}
    assert kind_of["$builtins isinstance"] == {Kind.PYTHON.value}
    memcpy = ev[ev["kind"] == Kind.MEMCPY.value]
    assert set(memcpy["copy_kind"].astype(str)) == {"H2D"}  # from hipMemcpyHtoDAsync by correlation id
    dropped = timeline.meta.dropped
    assert dropped["memory sample (in the memory table)"] == 288 == len(timeline.memory)
    assert dropped["instant event (no duration)"] == 63
    # XLA's allocator of GPU 0 and its pinned host allocator.
    memory = timeline.memory.to_pandas()
    assert dict(zip(memory["allocator"].astype(str), memory["device"])) == {"GPU_0_bfc": 0, "xla_gpu_host_bfc": -1}


def test_gpu_trace_memset_and_custom_plane() -> None:
    timeline = xplane.read(gpu_trace("jax_te_fused_attn_gfx950.xplane.pb"))
    ev = timeline.events
    memset = ev[ev["kind"] == Kind.MEMSET.value]
    assert memset["name"].astype(str).str.startswith("__amd_rocclr_fill").all()
    assert set(memset["copy_kind"].astype(str)) == {"memset"}
    assert "/device:CUSTOM:Megascale Trace" in timeline.meta.extra["planes"]


# --------------------------------------------------------------------------------------------
# TensorFlow on CPU, captured here
# --------------------------------------------------------------------------------------------
CAPTURE = textwrap.dedent(
    """
    import os, sys, json
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    def make_step(mode):
        tf.random.set_seed(0)
        x = tf.random.normal((64, 32))
        y = tf.random.normal((64, 8))
        w1 = tf.Variable(tf.random.normal((32, 64)) * 0.1)
        w2 = tf.Variable(tf.random.normal((64, 8)) * 0.1)
        opt = tf.keras.optimizers.SGD(0.01)

        def step():
            with tf.GradientTape() as tape:
                h = tf.nn.relu(x @ w1)
                loss = tf.reduce_mean((h @ w2 - y) ** 2)
            grads = tape.gradient(loss, [w1, w2])
            opt.apply_gradients(zip(grads, [w1, w2]))
            return loss

        if mode == "data":  # a tf.data pipeline with a map function feeds a tf.function step
            ds = tf.data.Dataset.from_tensor_slices((tf.random.normal((256, 32)), tf.random.normal((256, 8))))
            batches = iter(ds.map(lambda a, b: (a * 2.0, b)).batch(64).repeat())

            @tf.function
            def fed(xb, yb):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((tf.nn.relu(xb @ w1) @ w2 - yb) ** 2)
                grads = tape.gradient(loss, [w1, w2])
                opt.apply_gradients(zip(grads, [w1, w2]))
                return loss

            return lambda: fed(*next(batches))
        if mode == "function":
            return tf.function(step)
        if mode == "xla":
            return tf.function(step, jit_compile=True)
        return step

    out = {}
    for mode in sys.argv[2:]:
        logdir = os.path.join(sys.argv[1], mode)
        step = make_step(mode)
        tf.profiler.experimental.start(logdir)
        for i in range(__STEPS__):
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                step()
        tf.profiler.experimental.stop()
        out[mode] = logdir

    # Reading works with TensorFlow imported too (its own XPlane classes sit in the default pool).
    from pathlib import Path
    from traceview.readers import xplane, xplane_runs
    counts = {}
    for mode, logdir in out.items():
        files = xplane_runs.find_xplanes(Path(logdir), None)
        counts[mode] = xplane.read(files[0]).meta.kept
    print(json.dumps({"logdirs": out, "kept": counts}))
    """
).replace("__STEPS__", str(STEPS))


@pytest.fixture(scope="module")
def tf_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not TF_AVAILABLE:
        pytest.skip(f"tensorflow is not installed ({install_hint('tf')})")
    root = tmp_path_factory.mktemp("tf_logdirs")
    script = root / "capture.py"
    script.write_text(CAPTURE)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, str(script), str(root), "eager", "function", "xla", "data"],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    paths = {mode: xplane_runs.find_xplanes(Path(logdir), None)[0] for mode, logdir in result["logdirs"].items()}
    return {"paths": paths, "kept_with_tf": result["kept"]}


def step_windows(ev: pd.DataFrame) -> pd.DataFrame:
    steps = ev[ev["kind"] == Kind.STEP.value].sort_values("ts")
    return steps.assign(end=steps["ts"] + steps["dur"])


def in_window(ev: pd.DataFrame, window: pd.Series) -> pd.DataFrame:
    return ev[(ev["ts"] >= window["ts"]) & (ev["ts"] < window["end"])]


@pytest.mark.tf
@pytest.mark.parametrize("mode", ["eager", "function", "xla", "data"])
def test_tf_steps_and_soundness(tf_traces: dict[str, Any], mode: str) -> None:
    timeline = xplane.read(tf_traces["paths"][mode])
    assert timeline.meta.framework == "tensorflow"
    assert validate(timeline) == []
    counts_add_up(timeline)
    assert validate(normalize(timeline)) == []
    steps = step_windows(timeline.events)
    assert list(steps["name"].astype(str)) == ["train"] * STEPS
    assert list(steps["step_num"]) == list(range(STEPS))
    assert (timeline.events.loc[timeline.events["kind"] != Kind.STEP.value, "step_num"] == -1).all()
    assert not timeline.has_device


@pytest.mark.tf
def test_tf_eager_ops(tf_traces: dict[str, Any]) -> None:
    ev = xplane.read(tf_traces["paths"]["eager"]).events
    ops = ev[ev["kind"] == Kind.HOST_OP.value]
    assert (ops["name"] == "EagerLocalExecute: MatMul").sum() >= 2 * STEPS  # two matmuls forward
    kernels = ops[ops["name"] == "KernelAndDeviceFunc::Run"]
    assert "MatMul" in set(kernels["fw_op"].astype(str))  # inherited from EagerExecute's eager_op
    assert not (ev["kind"] == Kind.GRAPH_BUILD.value).any()
    assert set(ev["track"].astype(str)) == {"host python"}


@pytest.mark.tf
def test_tf_function_graph_build_and_op_kernels(tf_traces: dict[str, Any]) -> None:
    ev = xplane.read(tf_traces["paths"]["function"]).events
    steps = step_windows(ev)
    graph = ev[ev["kind"] == Kind.GRAPH_BUILD.value]
    assert "tf.function-graph_building" in set(graph["name"].astype(str))
    assert len(in_window(graph, steps.iloc[0])) == len(graph)  # all tracing in the first step
    # The tf.function call event (named after the Python function) is a host op.
    call = ev[ev["name"] == "step"]
    assert len(call) == STEPS and set(call["kind"].astype(str)) == {Kind.HOST_OP.value}
    # Op kernels "name:Type" on tf_Compute threads.
    compute = ev[ev["track"].astype(str).str.startswith("host tf_Compute/")]
    kernels = compute[compute["name"].astype(str).str.match(r"^[^\s:]+:[A-Za-z_]\w*$")]
    assert len(kernels) and set(kernels["kind"].astype(str)) == {Kind.HOST_OP.value}
    # oneDNN builds run MatMul as _MklMatMul.
    assert (kernels["name"].astype(str).str.contains(r":(?:_Mkl)?MatMul$")).sum() >= 2 * STEPS
    assert timeline_instants_dropped(tf_traces["paths"]["function"]) > 0


def timeline_instants_dropped(path: Path) -> int:
    return xplane.read(path).meta.dropped.get("instant event (no duration)", 0)


@pytest.mark.tf
def test_tf_xla_compile_and_thunks(tf_traces: dict[str, Any]) -> None:
    ev = xplane.read(tf_traces["paths"]["xla"]).events
    steps = step_windows(ev)
    compile_ = ev[ev["kind"] == Kind.COMPILE.value]
    names = set(compile_["name"].astype(str))
    assert {"HLO passes through layout assignment", "CpuCompiler::RunBackend"} <= names
    assert {"dce", "sharding-removal"} <= names  # passes outside a named compile range (sibling rule)
    assert len(in_window(compile_, steps.iloc[0])) == len(compile_)
    assert len(compile_) > 100
    codegen = ev[ev["track"].astype(str).str.contains("xla-cpu-codegen")]
    assert len(codegen) and set(codegen["kind"].astype(str)) == {Kind.COMPILE.value}
    # XLA CPU thunks carry hlo_op: host ops whose fw_op is the HLO instruction.
    thunks = ev[(ev["kind"] == Kind.HOST_OP.value) & (ev["fw_op"].astype(str) == ev["name"].astype(str))]
    assert len(thunks) >= STEPS
    assert (ev["name"] == "BlockUntilReady").any()
    assert set(ev.loc[ev["name"] == "BlockUntilReady", "kind"].astype(str)) == {Kind.SYNC.value}
    later = pd.concat([in_window(ev, w) for _, w in steps.iloc[1:].iterrows()])
    assert not (later["kind"] == Kind.COMPILE.value).any()
    assert not (later["kind"] == Kind.GRAPH_BUILD.value).any()


@pytest.mark.tf
def test_tf_data_input(tf_traces: dict[str, Any]) -> None:
    ev = xplane.read(tf_traces["paths"]["data"]).events
    tracks = ev["track"].astype(str)
    data_threads = ev[tracks.str.startswith("host tf_data_")]
    assert len(data_threads) and set(data_threads["kind"].astype(str)) == {Kind.INPUT.value}
    assert (data_threads["name"].astype(str).str.endswith(":Mul")).any()  # the map function's op kernel
    python = ev[tracks == "host python"]
    get_next = python[python["name"] == "EagerLocalExecute: IteratorGetNext"]
    assert len(get_next) == STEPS and set(get_next["kind"].astype(str)) == {Kind.INPUT.value}


# --------------------------------------------------------------------------------------------
# No TensorFlow needed
# --------------------------------------------------------------------------------------------
NO_TF = textwrap.dedent(
    """
    import json, sys
    for blocked in ("tensorflow", "tsl", "xprof", "tensorboard_plugin_profile", "jax", "jaxlib"):
        sys.modules[blocked] = None  # any import of these now raises ImportError
    from pathlib import Path
    from traceview.readers import xplane
    out = {}
    for arg in sys.argv[1:]:
        out[arg] = xplane.read(Path(arg)).meta.kept
    loaded = sorted(m for m, v in sys.modules.items() if v is not None and m.split(".")[0] in
                    ("tensorflow", "tsl", "xprof", "jax", "jaxlib", "tensorboard_plugin_profile"))
    print(json.dumps({"kept": out, "loaded": loaded}))
    """
)


def test_reads_without_tensorflow(tf_traces_or_none: dict[str, Any] | None) -> None:
    paths = [GPU_DIR / n for n in sorted(GPU_TRACES) if (GPU_DIR / n).exists()]
    if tf_traces_or_none is not None:
        paths += list(tf_traces_or_none["paths"].values())
    if not paths:
        pytest.skip("no XPlane traces available (shared traces absent and tensorflow not installed)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF, *map(str, paths)], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    for path in paths:
        assert result["kept"][str(path)] == xplane.read(path).meta.kept
    if tf_traces_or_none is not None:  # same counts in a process that had TensorFlow imported
        for mode, path in tf_traces_or_none["paths"].items():
            assert tf_traces_or_none["kept_with_tf"][mode] == result["kept"][str(path)]


@pytest.fixture(scope="module")
def tf_traces_or_none(request: pytest.FixtureRequest) -> dict[str, Any] | None:
    if not TF_AVAILABLE:
        return None
    return request.getfixturevalue("tf_traces")


def test_no_tensorflow_import_in_package() -> None:
    # The collectors (traceview.capture among them) profile TF loops, so they import TF inside their
    # functions, for TF captures only; nothing that reads or analyses a trace does.
    collectors = REPO / "traceview" / "collectors"
    for source in (REPO / "traceview").rglob("*.py"):
        if collectors in source.parents:
            continue
        text = source.read_text()
        assert "import tensorflow" not in text and "from tensorflow" not in text, source


# --------------------------------------------------------------------------------------------
# Differential test against xprof (the TensorBoard profile plugin's converters)
# --------------------------------------------------------------------------------------------
def xprof_table(path: Path, tool: str, tmp_path: Path) -> pd.DataFrame:
    """One xprof tool's first table as a DataFrame; converts a copy (xprof writes caches next to it)."""
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data

    work = tmp_path / tool
    work.mkdir()
    copy = work / path.name
    shutil.copy(path, copy)
    data, _ = xspace_to_tool_data([str(copy)], tool, {})
    assert data is not None, f"xprof produced no {tool} for {path}"
    doc = json.loads(data)
    table = doc[0] if isinstance(doc, list) else doc
    cols = [c["id"] for c in table["cols"]]
    rows = [[cell.get("v") if cell else None for cell in row["c"]] for row in table["rows"]]
    return pd.DataFrame(rows, columns=cols)


def assert_close_us(ours_ns: pd.Series, theirs_us: pd.Series, count: pd.Series) -> None:
    """Totals agree within the rounding: ≤ 1 ns per event (ps → ns, start and end rounded
    separately) plus xprof's 1 ns output precision."""
    error_us = (ours_ns / 1000.0 - theirs_us.astype(float)).abs()
    allowed = count * 0.001 + 0.001
    assert (error_us <= allowed).all(), pd.DataFrame({"error_us": error_us, "allowed": allowed})


@pytest.mark.skipif(not XPROF_AVAILABLE, reason="xprof (tensorboard-plugin-profile) is not installed")
@pytest.mark.parametrize("name", sorted(GPU_TRACES))
def test_kernel_stats_match_xprof(name: str, tmp_path: Path) -> None:
    """xprof kernel_stats counts every device-stream event as a kernel (ROCm copy/fill blit kernels
    too), grouped by kernel name, launch dims and op; traceview splits those into kernel / memcpy /
    memset. Per kernel name, occurrences and total time agree (xprof µs at ns precision)."""
    path = gpu_trace(name)
    ours = xplane.read(path).events
    ours = ours[ours["device"] >= 0].groupby("name", observed=True)["dur"].agg(["size", "sum"])
    theirs = xprof_table(path, "kernel_stats", tmp_path)
    theirs = theirs.groupby("kernel_name")[["occurrences", "total_duration_us"]].sum()
    assert set(theirs.index) == set(ours.index)
    assert int(theirs["occurrences"].sum()) == GPU_TRACES[name][0]
    joined = ours.join(theirs)
    assert (joined["size"] == joined["occurrences"]).all()
    assert_close_us(joined["sum"], joined["total_duration_us"], joined["size"])


@pytest.mark.tf
@pytest.mark.skipif(not XPROF_AVAILABLE, reason="xprof (tensorboard-plugin-profile) is not installed")
@pytest.mark.parametrize("mode", ["function", "xla"])
def test_framework_op_stats_match_xprof(tf_traces: dict[str, Any], mode: str, tmp_path: Path) -> None:
    """xprof framework_op_stats (host side, CPU trace): one row per TF op kernel ``name:Type`` with
    occurrences and total time. Differences by definition: xprof adds an IDLE row and leaves out
    op kernels whose node name starts with "_" (TF-internal ``_send_Const_0:_Send``; its
    IsTfOpName), except function ops named ``__inference_f:__inference_f``; traceview keeps all of
    them as host_op events. Eager traces have no op kernels of this form (their ops are
    EagerLocalExecute ranges) and xprof reports none either."""
    path = tf_traces["paths"][mode]
    ev = xplane.read(path).events
    kernels = ev[(ev["kind"] == Kind.HOST_OP.value) & ev["name"].astype(str).str.match(r"^[^\s:]+:[A-Za-z_]\w*$")]
    split = kernels["name"].astype(str).str.rsplit(":", n=1, expand=True)
    kernels = kernels.assign(operation=split[0], type=split[1])
    kernels = kernels[~kernels["operation"].str.startswith("_") | (kernels["operation"] == kernels["type"])]
    ours = kernels.groupby("operation")["dur"].agg(["size", "sum"])
    theirs = xprof_table(path, "framework_op_stats", tmp_path)
    theirs = theirs[(theirs["host_or_device"] == "Host") & (theirs["type"] != "IDLE")]
    theirs = theirs.groupby("operation")[["occurrences", "total_time"]].sum()
    assert set(theirs.index) == set(ours.index)
    joined = ours.join(theirs)
    assert (joined["size"] == joined["occurrences"]).all()
    assert_close_us(joined["sum"], joined["total_time"], joined["size"])


# --------------------------------------------------------------------------------------------
# Bad input and format detection
# --------------------------------------------------------------------------------------------
def assert_one_line_format_error(path: Path, fragment: str) -> None:
    with pytest.raises(FormatError) as info:
        xplane.read(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and fragment in message


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.xplane.pb"
    path.write_bytes(b"")
    assert_one_line_format_error(path, "empty")


def test_truncated_protobuf(tmp_path: Path) -> None:
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(gpu_trace("jax_attention_mi300.xplane.pb").read_bytes()[:100])
    assert xplane.sniff(path.read_bytes())  # still looks like XPlane ...
    assert_one_line_format_error(path, "truncated or corrupt")  # ... but cannot be parsed


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "noise.xplane.pb"
    path.write_bytes(np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    assert_one_line_format_error(path, "XSpace")


def test_sniff() -> None:
    real = [gpu_trace(n).read_bytes()[:4096] for n in sorted(GPU_TRACES)]
    assert all(xplane.sniff(head) for head in real)
    kineto = b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "aten::mm"}]}'
    for head in (kineto, b"\n" + kineto, b"\n\n" + kineto, b"[" + kineto + b"]", gzip.compress(kineto),
                 b"hello world\n", b"", b"\n", b"\x0a\x80"):
        assert not xplane.sniff(head), head[:20]


def test_detect_routes_xplane(tmp_path: Path) -> None:
    from traceview.readers import detect

    copy = tmp_path / "renamed.bin"
    shutil.copy(gpu_trace("jax_te_fused_attn_gfx950.xplane.pb"), copy)
    assert detect(copy) is xplane


# --------------------------------------------------------------------------------------------
# Determinism, schema module
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(GPU_TRACES))
def test_deterministic(name: str) -> None:
    path = gpu_trace(name)
    first, second = xplane.read(path), xplane.read(path)
    pd.testing.assert_frame_equal(first.events, second.events)
    assert first.meta == second.meta


def test_generated_module_matches_proto() -> None:
    proto = REPO / "traceview" / "readers" / "proto" / "xplane.proto"
    assert xplane_descriptor.PROTO_SHA256 == hashlib.sha256(proto.read_bytes()).hexdigest(), (
        "xplane.proto changed: run python scripts/regen_xplane_proto.py"
    )
    if importlib.util.find_spec("grpc_tools") is not None:
        proc = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "regen_xplane_proto.py"), "--check"],
            capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_private_descriptor_pool() -> None:
    from google.protobuf import descriptor_pool

    classes = xplane_descriptor.message_classes()
    assert classes["XSpace"].DESCRIPTOR.full_name == "tensorflow.profiler.XSpace"
    assert classes["XSpace"].DESCRIPTOR.file.pool is not descriptor_pool.Default()


# --------------------------------------------------------------------------------------------
# Synthetic XSpaces: what real files in this repo do not show
# --------------------------------------------------------------------------------------------
class SpaceBuilder:
    """Small helper to write XSpaces with interned names, as the profilers do."""

    def __init__(self) -> None:
        self.m = xplane_descriptor.message_classes()
        self.space = self.m["XSpace"]()

    def plane(self, name: str, plane_id: int = 0) -> Any:
        plane = self.space.planes.add()
        plane.name = name
        plane.id = plane_id
        return plane

    @staticmethod
    def stat_id(plane: Any, name: str) -> int:
        for key, md in plane.stat_metadata.items():
            if md.name == name:
                return int(key)
        key = len(plane.stat_metadata) + 1
        plane.stat_metadata[key].id = key
        plane.stat_metadata[key].name = name
        return key

    @staticmethod
    def event_id(plane: Any, name: str) -> int:
        for key, md in plane.event_metadata.items():
            if md.name == name:
                return int(key)
        key = len(plane.event_metadata) + 1
        plane.event_metadata[key].id = key
        plane.event_metadata[key].name = name
        return key

    def set_stat(self, plane: Any, owner: Any, name: str, value: Any, ref: bool = False) -> None:
        stat = owner.stats.add()
        stat.metadata_id = self.stat_id(plane, name)
        if ref:
            stat.ref_value = self.stat_id(plane, value)
        elif isinstance(value, str):
            stat.str_value = value
        elif isinstance(value, float):
            stat.double_value = value
        else:
            stat.int64_value = value

    def event(self, plane: Any, line: Any, name: str, offset_ns: int, dur_ns: int, **stats: Any) -> Any:
        ev = line.events.add()
        ev.metadata_id = self.event_id(plane, name)
        ev.offset_ps = offset_ns * 1000
        ev.duration_ps = dur_ns * 1000
        for key, value in stats.items():
            self.set_stat(plane, ev, key, value, ref=isinstance(value, str))
        return ev

    def write(self, path: Path) -> Path:
        path.write_bytes(self.space.SerializeToString())
        return path


def nvidia_like_space(copy_size: int = 4096) -> SpaceBuilder:
    b = SpaceBuilder()
    env = b.plane("Task Environment")
    b.set_stat(env, env, "profile_start_time", 1_700_000_000_000_000_000)
    host = b.plane("/host:CPU", 1)
    py = host.lines.add()
    py.name, py.id, py.timestamp_ns = "python", 11, 1_000
    b.event(host, py, "train", 0, 10_000, step_num=5)
    b.event(host, py, "model/dense/MatMul:MatMul", 100, 500)
    api = host.lines.add()
    api.name, api.id, api.timestamp_ns = "Host Threads/42", 42, 1_000
    b.event(host, api, "cuLaunchKernel", 200, 50, correlation_id=1)
    b.event(host, api, "cuMemcpyHtoDAsync_v2", 300, 40, correlation_id=2)
    b.event(host, api, "cuStreamSynchronize", 400, 3_000)
    b.event(host, api, "cuCtxGetCurrent", 3_500, 10)
    derived = host.lines.add()
    derived.name, derived.id = "TensorFlow Ops", 99
    b.event(host, derived, "MatMul", 100, 500)
    gpu = b.plane("/device:GPU:1", 2)
    b.set_stat(gpu, gpu, "device_vendor", "Nvidia")
    stream = gpu.lines.add()
    stream.name, stream.id, stream.timestamp_ns = "Stream #7(Kernel,MemcpyH2D)", 7, 1_000
    b.event(gpu, stream, "ampere_sgemm_128x64_nn", 600, 2_000, correlation_id=1, tf_op="model/dense/MatMul:MatMul")
    b.event(gpu, stream, "MemcpyH2D", 350, 100, correlation_id=2,
            memcpy_details=f"kind_src:pinned kind_dst:device size:{copy_size} dest:1 async:1")
    b.event(gpu, stream, "Memset", 2_700, 20, memset_details="kind:device num_bytes:256 async:1")
    xla_ops = gpu.lines.add()
    xla_ops.name, xla_ops.id = "XLA Ops", 1000
    b.event(gpu, xla_ops, "dot.1", 600, 2_000)
    meta = b.plane("/host:metadata", 3)
    b.event_id(meta, "jit_train_step")  # metadata planes hold no events, only names/protos
    return b


def test_synthetic_gpu_space(tmp_path: Path) -> None:
    timeline = xplane.read(nvidia_like_space().write(tmp_path / "gpu.xplane.pb"))
    ev = timeline.events.set_index("name")
    meta = timeline.meta
    assert validate(timeline) == []
    counts_add_up(timeline)
    assert meta.input_events == 11
    assert meta.dropped == {
        "derived line 'TensorFlow Ops' (duplicates op kernels)": 1,
        "derived line 'XLA Ops' (duplicates device events)": 1,
    }
    assert meta.framework == "jax"  # a jit_* module in /host:metadata
    assert [(d.index, d.vendor) for d in meta.devices] == [(1, "nvidia")]
    assert meta.origin_ns == 1_700_000_000_000_000_000 + 1_000
    assert ev.loc["train", "kind"] == Kind.STEP.value and ev.loc["train", "step_num"] == 5
    assert ev.loc["train", "ts"] == 0
    assert ev.loc["cuLaunchKernel", "kind"] == Kind.LAUNCH.value
    assert ev.loc["cuMemcpyHtoDAsync_v2", "kind"] == Kind.LAUNCH.value
    assert ev.loc["cuStreamSynchronize", "kind"] == Kind.SYNC.value
    assert ev.loc["cuCtxGetCurrent", "kind"] == Kind.RUNTIME.value
    kernel = ev.loc["ampere_sgemm_128x64_nn"]
    assert (kernel["kind"], kernel["device"], kernel["stream"], kernel["track"]) == (
        Kind.KERNEL.value, 1, 7, "GPU 1 stream 7")
    assert kernel["launcher"] == "model/dense/MatMul:MatMul" == kernel["fw_op"]
    assert ev.loc["cuLaunchKernel", "fw_op"] == ""
    copy = ev.loc["MemcpyH2D"]
    assert (copy["kind"], copy["copy_kind"], copy["bytes"]) == (Kind.MEMCPY.value, "H2D", 4096)
    fill = ev.loc["Memset"]
    assert (fill["kind"], fill["copy_kind"], fill["bytes"]) == (Kind.MEMSET.value, "memset", 256)
    assert ev.loc["model/dense/MatMul:MatMul", "track"] == "host python"
    assert ev.loc["cuLaunchKernel", "track"] == "host Host Threads/42"


def test_a_copy_size_beyond_int64_is_an_unknown_size(tmp_path: Path) -> None:
    """A size no int64 holds (a corrupt or hostile stat) reads as no size, not as an error."""
    timeline = xplane.read(nvidia_like_space(copy_size=2**70).write(tmp_path / "gpu.xplane.pb"))
    copy = timeline.events.set_index("name").loc["MemcpyH2D"]
    assert (copy["kind"], copy["copy_kind"], copy["bytes"]) == (Kind.MEMCPY.value, "H2D", -1)


def test_metadata_stats_ref_values_and_aggregates(tmp_path: Path) -> None:
    b = SpaceBuilder()
    host = b.plane("/host:CPU")
    line = host.lines.add()
    line.name, line.id = "tf_Compute/5", 5
    # Stats on the event metadata apply to every event of it; the event's own stat wins.
    md_id = b.event_id(host, "EagerExecute")
    b.set_stat(host, host.event_metadata[md_id], "eager_op", "MatMul", ref=True)
    b.event(host, line, "EagerExecute", 0, 100)
    b.event(host, line, "EagerExecute", 200, 100, eager_op="Relu")
    b.event(host, line, "EagerExecute", 400, 100)
    aggregated = line.events.add()
    aggregated.metadata_id = md_id
    aggregated.num_occurrences = 12
    b.event(host, line, "ThreadpoolListener::Record", 450, 0)
    timeline = xplane.read(b.write(tmp_path / "md.xplane.pb"))
    assert list(timeline.events["fw_op"].astype(str)) == ["MatMul", "Relu", "MatMul"]
    assert timeline.meta.dropped == {
        "aggregated event without timestamp (num_occurrences)": 1,
        "instant event (no duration)": 1,
    }
    assert timeline.meta.framework == "tensorflow"
    counts_add_up(timeline)


def test_allocator_samples_fill_the_memory_table(tmp_path: Path) -> None:
    b = SpaceBuilder()
    host = b.plane("/host:CPU")
    line = host.lines.add()
    line.name, line.id = "tf_Compute/5", 5
    b.event(host, line, "ExecutorState::Process", 0, 1_000)
    cpu = {"allocator_name": "bfc_cpu_allocator_for_gpu"}
    pinned = {"allocator_name": "gpu_host_bfc"}
    gpu = {"allocator_name": "GPU_1_bfc"}
    b.event(host, line, "MemoryAllocation", 100, 0, **cpu, bytes_allocated=1_256, requested_bytes=200,
            allocation_bytes=256, addr=7, tf_op="dense/MatMul")
    b.event(host, line, "MemoryAllocation", 200, 0, **pinned, bytes_allocated=512, requested_bytes=500,
            allocation_bytes=512, addr=7)
    b.event(host, line, "MemoryAllocation", 300, 0, **gpu, bytes_allocated=4_096, requested_bytes=4_000,
            addr=9, tf_op="dense/Relu")
    b.event(host, line, "MemoryDeallocation", 400, 0, **cpu, bytes_allocated=1_000, requested_bytes=200,
            allocation_bytes=256, addr=7)
    b.event(host, line, "MemoryDeallocation", 500, 0, **gpu, bytes_allocated=96, addr=9)  # no size
    b.event(host, line, "MemoryDeallocation", 600, 0, **pinned, bytes_allocated=0, allocation_bytes=512, addr=3)
    timeline = xplane.read(b.write(tmp_path / "memory.xplane.pb"))
    counts_add_up(timeline)
    assert timeline.meta.dropped == {
        "memory sample (in the memory table)": 5,
        "allocator sample without a size (no usable allocation_bytes or requested_bytes stat)": 1,
    }
    memory = timeline.memory.to_pandas()
    assert list(memory.columns) == list(MEMORY_COLUMNS)
    assert memory["ts"].tolist() == [100, 200, 300, 400, 600]  # the first kept event is at ts 0
    # allocation_bytes, else requested_bytes; frees negative.
    assert memory["bytes"].tolist() == [256, 512, 4_000, -256, -512]
    assert memory["device"].tolist() == [-1, -1, 1, -1, -1]
    # Host total: both host allocators' latest bytes_allocated, summed.
    assert memory["total_allocated"].tolist() == [1_256, 1_768, 4_096, 1_512, 1_000]
    assert (memory["total_reserved"] == -1).all()
    # A free takes the op of the allocation at its address in its allocator.
    assert memory["op"].astype(str).tolist() == ["dense/MatMul", "", "dense/Relu", "dense/MatMul", ""]
    assert set(memory["track"].astype(str)) == {"host tf_Compute/5"}


def test_tpu_plane_keeps_xla_ops(tmp_path: Path) -> None:
    b = SpaceBuilder()
    tpu = b.plane("/device:TPU:0")
    ops = tpu.lines.add()
    ops.name, ops.id = "XLA Ops", 3
    b.event(tpu, ops, "fusion.1", 0, 1_000)
    modules = tpu.lines.add()
    modules.name, modules.id = "XLA Modules", 2
    b.event(tpu, modules, "jit_f(1)", 0, 2_000)
    timeline = xplane.read(b.write(tmp_path / "tpu.xplane.pb"))
    assert list(timeline.events["kind"].astype(str)) == [Kind.KERNEL.value]
    assert timeline.meta.dropped == {"derived line 'XLA Modules' (duplicates device events)": 1}
    assert [(d.index, d.vendor) for d in timeline.meta.devices] == [(0, "google")]


def test_picosecond_rounding_keeps_nesting(tmp_path: Path) -> None:
    b = SpaceBuilder()
    host = b.plane("/host:CPU")
    line = host.lines.add()
    line.name = "python"
    outer = line.events.add()
    outer.metadata_id = b.event_id(host, "outer")
    outer.offset_ps, outer.duration_ps = 500, 1_500  # [0.5, 2.0) ns
    inner = line.events.add()
    inner.metadata_id = b.event_id(host, "inner")
    inner.offset_ps, inner.duration_ps = 1_000, 1_000  # [1.0, 2.0) ns
    timeline = normalize(xplane.read(b.write(tmp_path / "ps.xplane.pb")))
    ev = timeline.events.set_index("name")
    assert ev.loc["outer", "ts"] + ev.loc["outer", "dur"] >= ev.loc["inner", "ts"] + ev.loc["inner", "dur"]
    assert validate(timeline) == []


# --------------------------------------------------------------------------------------------
# Logdir discovery
# --------------------------------------------------------------------------------------------
def make_logdir(root: Path, runs: dict[str, list[str]]) -> Path:
    for run, hosts in runs.items():
        folder = root / "plugins" / "profile" / run
        folder.mkdir(parents=True)
        for host in hosts:
            (folder / f"{host}.xplane.pb").write_bytes(b"")
        (folder / "ALL_HOSTS.op_stats_v2.pb").write_bytes(b"")  # an xprof cache file, not a trace
    return root


def test_find_xplanes(tmp_path: Path) -> None:
    logdir = make_logdir(tmp_path / "logs", {
        "2026_11_22_02_43_17": ["vm"],
        "2026_11_22_02_50_01": ["host0", "host1"],
        "2026_11_21_23_59_59": ["vm"],
    })
    newest = logdir / "plugins" / "profile" / "2026_11_22_02_50_01"
    expected = [newest / "host0.xplane.pb", newest / "host1.xplane.pb"]
    assert xplane_runs.find_xplanes(logdir, None) == expected
    assert xplane_runs.find_xplanes(logdir / "plugins" / "profile", None) == expected
    assert xplane_runs.find_xplanes(newest, None) == expected
    assert xplane_runs.find_xplanes(logdir, "2026_11_22_02_43_17") == [
        logdir / "plugins" / "profile" / "2026_11_22_02_43_17" / "vm.xplane.pb"
    ]
    with pytest.raises(InputError, match="no run named 'nope'.*2026_11_21_23_59_59"):
        xplane_runs.find_xplanes(logdir, "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as info:
        xplane_runs.find_xplanes(empty, None)
    assert "no .xplane.pb files found" in str(info.value) and "\n" not in str(info.value)


def test_unreadable_host_files_are_named_for_the_run_read_only(tmp_path: Path) -> None:
    import warnings

    from traceview.errors import TraceviewWarning

    logdir = make_logdir(tmp_path / "logs", {"2026_11_22_02_43_17": ["vm"], "2026_11_22_02_50_01": ["vm"]})
    profile = logdir / "plugins" / "profile"
    (profile / "2026_11_22_02_43_17" / "w1.xplane.pb").symlink_to(tmp_path / "gone")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The newest run is read: a broken host of an older run is no concern of this command (the
        # only warning says which run is read, and that another is there).
        assert xplane_runs.find_xplanes(logdir, None) == [profile / "2026_11_22_02_50_01" / "vm.xplane.pb"]
        assert [str(w.message) for w in caught] == [
            f"{logdir}: 2 profiling runs; reading the newest, '2026_11_22_02_50_01' (also: 2026_11_22_02_43_17); "
            "--run NAME reads another"]
        caught.clear()
        # The older run read by name: its broken host is named.
        older = profile / "2026_11_22_02_43_17"
        assert xplane_runs.find_xplanes(logdir, "2026_11_22_02_43_17") == [older / "vm.xplane.pb"]
    assert [str(w.message) for w in caught if issubclass(w.category, TraceviewWarning)] == [
        f"{profile / '2026_11_22_02_43_17' / 'w1.xplane.pb'}: not a readable regular file (skipped)"]
    # A newest run whose every host is unreadable is refused, naming it; the older run is not read instead.
    (profile / "2026_11_23_00_00_00").mkdir()
    (profile / "2026_11_23_00_00_00" / "vm.xplane.pb").symlink_to(tmp_path / "gone")
    for where in (logdir, profile / "2026_11_23_00_00_00"):
        with pytest.raises(InputError, match="2026_11_23_00_00_00: its .xplane.pb files are not readable"):
            xplane_runs.find_xplanes(where, None)


def test_space_without_timed_events(tmp_path: Path) -> None:
    b = SpaceBuilder()
    env = b.plane("Task Environment")
    b.set_stat(env, env, "profile_start_time", 1_700_000_000_000_000_000)
    b.plane("/host:CPU").lines.add().name = "python"
    timeline = xplane.read(b.write(tmp_path / "idle.xplane.pb"))
    assert len(timeline.events) == 0 and timeline.meta.input_events == 0
    assert list(timeline.events.columns) == [*COLUMNS, *xplane.EXTRA_COLUMNS, "role"]
    assert validate(timeline) == []


SAMPLE_XPLANES = sorted((REPO / "sample_traces").rglob("*.xplane.pb"))


@pytest.mark.skipif(not SAMPLE_XPLANES, reason="no committed XPlane sample traces yet")
@pytest.mark.parametrize("path", SAMPLE_XPLANES, ids=[str(p.relative_to(REPO)) for p in SAMPLE_XPLANES])
def test_committed_samples(path: Path) -> None:
    timeline = xplane.read(path)
    assert validate(timeline) == []
    counts_add_up(timeline)
    assert timeline.meta.framework in ("tensorflow", "jax")


def test_a_gzipped_xplane_in_a_logdir_is_found_and_read_like_the_raw_one(tmp_path) -> None:
    import gzip as _gzip

    from tests.conftest import SAMPLES
    from traceview.loader import load, trace_paths

    raw = next(iter(sorted((SAMPLES / "mlp2" / "tf-function").rglob("*.xplane.pb"))), None)
    if raw is None:
        pytest.skip("sample traces not present")
    run = tmp_path / "logdir" / "plugins" / "profile" / raw.parent.name
    run.mkdir(parents=True)
    (run / (raw.name + ".gz")).write_bytes(_gzip.compress(raw.read_bytes()))
    found = trace_paths(tmp_path / "logdir")
    assert [p.name for p in found] == [raw.name + ".gz"]
    a, b = load(raw).events, load(found[0]).events
    assert a["name"].astype(str).tolist() == b["name"].astype(str).tolist()
    assert (a["ts"].to_numpy() == b["ts"].to_numpy()).all()


def test_jax_cpu_capture_reads_the_xplane_and_finds_the_math_on_executor_threads() -> None:
    """A real JAX CPU capture (scripts/capture_jax_cpu.py): the trace viewer JSON JAX writes beside
    the XPlane is skipped, and the jitted step's XLA thunks (run on executor threads while the
    Python thread waits unrecorded in block_until_ready) are kernel time, not dispatch."""
    from tests.conftest import REPO
    from traceview.loader import diagnose
    from traceview.loader import trace_paths

    folder = REPO / "tests" / "data" / "jax_cpu_mlp2"
    paths = trace_paths(folder)
    assert [p.name for p in paths] == ["vm.xplane.pb"]
    diag = diagnose(paths[0])
    assert diag.timeline.meta.framework == "jax"
    assert diag.steps.rule == "markers"
    steady = diag.steady_attribution()
    details = diag.steady_details()
    assert details.get("kernel.other_threads", 0) > 0.5 * steady["kernel"] > 0
    ev = diag.timeline.events
    thunks = (ev["name"].astype(str) == "ThunkExecutor::Execute").to_numpy() & diag.steps.in_steady(ev)
    executor_ns = ev["dur"].to_numpy()[thunks].sum() / len(diag.steady_positions)
    assert steady["kernel"] >= 0.5 * executor_ns > 0  # the executor's time is mostly kernel, not dispatch
    assert sum(steady.values()) == pytest.approx(diag.steps.table["duration"][diag.steady_positions].mean())


def test_times_that_would_overflow_int64_are_dropped_not_wrapped(tmp_path: Path) -> None:
    """An XEvent offset or duration near 2**63 ps, or a line time near 2**63 ns, would wrap int64 ns
    into a negative duration: such events are dropped under a counted reason."""
    from tests.conftest import SAMPLES
    from traceview.readers.proto.xplane_descriptor import message_classes

    source = next(iter(sorted((SAMPLES / "mlp2" / "tf-function").rglob("*.xplane.pb"))), None)
    if source is None:
        pytest.skip("sample traces not present")
    space = message_classes()["XSpace"]()
    space.ParseFromString(source.read_bytes())
    host = next(p for p in space.planes if p.name.startswith("/host:CPU"))
    line = max(host.lines, key=lambda ln: len(ln.events))
    line.events[0].offset_ps = 2**63 - 1
    line.events[1].duration_ps = 2**62
    path = tmp_path / "overflow.xplane.pb"
    path.write_bytes(space.SerializeToString())
    timeline = xplane.read(path)
    ev = timeline.events
    assert (ev["dur"].to_numpy() >= 0).all() and (ev["ts"].to_numpy() >= 0).all()
    assert timeline.meta.dropped.get("offset, duration or line time out of range") == 2
    assert sum(timeline.meta.kept.values()) + sum(timeline.meta.dropped.values()) == timeline.meta.input_events
