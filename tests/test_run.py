"""``traceview run``: unmodified scripts profiled end to end, in subprocesses, as a user runs them.

The example scripts (examples/train_torch.py, examples/train_keras.py) import nothing of traceview;
each end-to-end test runs one under ``traceview run`` on CPU and checks the script's own output
passed through, the report found the requested steps, and every step's buckets sum to the step.
The quick tests (no framework) check the hook's start-up: what it imports, the exit code, the
messages when no step is found, and that an environment's own sitecustomize still runs.
"""

from __future__ import annotations

import ast
import gzip
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import REPO
from tests.report_invariants import json_violations

EXAMPLES = REPO / "examples"
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TF = importlib.util.find_spec("tensorflow") is not None
# JAX is no dependency: this interpreter when it has jax, else one named by TRACEVIEW_TEST_JAX_PYTHON (the
# hook needs nothing of traceview in the profiled interpreter, so a separate jax environment serves).
JAX_PYTHON = sys.executable if importlib.util.find_spec("jax") else os.environ.get("TRACEVIEW_TEST_JAX_PYTHON")


def traceview_run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    return subprocess.run([sys.executable, "-m", "traceview", "run", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, env=environ, timeout=300)


def run_with_report(tmp_path: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess, dict[str, Any] | None]:
    """``traceview run -o TMP/trace --format json --report TMP/report.json ARGS``; the report when written."""
    report_path = tmp_path / "report.json"
    done = traceview_run("-o", tmp_path / "trace", "--format", "json", "--report", report_path, *args)
    report = orjson.loads(report_path.read_bytes()) if report_path.exists() else None
    if report is not None:
        assert json_violations(report) == []  # every step's buckets sum to the step
    return done, report


def step_numbers(report: dict[str, Any]) -> list[int]:
    return [step["number"] for step in report["steps"]["table"]]


def json_after_script_output(stdout: str) -> tuple[str, dict[str, Any]]:
    """stdout = the script's own lines, then the JSON report (which starts with a line '{')."""
    cut = stdout.index("\n{\n") + 1 if not stdout.startswith("{") else 0
    return stdout[:cut], orjson.loads(stdout[cut:])


@pytest.mark.parametrize("script", ["train_torch.py", "train_keras.py"])
def test_example_scripts_do_not_import_traceview(script: str) -> None:
    tree = ast.parse((EXAMPLES / script).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "traceview" not in imported and "collectors" not in imported


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_torch_script_profiled_and_calibrated(tmp_path: Path) -> None:
    done, report = run_with_report(tmp_path, "--steps", "5-15", "--calibrate", "--top", "3", "--redact", "--strict",
                                   "--", sys.executable, EXAMPLES / "train_torch.py")
    assert done.returncode == 0, done.stderr
    # The report options diagnose takes, taken by run too.
    assert len(report["top_ops"]) == 3 and report["trace"]["source"].startswith("<path>")
    # The script's own output, twice: the profiled run and the calibration run.
    assert done.stdout.count("trained 30 steps") == 2 and "step  10  loss" in done.stdout
    assert report["trace"]["framework"] == "torch"
    assert report["steps"]["rule"] == "markers"
    assert step_numbers(report) == list(range(5, 16))
    steady = report["steady_state"]
    assert steady["unprofiled_step_time_ns"] > 0 and steady["profiler_inflation"] > 0
    manifest = orjson.loads((tmp_path / "trace" / "manifest.json").read_bytes())
    assert manifest["run"]["steps_captured"] == [5, 15] and manifest["run"]["steps_seen"] == 30
    assert len(manifest["timing"]["unprofiled_s"]) == 11
    assert "optimizer.step() of Adam" in done.stderr


@pytest.mark.tf
@pytest.mark.skipif(not HAS_TF, reason="tensorflow not installed")
def test_keras_fit_script_profiled(tmp_path: Path) -> None:
    done = traceview_run("-o", tmp_path / "trace", "--format", "json", "--", sys.executable,
                         EXAMPLES / "train_keras.py")
    assert done.returncode == 0, done.stderr
    script_output, report = json_after_script_output(done.stdout)
    assert "trained 30 batches, loss" in script_output
    assert json_violations(report) == []
    assert report["trace"]["framework"] == "tensorflow"
    assert report["steps"]["rule"] == "markers" and report["steps"]["count"] >= 11
    assert step_numbers(report) == list(range(5, 16))
    assert list((tmp_path / "trace" / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert "keras Sequential.fit train batches" in done.stderr


@pytest.mark.tf
@pytest.mark.skipif(not HAS_TF, reason="tensorflow not installed")
def test_tf_custom_loop_steps_are_calls_of_the_train_function(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(
        "import sys\nimport tensorflow as tf\n"
        "w = tf.Variable(tf.zeros((8, 1)))\nx = tf.ones((64, 8))\n"
        "@tf.function\ndef init():\n    return w.assign(tf.zeros_like(w))\n"
        "@tf.function\ndef train_step(x):\n"
        "    with tf.GradientTape() as tape:\n        loss = tf.reduce_mean((x @ w - 1.0) ** 2)\n"
        "    w.assign_sub(0.1 * tape.gradient(loss, w))\n    return loss\n"
        "init()\nfor _ in range(12):\n    loss = train_step(x)\nprint('loss', float(loss))\nsys.exit(3)\n",
        encoding="utf-8")
    done, report = run_with_report(tmp_path, "--steps", "3-8", "--", sys.executable, script)
    # The report is written, then the script's exit code is traceview's, with one line saying so.
    assert done.returncode == 3
    assert done.stderr.strip().splitlines()[-1].endswith("exited with code 3")
    assert step_numbers(report) == list(range(3, 9))
    assert "calls of the tf.function train_step" in done.stderr


@pytest.mark.skipif(not JAX_PYTHON, reason="jax not installed (TRACEVIEW_TEST_JAX_PYTHON names another interpreter)")
def test_jax_jitted_train_step_profiled(tmp_path: Path) -> None:
    script = tmp_path / "train_jax.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "x = jnp.ones((256, 16)); w = jnp.zeros((16, 1))\n"
        "@jax.jit\ndef init(w):\n    return w * 0.0\n"
        "@jax.jit\ndef step(w, x):\n"
        "    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w)\n    return w - 0.1 * g, loss\n"
        "w = init(w)\nfor _ in range(10):\n    w, loss = step(w, x)\n    loss.block_until_ready()\n"
        "print('loss', float(loss))\n", encoding="utf-8")
    done, report = run_with_report(tmp_path, "--steps", "3-7", "--", JAX_PYTHON, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("loss ")
    assert report["trace"]["framework"] == "jax"
    assert step_numbers(report) == list(range(3, 8))
    assert "calls of the jitted function step" in done.stderr


# Eager loops: no tf.function / jax.jit is called twice, so the steps are the calls the loop makes
# once a step, each known by the script's line (a new tape or grad function each step).
EAGER_TF_LOOP = (
    "import tensorflow as tf\n"
    "w = tf.Variable(tf.zeros((8, 1)))\nx = tf.ones((64, 8))\n"
    "for _ in range(12):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean((x @ w - 1.0) ** 2)\n"
    "    w.assign_sub(0.01 * tape.gradient(loss, w))\n"
    "print('loss', float(loss))\n")
EAGER_JAX_LOOP = (
    "import jax, jax.numpy as jnp\n"
    "x = jnp.ones((256, 16)); w = jnp.zeros((16, 1))\n"
    "def loss_fn(w):\n    return jnp.mean((x @ w - 1.0) ** 2)\n"
    "for _ in range(10):\n"
    "    loss, g = jax.value_and_grad(loss_fn)(w)\n"
    "    w = w - 0.01 * g\n"
    "print('loss', float(loss))\n")
# A Keras custom loop on the torch backend: neither a torch optimizer nor a tape, only the Keras
# optimizer's apply once a step.
EAGER_KERAS_TORCH_LOOP = (
    "import os\nos.environ['KERAS_BACKEND'] = 'torch'\n"
    "import keras, torch\n"
    "model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(1)])\n"
    "optimizer = keras.optimizers.SGD(1e-2)\n"
    "x = torch.ones((64, 8)); y = torch.ones((64, 1))\n"
    "for _ in range(12):\n"
    "    model.zero_grad()\n"
    "    loss = keras.ops.mean((model(x) - y) ** 2)\n"
    "    loss.backward()\n"
    "    weights = list(model.trainable_weights)\n"
    "    optimizer.apply([v.value.grad for v in weights], weights)\n"
    "print('loss', float(loss))\n")


@pytest.mark.parametrize("loop, python, framework, rule", [
    pytest.param(EAGER_TF_LOOP, sys.executable, "tensorflow", "an eager loop's tf.GradientTape left at loop.py:5",
                 marks=[pytest.mark.tf, pytest.mark.skipif(not HAS_TF, reason="tensorflow not installed")],
                 id="tf-gradient-tape"),
    pytest.param(EAGER_JAX_LOOP, JAX_PYTHON, "jax", "an eager loop's jax.value_and_grad(loss_fn) called at loop.py:6",
                 marks=pytest.mark.skipif(not JAX_PYTHON, reason="jax not installed"), id="jax-value-and-grad"),
    pytest.param(EAGER_KERAS_TORCH_LOOP, sys.executable, "torch", "an eager loop's SGD.apply at loop.py:12",
                 marks=[pytest.mark.torch, pytest.mark.skipif(not (HAS_TORCH and HAS_TF), reason="torch or keras missing")],
                 id="keras-optimizer-apply"),
])
def test_eager_loops_are_profiled_by_the_calls_they_make_once_a_step(
        tmp_path: Path, loop: str, python: str, framework: str, rule: str) -> None:
    script = tmp_path / "loop.py"
    script.write_text(loop, encoding="utf-8")
    done, report = run_with_report(tmp_path, "--steps", "3-7", "--", python, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("loss ")
    assert report["trace"]["framework"] == framework
    assert step_numbers(report) == list(range(3, 8))
    assert rule in done.stderr  # the rule that found the steps is named


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_a_script_ending_inside_the_window_gives_its_whole_steps(tmp_path: Path) -> None:
    done, report = run_with_report(tmp_path, "--steps", "2-6", "--", sys.executable, EXAMPLES / "train_torch.py",
                                   "--steps", "4")
    assert done.returncode == 0, done.stderr
    assert "the script ran 4 steps: captured steps 2-4 (asked 2-6)" in done.stderr
    # Step 5 had begun when the script ended: torch closes its marker at stop; it is dropped.
    assert step_numbers(report) == [2, 3, 4]


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_fewer_steps_than_the_window_are_captured_in_a_second_run(tmp_path: Path) -> None:
    done, report = run_with_report(tmp_path, "--", sys.executable, EXAMPLES / "train_torch.py", "--steps", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("trained 3 steps") == 2
    assert "captured steps 1-3 in a second run (asked 5-15)" in done.stderr
    assert step_numbers(report) == [1, 2, 3]
    assert report["steps"]["cold"] == [1]  # the manifest declares step 1 cold


def test_hook_imports_nothing_heavy_and_no_step_is_one_line(tmp_path: Path) -> None:
    probe = ("import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "{'torch', 'tensorflow', 'keras', 'jax', 'numpy', 'pandas', 'traceview', 'collectors'}))")
    done = traceview_run("-o", tmp_path / "trace", "--", sys.executable, "-c", probe)
    assert done.stdout.strip() == "[]"
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"traceview: `{shlex.join([sys.executable, '-c', probe])}` ran no training step: it imported none of "
        "torch, tensorflow, keras, jax; traceview run finds steps in those frameworks' training loops"]
    assert not (tmp_path / "trace").exists() or not any((tmp_path / "trace").iterdir())


# A torch loop of tiny ops whose step BIG_STEP runs 50x the others: with Python events on, each
# op is several events, so that step alone passes a small --profiler-memory.
TINY_OPS_LOOP = (
    "import sys, torch\n"
    "ops, big_step = int(sys.argv[1]), int(sys.argv[2])\n"
    "w = torch.nn.Parameter(torch.ones(4, 4)); optimizer = torch.optim.SGD([w], lr=1e-3)\n"
    "x = torch.ones(4, 4)\n"
    "def tiny(y):\n    return y * 1.0001\n"
    "for step in range(1, 9):\n"
    "    y = x @ w\n"
    "    for _ in range(ops * (50 if step == big_step else 1)):\n"
    "        y = tiny(y)\n"
    "    y.sum().backward(); optimizer.step(); optimizer.zero_grad()\n"
    "print('done')\n")


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_a_step_too_large_for_the_profilers_memory_is_stopped_and_dropped(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(TINY_OPS_LOOP, encoding="utf-8")
    done, report = run_with_report(tmp_path, "--steps", "3-7", "--profiler-memory", "1G", "--",
                                   sys.executable, script, "2000", "5")
    assert done.returncode == 0, done.stderr
    assert "the profiler was stopped inside step 5" in done.stderr
    assert "--no-python-events" in done.stderr  # what would let more steps in
    assert step_numbers(report) == [3, 4]  # the step it was stopped in is not a step of the trace
    manifest = orjson.loads((tmp_path / "trace" / "manifest.json").read_bytes())
    assert manifest["steps"]["total"] == 2


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
def test_no_python_events_records_no_python_calls(tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(TINY_OPS_LOOP, encoding="utf-8")
    done, report = run_with_report(tmp_path, "--steps", "2-4", "--no-python-events", "--",
                                   sys.executable, script, "50", "0")
    assert done.returncode == 0, done.stderr
    assert step_numbers(report) == [2, 3, 4]
    trace = next((tmp_path / "trace").glob("*.pt.trace.json.gz"))
    events = orjson.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    assert not [e for e in events if e.get("cat") == "python_function"]
    assert [e for e in events if e.get("cat") == "cpu_op"]


BUSY_LOOP = (
    "import torch\n"
    "torch.set_num_threads(1)\n"
    "w = torch.nn.Parameter(torch.ones(256, 256)); optimizer = torch.optim.SGD([w], lr=1e-3)\n"
    "x = torch.ones(256, 256)\n"
    "for step in range(10):\n"
    "    y = x @ w\n"
    "    for _ in range(20):\n"
    "        y = y @ w * 1e-3\n"
    "    y.sum().backward(); optimizer.step(); optimizer.zero_grad()\n")


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="no /proc schedstat (Linux only)")
def test_a_contended_machine_is_said_from_the_threads_wait_for_a_cpu(tmp_path: Path) -> None:
    """Four busy processes beside a one-thread step on this machine's cores: the step's thread
    waits, runnable, for a CPU (schedstat), and the report says the machine was contended."""
    script = tmp_path / "loop.py"
    script.write_text(BUSY_LOOP, encoding="utf-8")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        done, report = run_with_report(tmp_path, "--steps", "3-7", "--", sys.executable, script)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == 0, done.stderr
    manifest = orjson.loads((tmp_path / "trace" / "manifest.json").read_bytes())
    waits = manifest["timing"]["cpu_wait_s"]
    assert len(waits) == len(manifest["timing"]["profiled_s"])
    assert sum(waits) / sum(manifest["timing"]["profiled_s"]) > 0.05
    assert any(note.startswith("the machine was contended") for note in report["trace"]["notes"])


@pytest.mark.parametrize("text, size", [("8G", 8 * 2**30), ("500M", 500 * 2**20), ("2.5GB", int(2.5 * 2**30)),
                                        ("1048576", 2**20), ("64 MiB", 64 * 2**20)])
def test_profiler_memory_sizes(text: str, size: int) -> None:
    from traceview.commands.run import _parse_size

    assert _parse_size(text) == size


@pytest.mark.parametrize("text", ["10k", "lots", "-1G", "1X"])
def test_a_profiler_memory_that_is_no_size_is_refused(text: str) -> None:
    done = traceview_run("--profiler-memory", text, "--", sys.executable, "-c", "pass")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"traceview: --profiler-memory {text!r}: give a size of at least "
                                                "1M, e.g. 8G or 500M"]


def test_the_open_step_marker_is_dropped_event_by_event() -> None:
    """The streaming drop gives the trace json.load + filter would, on a real torch trace."""
    from traceview.inject.torch_hooks import _drop_marker

    source = next((REPO / "sample_traces" / "mlp2" / "torch-eager").glob("*.pt.trace.json.gz"))
    original = orjson.loads(gzip.decompress(source.read_bytes()))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / source.name
        shutil.copy(source, copy)
        _drop_marker(str(copy), "ProfilerStep#1")
        dropped = orjson.loads(gzip.decompress(copy.read_bytes()))
    assert dropped["traceEvents"] == [e for e in original["traceEvents"] if e.get("name") != "ProfilerStep#1"]
    assert len(dropped["traceEvents"]) == len(original["traceEvents"]) - 1
    assert {k: v for k, v in dropped.items() if k != "traceEvents"} == \
        {k: v for k, v in original.items() if k != "traceEvents"}


def test_exit_code_of_the_command_is_propagated(tmp_path: Path) -> None:
    done = traceview_run("-o", tmp_path / "trace", "--", sys.executable, "-c",
                         "import sys; print('working'); sys.exit(4)")
    assert done.returncode == 4
    assert done.stdout == "working\n"
    assert "exited with code 4 before a trace was written" in done.stderr.strip().splitlines()[-1]


def test_a_command_that_starts_no_python_is_named(tmp_path: Path) -> None:
    done = traceview_run("-o", tmp_path / "trace", "--", "true")
    assert done.returncode == 2
    assert "started no Python process that loaded traceview's hook" in done.stderr


def test_the_environments_own_sitecustomize_still_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("print('own sitecustomize')\n", encoding="utf-8")
    done = traceview_run("-o", tmp_path / "trace", "--", sys.executable, "-c", "print('script')",
                         env={"PYTHONPATH": str(site)})
    # Once in traceview's own interpreter (same PYTHONPATH), once in the command's, before the script.
    assert done.stdout.splitlines() == ["own sitecustomize", "own sitecustomize", "script"]


@pytest.mark.parametrize("args, message", [
    (["--steps", "9-3", "--", "python", "x.py"], "A must not exceed B"),
    (["--steps", "five", "--", "python", "x.py"], "use A-B"),
    (["--framework", "mxnet", "--", "python", "x.py"], "--framework 'mxnet' is not one of"),
    (["--format", "pdf", "--", "python", "x.py"], "--format 'pdf' is not one of"),
    # A mistyped option is no command to run.
    (["--stesp", "5-10", "--", "python", "x.py"], "no such option: --stesp (did you mean --steps?)"),
    (["--redac", "--", "python", "x.py"], "no such option: --redac (did you mean --redact?)"),
    (["-f", "torch", "--", "python", "x.py"], "--format 'torch' is not one of"),  # -f is --format everywhere
])
def test_bad_options_are_refused_before_the_command_runs(args: list[str], message: str) -> None:
    done = traceview_run(*args)
    assert done.returncode == 2
    assert message in done.stderr


def test_a_folder_with_other_files_is_not_overwritten_unasked(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    done = traceview_run("-o", tmp_path, "--", sys.executable, "-c", "print('never runs')")
    assert done.returncode == 2 and "is not empty" in done.stderr
    assert "never runs" not in done.stdout


def test_a_report_path_in_no_folder_is_refused_before_the_script_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = subprocess.run([sys.executable, "-m", "traceview", "run", "--report", str(tmp_path / "no" / "r.md"), "-o",
                           str(tmp_path / "run"), "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and "--report" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not marker.exists()
