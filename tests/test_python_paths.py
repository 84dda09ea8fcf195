"""Python frames named without folders: JAX's and TensorFlow's Python tracers record a frame as
``$<file base name>:<line> <function>``, so the framework's own Python cannot be told from the
user's by its package's path; the host_compute finding says so (tests/data/jax_cpu_python, a real
``jax.profiler.trace`` capture with its defaults: capture.py there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
# torch's with_stack: its own frames named by their package's path (torch/nn/modules/module.py(…))
TORCH_WITH_STACK = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases" / "torch-user-python" / "injected"


def _host_compute(trace: Path) -> dict:
    report = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(trace), "--format", "json"],
                            capture_output=True, text=True, check=True)
    return next(f for f in json.loads(report.stdout)["findings"] if f["rule"] == "host_compute")


def test_base_name_frames_are_said_to_include_the_frameworks_python() -> None:
    finding = _host_compute(DATA / "jax_cpu_python")
    assert finding["evidence"]["python_events"] and not finding["evidence"]["python_paths"]
    assert finding["evidence"]["python_ns"] > 0
    assert "without their folders" in finding["summary"]


def test_frames_named_by_path_need_no_such_word() -> None:
    finding = _host_compute(TORCH_WITH_STACK)
    assert finding["evidence"]["python_events"] and finding["evidence"]["python_paths"]
    assert "without their folders" not in finding["summary"]
