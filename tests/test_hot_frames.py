"""The user's hottest lines (analyzers/hot_frames.py), named by the host-compute and input findings.

Ground truth: in the cases whose injected cost is the user's Python and whose traces record Python
frames, the hottest line of the injected trace is the line the injection added — a frame with no
time in the clean twin — and its self time is the host-compute growth from clean to injected,
within the scorer's 0.75–1.25. A script under ``traceview run`` that sleeps in a function of its
own has that function named with the sleep's time; a trace without frames says how to record them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import traceview
from traceview.analyzers.hot_frames import dispatching_lines, frame_label, hot_frames
from traceview.roles import Role

from tests.conftest import REPO

CASES = REPO / "benchmarks" / "truth" / "cases"
# Cases whose injected cost is the user's Python in a trace with Python frames (torch with_stack).
PYTHON_CASES = [c for c in ("torch-user-python", "torch-python-between-steps", "torch-gc") if (CASES / c).is_dir()]


def _python_ns(diag: traceview.Diagnosis) -> float:
    details = diag.steady_details()
    return details.get("host_compute.python", 0.0) + details.get("between_steps", 0.0)


@pytest.mark.parametrize("case", PYTHON_CASES)
def test_the_hottest_line_is_the_injected_one_at_its_size(case: str) -> None:
    clean = traceview.diagnose(CASES / case / "clean")
    injected = traceview.diagnose(CASES / case / "injected")
    top = hot_frames(injected, Role.PYTHON_USER.value)[0]
    in_clean = {f.frame: f.ns_per_step for f in hot_frames(clean, Role.PYTHON_USER.value, limit=1000)}
    assert in_clean.get(top.frame, 0.0) < 0.05 * top.ns_per_step  # the line the injection added
    finding = next(f for f in injected.findings if f.rule == "host_compute")
    growth = finding.evidence["python_ns"] - next(f for f in clean.findings if f.rule == "host_compute").evidence["python_ns"]
    assert 0.75 <= top.ns_per_step / growth <= 1.25
    assert finding.evidence["hot_frames"][0]["frame"] == top.frame
    assert f"'{top.frame}'" in finding.summary


@pytest.mark.parametrize("name, label", [
    ("train.py(42): step", "train.py:42 step"),
    ("/home/me/train.py(7): <module>", "/home/me/train.py:7 <module>"),
    ("$train.py:42 step", "train.py:42 step"),
    ("<built-in function sleep>", None),
    ("$builtins sleep", None),
])
def test_frame_labels(name: str, label: str | None) -> None:
    assert frame_label(name) == label


def test_a_trace_without_frames_says_how_to_record_them() -> None:
    case = CASES / "tf-user-python" / "injected"
    if not case.is_dir():
        pytest.skip("no tf-user-python case")
    finding = next(f for f in traceview.diagnose(case).findings if f.rule == "host_compute")
    assert "hot_frames" not in finding.evidence
    assert "python_tracer_level=1" in finding.evidence["record_frames"]
    assert "record Python frames: tf.profiler.experimental.ProfilerOptions(python_tracer_level=1)" in finding.summary


SLEEPING_LOOP = (
    "import time, torch\n"
    "w = torch.nn.Parameter(torch.ones(64, 64)); optimizer = torch.optim.SGD([w], lr=1e-3)\n"
    "x = torch.ones(64, 64)\n"
    "def prepare(i):\n"
    "    time.sleep(0.005)\n"
    "    return x + i\n"
    "for step in range(10):\n"
    "    y = prepare(step) @ w\n"
    "    y.sum().backward(); optimizer.step(); optimizer.zero_grad()\n")


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_a_sleep_in_the_users_function_is_named_by_traceview_run(tmp_path: Path) -> None:
    from tests.test_run import run_with_report

    script = tmp_path / "loop.py"
    script.write_text(SLEEPING_LOOP, encoding="utf-8")
    done, report = run_with_report(tmp_path, "--steps", "3-7", "--", sys.executable, script)
    assert done.returncode == 0, done.stderr
    finding = next(f for f in report["findings"] if f["rule"] == "host_compute")
    top = finding["evidence"]["hot_frames"][0]
    assert top["frame"].endswith("loop.py:4 prepare")
    assert 5e6 <= top["ns_per_step"] < 20e6  # the 5 ms sleep, charged to the line that called it
    assert "loop.py:4 prepare" in finding["summary"]


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_traceview_runs_own_hook_frames_are_no_line_of_the_users(tmp_path: Path) -> None:
    """With little Python of the user's, the hook's frames around the optimizer step (its wrapper,
    the step bookkeeping) were the 'hottest lines'; their time is the calling line's."""
    from tests.test_run import run_with_report

    script = tmp_path / "loop.py"
    script.write_text(SLEEPING_LOOP.replace("time.sleep(0.005)", "pass"), encoding="utf-8")
    done, _ = run_with_report(tmp_path, "--steps", "3-7", "--", sys.executable, script)
    assert done.returncode == 0, done.stderr
    frames = hot_frames(traceview.diagnose(tmp_path / "trace"), Role.PYTHON_USER.value, limit=1000)
    assert frames and not [f.frame for f in frames if "traceview/inject" in f.frame]


def test_the_line_an_injected_dispatch_runs_under_is_named_within_the_bucket() -> None:
    """jax-eager-grad: an un-jitted loss of tiny jax.numpy ops injected into the step. The line the
    dispatch is spent under most is one the injection added (none of the clean twin's), and the
    lines' times never add up to more than the launch/dispatch bucket."""
    case = CASES / "jax-eager-grad"
    if not case.is_dir():
        pytest.skip("no jax-eager-grad case")
    clean, injected = (traceview.diagnose(case / side) for side in ("clean", "injected"))
    top = dispatching_lines(injected)[0]
    assert top.frame not in {f.frame for f in dispatching_lines(clean, limit=1000)}
    for diag in (clean, injected):
        lines = dispatching_lines(diag, limit=1000)
        assert sum(f.ns_per_step for f in lines) <= diag.steady_attribution()["launch_overhead"] + 1
    finding = next(f for f in injected.findings if f.rule == "launch_bound")
    assert finding.evidence["hot_frames"][0]["frame"] == top.frame and f"'{top.frame}'" in finding.summary
