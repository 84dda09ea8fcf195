"""The trace-quality section and ``--strict``: every check counts its problem on a small Kineto
trace built for it, the real sample traces give only the problems they really have, and
``--strict`` exits 2 with one line after the report (docs/bad_input.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, cached_diagnosis, sample_kineto_traces, sample_xplane_traces
from traceview.analyzers.quality import EXPECTED_DROPS, PYTHON_TRACER_NOTE, is_expected_drop
from traceview.loader import trace_paths
from traceview.results import CHECK_KEYS

CLEAN_COUNTS = dict.fromkeys(CHECK_KEYS, 0)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300, env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})


def _step(i: int, ts: int, dur: int = 90) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def _launch(ts: int, correlation: int, name: str = "cudaLaunchKernel") -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5,
            "args": {"correlation": correlation}}


def _kernel(ts: int, correlation: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts, "dur": 20,
            "args": {"device": 0, "stream": 7, "correlation": correlation}}


def _trace(steps: int = 3, kernel_delay: int = 10) -> list[dict[str, Any]]:
    """A clean GPU trace: per step an op that launches one kernel, with the metadata record and
    flow arrows every Kineto trace has (dropped, but expected)."""
    events: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
    for i in range(steps):
        t0 = i * 100
        events += [_step(i, t0),
                   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 30},
                   _launch(t0 + 15, 100 + i),
                   {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 100 + i, "pid": 1, "tid": 1, "ts": t0 + 15},
                   _kernel(t0 + 15 + kernel_delay, 100 + i)]
    return events


def _with(events: list[dict[str, Any]], *added: dict[str, Any]) -> list[dict[str, Any]]:
    return events + list(added)


def _shifted_kernel(events: list[dict[str, Any]], correlation: int, ts: int) -> list[dict[str, Any]]:
    return [{**e, "ts": ts} if e.get("cat") == "kernel" and e["args"]["correlation"] == correlation else e
            for e in events]


def _hollow(events: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
    """The trace with nothing recorded in step ``step`` (of _trace's 100 µs steps) but its marker."""
    t0 = step * 100
    return [e for e in events if e.get("name") == f"ProfilerStep#{step}" or not t0 <= e.get("ts", -1) < t0 + 100]


# case -> (events, the counts that are not zero)
CASES: dict[str, tuple[list[dict[str, Any]], dict[str, int]]] = {
    "dropped": (_with(_trace(), {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": "x",
                                 "dur": 3},
                      {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 50, "dur": -1}),
                {"dropped": 2}),
    # The kernel of step 1 starts 2 µs before its launch call: one event, not the device's clock.
    "device_before_launch": (_shifted_kernel(_trace(), 101, 113), {"device_before_launch": 1}),
    # An op on the step's thread that starts inside aten::mm and ends after it.
    "overlaps": (_with(_trace(), {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 130,
                                  "dur": 20}),
                 {"overlaps": 1}),
    # Every kernel starts 3 µs before its launch: the device clock is behind the host's.
    "clock_skew": (_trace(kernel_delay=-3), {"clock_skew": 1, "device_before_launch": 3}),
    # Two launch calls with one id (one of them queues no kernel), and two kernels on another id.
    "duplicate_correlation": (_with(_trace(), _launch(221, 102), _kernel(60, 100)), {"duplicate_correlation": 2}),
    # A step marker with nothing recorded in it, before a step that holds events.
    "empty_steps": (_hollow(_trace(4), 2), {"empty_steps": 1}),
}


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "trace.json", **top: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events, **top}))
    return path


def test_the_clean_trace_has_only_expected_drops(tmp_path: Path):
    path = _write(tmp_path, _trace())
    result = _run("diagnose", str(path), "--format", "json", "--strict")
    assert result.returncode == 0, result.stderr
    quality = json.loads(result.stdout)["quality"]
    assert quality["problems"] == []
    assert {k: v["count"] for k, v in quality["checks"].items()} == CLEAN_COUNTS
    assert sum(quality["expected_drops"].values()) == 4  # the metadata record and 3 flow arrows
    assert quality["checks"]["clock_skew"]["median_launch_to_device_ns"] == {"0": 10_000.0}
    for fmt in ("terminal", "md"):
        text = _run("diagnose", str(path), "--format", fmt, "--strict").stdout
        assert [line.strip(" *") for line in text.splitlines() if "Trace quality" in line] == [
            "Trace quality: no problems found"]


def test_steps_without_framework_ops_are_said_to_hold_no_training_work(tmp_path: Path):
    """A schedule's last cycle exported after the loop ended holds only the profiler's own Python
    frames: no op ran, so there is no dispatch to fuse — launch_bound is skipped (not 'high' on
    99 % of a step of nothing) and a note says the trace recorded no training work."""
    events = [{"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
              for name, ts, dur in (("torch/profiler/profiler.py(790): __exit__", 0, 180),
                                    ("torch/profiler/profiler.py(800): stop", 10, 160),
                                    ("<built-in method _disable_profiler of PyCapsule object>", 20, 140))]
    report = json.loads(_run("diagnose", str(_write(tmp_path, events)), "--format", "json").stdout)
    launch = next(f for f in report["findings"] if f["rule"] == "launch_bound")
    assert launch["grade"] == "skipped" and "no training work" in launch["summary"]
    assert all(f["grade"] in ("none", "skipped") for f in report["findings"])
    assert any("records no training work" in note for note in report["trace"]["notes"])


@pytest.mark.skipif(not (REPO / "sample_traces" / "linreg-gd" / "numpy-eager").is_dir(), reason="sample_traces/ absent")
def test_steps_holding_only_their_markers_stay_idle_as_the_quality_check_says():
    """The numpy baselines record step markers and nothing in them: the quality check says their
    time counts as idle, and the attribution agrees (it read 100 % 'framework glue' inferred from
    the one gap between the marker's edges, and launch_bound high)."""
    diagnosis = cached_diagnosis(trace_paths(REPO / "sample_traces" / "linreg-gd" / "numpy-eager")[0])
    assert [c.key for c in diagnosis.quality.problems()] == ["empty_steps"]
    steady = diagnosis.steady_attribution()
    assert steady["idle"] == sum(steady.values()) > 0
    assert next(f for f in diagnosis.findings if f.rule == "launch_bound").grade == "skipped"


def test_a_python_frame_crossing_the_range_it_opens_is_not_an_overlap(tmp_path: Path):
    """torch's Python tracer records ``_record_function_enter_new`` returning after the range it
    opened began (and ``_record_function_exit`` starting before it ends): expected, not a fault."""
    events = _with(_trace(),
                   {"ph": "X", "cat": "python_function", "name": "torch/autograd/profiler.py(750): __enter__",
                    "pid": 1, "tid": 1, "ts": 105, "dur": 10},  # crosses aten::mm's start (110)
                   {"ph": "X", "cat": "python_function", "name": "torch/autograd/profiler.py(760): __exit__",
                    "pid": 1, "tid": 1, "ts": 135, "dur": 10})  # crosses its end (140)
    quality = json.loads(_run("diagnose", str(_write(tmp_path, events)), "--format", "json").stdout)["quality"]
    assert quality["checks"]["overlaps"]["count"] == 0 and quality["problems"] == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_problem_is_counted_and_strict_exits_2_with_one_line(tmp_path: Path, case: str):
    events, expected = CASES[case]
    path = _write(tmp_path, events)
    result = _run("diagnose", str(path), "--format", "json", "--strict")
    assert result.returncode == 2, result.stderr
    quality = json.loads(result.stdout)["quality"]  # the report is written before the exit
    assert {k: v["count"] for k, v in quality["checks"].items()} == {**CLEAN_COUNTS, **expected}
    assert quality["problems"] == [k for k in CHECK_KEYS if k in expected]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("traceview: trace quality problems (--strict): "), result.stderr
    assert str(path) in lines[0]
    without = _run("diagnose", str(path), "--format", "json")
    assert without.returncode == 0 and without.stderr == "", without.stderr


def test_the_details_of_each_check(tmp_path: Path):
    quality = json.loads(_run("diagnose", str(_write(tmp_path, CASES["dropped"][0])), "--format", "json").stdout)
    assert quality["quality"]["checks"]["dropped"]["by_reason"] == {
        "ts is not a number in range": 1, "dur is not a non-negative number in range": 1}
    skew = json.loads(_run("diagnose", str(_write(tmp_path, CASES["clock_skew"][0])), "--format", "json").stdout)
    assert skew["quality"]["checks"]["clock_skew"] == {"count": 1, "devices": [0],
                                                      "median_launch_to_device_ns": {"0": -3000.0}}
    dup = json.loads(_run("diagnose", str(_write(tmp_path, CASES["duplicate_correlation"][0])), "--format",
                          "json").stdout)
    assert dup["quality"]["checks"]["duplicate_correlation"] == {"count": 2, "host_ids": 1, "device_ids": 1}
    empty = json.loads(_run("diagnose", str(_write(tmp_path, CASES["empty_steps"][0])), "--format", "json").stdout)
    assert empty["quality"]["checks"]["empty_steps"] == {"count": 1, "steps": [2]}
    assert empty["steps"]["count"] == 3 and "#2 left out" in empty["steps"]["detail"]


def test_an_empty_step_at_the_end_is_left_out_and_no_problem(tmp_path: Path):
    """The last ProfilerStep#N, from the last step() to the profiler's stop, holds nothing when the
    loop ends there: it is no step (it would be the steady state: microseconds of nothing), and
    not a fault of the recording."""
    path = _write(tmp_path, _with(_trace(), _step(3, 300, 50)))
    result = _run("diagnose", str(path), "--format", "json", "--strict")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["quality"]["problems"] == []
    assert report["steps"]["count"] == 3 and "#3 left out" in report["steps"]["detail"]


def test_a_graph_launch_may_queue_many_kernels_under_one_id(tmp_path: Path):
    events = _with(_trace(), _launch(250, 900, name="cudaGraphLaunch"), _kernel(258, 900), _kernel(280, 900))
    result = _run("diagnose", str(_write(tmp_path, events)), "--format", "json", "--strict")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["quality"]["checks"]["duplicate_correlation"]["count"] == 0


def test_every_report_format_shows_the_problems(tmp_path: Path):
    path = _write(tmp_path, CASES["empty_steps"][0])
    terminal = _run("diagnose", str(path), "--width", "80").stdout
    assert "Trace quality: 1 problem" in terminal and "steps without events (#2)" in terminal
    md = _run("diagnose", str(path), "--format", "md").stdout
    assert "**Trace quality: 1 problem**" in md and "- **1** steps without events (#2)" in md
    html = _run("diagnose", str(path), "--format", "html").stdout
    assert "<h3>Trace quality: 1 problem</h3>" in html and "steps without events (#2)" in html


def test_several_problems_and_several_traces_still_make_one_line(tmp_path: Path):
    both = _write(tmp_path, _hollow(_with(_trace(4), *CASES["overlaps"][0][-1:]), 2), "both.json")
    clean = _write(tmp_path, _trace(), "clean.json")
    result = _run("diagnose", str(tmp_path), "--format", "json", "--strict", "--jobs", "1")
    assert result.returncode == 2
    line, = result.stderr.splitlines()
    assert str(both) in line and str(clean) not in line
    assert "host events overlapping another on their thread without nesting: 1" in line
    assert "steps without events: 1" in line


def test_compare_strict_checks_both_sides(tmp_path: Path):
    clean = _write(tmp_path, _trace(), "clean.json")
    skewed = _write(tmp_path, CASES["clock_skew"][0], "skewed.json")
    assert _run("compare", str(clean), str(clean), "--strict").returncode == 0
    result = _run("compare", str(clean), str(skewed), "--strict", "--width", "80")
    assert result.returncode == 2
    line, = result.stderr.splitlines()
    assert str(skewed) in line and "devices whose clock runs behind the host's: 1" in line
    assert "Trace quality, baseline: no problems found" in result.stdout
    assert "Trace quality, candidate: 2 problems" in result.stdout
    # --strict wins over --fail-if-slower: the quality problem is the one reported.
    gated = _run("compare", str(clean), str(skewed), "--strict", "--fail-if-slower", "0", "--format", "json")
    assert gated.returncode == 2 and "trace quality problems" in gated.stderr
    assert json.loads(gated.stdout)["candidate"]["quality"]["problems"] == ["device_before_launch", "clock_skew"]


def test_trace_text_in_the_section_never_becomes_markup(tmp_path: Path):
    hostile = "<b>x</b>[a](http://e.test)|`y`"
    events = _with(_trace(), {"ph": "X", "cat": hostile, "name": "n", "pid": 1, "tid": 1, "ts": 20, "dur": 1})
    path = _write(tmp_path, events, baseTimeNanoseconds=hostile)
    md = _run("diagnose", str(path), "--format", "md").stdout
    html = _run("diagnose", str(path), "--format", "html").stdout
    section = md[md.index("**Trace quality"):md.index("<details>")]
    assert "unknown category" in section and "baseTimeNanoseconds" in section
    assert "<b>" not in section and not re.search(r"(?<!\\)\]\(", section)
    assert "|" not in section.replace("\\|", "")
    start = html.index("<h3>Trace quality")
    assert "<b>x</b>" not in html[start:html.index("</table>", start)]


def test_redact_covers_the_notes_of_the_section(tmp_path: Path):
    path = _write(tmp_path, _trace(), baseTimeNanoseconds="/home/alice/secret")
    out = _run("diagnose", str(path), "--format", "json", "--redact").stdout
    assert "alice" not in json.dumps(json.loads(out)["quality"])


def test_expected_drop_reasons_are_ones_the_readers_write():
    sources = "".join(p.read_text(encoding="utf-8") for p in (REPO / "traceview" / "readers").glob("*.py"))
    for prefix in EXPECTED_DROPS:
        assert prefix in sources, prefix
    assert not is_expected_drop("ts is not a number in range")
    assert not is_expected_drop("unknown category 'x'")


# The sample traces' real problems, by capture folder: torch.compile's compile phases record ranges
# that end after the op around them (PythonDispatchMode); the numpy baselines hold step spans only.
# (TF's executor on the LSTM's loops records ExecutorState::Process ranges that overlap on one
# thread: expected of TF, categories.NESTING_LOOSE, so no problem.)
SAMPLE_PROBLEMS = {
    **{f"{model}/torch-compile": "overlaps"
       for model in ("cnn", "cnn-infer", "linreg-gd", "linreg-gd-large", "mlp-adam", "mlp-bn", "mlp2",
                     "transformer")},
    "linreg-gd/numpy-eager": "empty_steps",
    "linreg-gd-large/numpy-eager": "empty_steps",
}


def _capture(path: Path) -> str:
    return "/".join(path.relative_to(REPO / "sample_traces").parts[:2])


SAMPLES = sample_kineto_traces() + sample_xplane_traces()


@pytest.mark.skipif(not SAMPLES, reason="sample_traces/ not present")
@pytest.mark.parametrize("path", SAMPLES, ids=_capture)
def test_sample_traces_have_no_problem_but_the_known_ones(path: Path):
    quality = cached_diagnosis(path).quality
    expected = SAMPLE_PROBLEMS.get(_capture(path))
    assert [c.key for c in quality.problems()] == ([expected] if expected else [])
    assert quality.dropped == {}
    # The one note a sample may carry: it was captured with Python events (the transformer's torch
    # capture records them).
    events = cached_diagnosis(path).timeline.events
    python = bool((events["kind"] == "python").any())
    assert quality.notes == ((PYTHON_TRACER_NOTE,) if python else ())
    assert all(is_expected_drop(reason) for reason in quality.expected_drops)


@pytest.mark.parametrize("folder", ["mlp2/torch-eager", "mlp2/tf-function", "cnn/tf-xla"])
def test_strict_passes_on_clean_sample_traces(folder: str):
    path = REPO / "sample_traces" / folder
    if not path.exists():
        pytest.skip(f"{path} not present")
    result = _run("diagnose", str(path), "--strict", "--format", "md")
    assert result.returncode == 0, result.stderr
    assert "**Trace quality: no problems found**" in result.stdout


def test_a_replay_needs_the_clocks_and_says_what_it_lost(tmp_path: Path):
    """The replay orders the host's and the device's work by their clocks: on a device whose clock
    runs behind the host's, no finding carries a prediction (it says why) and ``whatif`` refuses
    with one line; events lost to broken data are named in each prediction."""
    skewed = json.loads(_run("diagnose", str(_write(tmp_path, CASES["clock_skew"][0])), "--format", "json").stdout)
    assert all(f["predicted_step_ns"] is None for f in skewed["findings"])
    assert any(f["prediction"].startswith("no prediction: the clock of device 0 runs behind the host's")
               for f in skewed["findings"])
    refused = _run("whatif", str(_write(tmp_path, CASES["clock_skew"][0], "skewed.json")), "--without", "kernel")
    assert refused.returncode == 2 and refused.stdout == ""
    line, = refused.stderr.splitlines()
    assert "clock of device 0 runs behind the host's" in line and "capture the trace again" in line
    lost = json.loads(_run("diagnose", str(_write(tmp_path, CASES["dropped"][0], "lost.json")), "--format",
                           "json").stdout)
    predicted = [f for f in lost["findings"] if f["predicted_step_ns"] is not None]
    assert predicted and all("2 events lost to broken data are not in it" in f["prediction"] for f in predicted)
