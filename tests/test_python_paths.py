"""Python frames named without folders: JAX's and TensorFlow's Python tracers record a frame as
``$<file base name>:<line> <function>``, so the framework's own Python cannot be told from the
user's by its package's path. Its files are told by what runs inside its API calls (roles.py), and
the host_compute finding says the rest may hold some (tests/data/jax_cpu_python, a real
``jax.profiler.trace`` capture with its defaults of un-jitted jax.grad steps: capture.py there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from traceview.loader import load_with_steps, trace_paths

DATA = Path(__file__).resolve().parent / "data"
# torch's with_stack: its own frames named by their package's path (torch/nn/modules/module.py(…))
TORCH_WITH_STACK = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases" / "torch-user-python" / "injected"


def _report(trace: Path) -> dict:
    report = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(trace), "--format", "json"],
                            capture_output=True, text=True, check=True)
    return json.loads(report.stdout)


def _host_compute(trace: Path) -> dict:
    return next(f for f in _report(trace)["findings"] if f["rule"] == "host_compute")


def test_base_name_frames_are_said_to_include_the_frameworks_python() -> None:
    finding = _host_compute(DATA / "jax_cpu_python")
    assert finding["evidence"]["python_events"] and not finding["evidence"]["python_paths"]
    assert finding["evidence"]["python_ns"] > 0
    assert "without their folders" in finding["summary"]


def test_frames_named_by_path_need_no_such_word() -> None:
    finding = _host_compute(TORCH_WITH_STACK)
    assert finding["evidence"]["python_events"] and finding["evidence"]["python_paths"]
    assert "without their folders" not in finding["summary"]


def test_frames_of_files_that_run_inside_the_frameworks_api_calls_are_the_frameworks() -> None:
    """JAX's files (core.py, api.py …: their frames run inside jax.grad's API wrapper) are the
    framework's Python, the user's loop file stays the user's; the un-jitted steps are then framework
    dispatch (launch_bound), not the user's Python."""
    timeline, _ = load_with_steps(trace_paths(DATA / "jax_cpu_python")[0])
    ev = timeline.events
    python = ev[ev["kind"] == "python"]
    roles = python.groupby(python["name"].astype(str).str.extract(r"^\$([^:]+):", expand=False), observed=True)["role"]
    role_of_file = roles.agg(lambda r: set(r.astype(str)))
    # (core.py's frames below jax.jit's tracing on a cache miss are that tracing: compile.)
    assert role_of_file["core.py"] == {"python_framework", "compile"} and role_of_file["api.py"] == {"python_framework"}
    assert role_of_file["capture.py"] == {"python_user"}
    findings = [f for f in _report(DATA / "jax_cpu_python")["findings"] if f["grade"] in ("moderate", "high")]
    assert "launch_bound" in [f["rule"] for f in findings]
    assert "host_compute" not in [f["rule"] for f in findings]
