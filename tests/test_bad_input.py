"""Malformed Kineto events: dropped with a reason when the rest of the trace is usable, the trace
refused with one line (exit 2) when nothing is left; never a traceback or an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

GOOD = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
STEP = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}

# name -> (bad event, drop reason or None when the event is kept with the bad part ignored)
BAD_EVENTS = {
    "ts-string": ({**GOOD, "ts": "abc"}, "ts is not a number in range"),
    "ts-null": ({**GOOD, "ts": None}, "ts is not a number in range"),
    "ts-beyond-int64": ({**GOOD, "ts": 2**70}, "ts is not a number in range"),
    # An integer beyond a double's range (JSON allows it; a float literal that long is refused).
    "ts-beyond-double": ({**GOOD, "ts": 10**400}, "ts is not a number in range"),
    "ts-beyond-double-negative": ({**GOOD, "ts": -10**400}, "ts is not a number in range"),
    "dur-beyond-double": ({**GOOD, "dur": 10**400}, "dur is not a non-negative number in range"),
    "dur-string": ({**GOOD, "dur": "x"}, "dur is not a non-negative number in range"),
    "dur-negative": ({**GOOD, "dur": -5}, "dur is not a non-negative number in range"),
    "dur-236-years": ({**GOOD, "dur": 236 * 365 * 86400 * 10**6}, "dur is not a non-negative number in range"),
    "args-list": ({**GOOD, "args": [1, 2]}, "args is not an object"),
    "ph-list": ({**GOOD, "ph": ["X"]}, "phase is not a string"),
    "tid-dict": ({**GOOD, "tid": {}}, "tid is not an id"),
    "correlation-beyond-int64": ({**GOOD, "cat": "kernel", "args": {"correlation": 2**70, "device": 0}}, None),
    "step-number-beyond-int64": ({**STEP, "name": "ProfilerStep#99999999999999999999", "ts": 200}, None),
    "input-dims-garbage": ({**GOOD, "args": {"Input Dims": [[2**40, 2**40], "x", [None]]}}, None),
}


def _diagnose(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(path), "--format", "json"],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})


@pytest.mark.parametrize("case", sorted(BAD_EVENTS))
def test_a_bad_event_is_dropped_with_its_reason_and_the_rest_is_analysed(tmp_path: Path, case: str):
    bad, reason = BAD_EVENTS[case]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [STEP, GOOD, bad]}))
    result = _diagnose(path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    trace = report["trace"]
    assert trace["events_kept"] + sum(trace["dropped_by_reason"].values()) == trace["events_in_file"] == 3
    if reason:
        assert trace["dropped_by_reason"].get(reason) == 1, trace["dropped_by_reason"]
    for step in report["steps"]["table"]:
        assert sum(step["buckets_ns"].values()) == step["duration_ns"]


@pytest.mark.parametrize("document", [{"traceEvents": []}, [], {"traceEvents": [{"ph": "M", "name": "process_name",
                                                                                  "pid": 1, "args": {}}]},
                                      {"traceEvents": [{**GOOD, "ts": "x"}]}], ids=["empty", "list", "meta-only", "all-bad"])
def test_a_trace_with_nothing_usable_is_refused_in_one_line(tmp_path: Path, document):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document))
    result = _diagnose(path)
    assert result.returncode == 2
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert "no usable timed events" in result.stderr and str(path) in result.stderr


def test_a_base_time_that_is_not_a_number_is_ignored_with_a_note(tmp_path: Path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [STEP, GOOD], "baseTimeNanoseconds": "x"}))
    result = _diagnose(path)
    assert result.returncode == 0, result.stderr
    assert any("baseTimeNanoseconds" in note for note in json.loads(result.stdout)["trace"]["notes"])


def test_a_gzip_that_inflates_beyond_the_limit_is_refused_naming_the_flag(tmp_path: Path):
    import gzip

    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wb", compresslevel=9) as handle:
        handle.write(b'{"traceEvents": [' + b" " * (64 * 2**20))
    result = subprocess.run([sys.executable, "-m", "traceview", "--max-bytes", str(2**20), "diagnose", str(path)],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--max-bytes" in result.stderr and "1,048,576" in result.stderr


@pytest.mark.parametrize("value", ["²", "-5", "lots", "0", "1e9", "8 GiB", ""])
def test_a_max_bytes_variable_that_is_not_a_positive_number_is_one_line_and_exit_2(tmp_path: Path, value: str):
    # A mistyped limit is not replaced by the default in silence ("²" is a digit to str.isdigit()
    # that int() refuses); an empty variable is no limit set.
    path = tmp_path / "trace.json.gz"
    import gzip

    path.write_bytes(gzip.compress(json.dumps({"traceEvents": [STEP, GOOD]}).encode()))
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(path), "--format", "json"],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                 "TRACEVIEW_MAX_BYTES": value})
    assert "Traceback" not in result.stderr
    if not value:
        assert result.returncode == 0 and json.loads(result.stdout)["steps"]["count"] == 1, result.stderr
        return
    assert result.returncode == 2 and not result.stdout
    assert len(result.stderr.strip().splitlines()) == 1
    assert f"TRACEVIEW_MAX_BYTES is {value!r}" in result.stderr and "unset it" in result.stderr


def test_help_is_shown_whatever_the_max_bytes_variable_holds():
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", "--help"], capture_output=True, text=True,
                            cwd=REPO, timeout=120, env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                        "TRACEVIEW_MAX_BYTES": "lots"})
    assert result.returncode == 0 and "diagnose [OPTIONS] PATH" in result.stdout, result.stderr


def test_a_max_bytes_variable_is_checked_whatever_the_command_reads():
    # An XPlane file is not inflated, yet the mistyped limit is named all the same.
    xplane = next(SAMPLES.rglob("*.xplane.pb"), None)
    if xplane is None:
        pytest.skip("no sample XPlane")
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(xplane), "--format", "json"],
                            capture_output=True, text=True, cwd=REPO, timeout=120,
                            env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                 "TRACEVIEW_MAX_BYTES": "lots"})
    assert result.returncode == 2 and "TRACEVIEW_MAX_BYTES is 'lots'" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_named_as_the_trace_is_one_line_without_reading_it(tmp_path: Path):
    """A FIFO given as the trace (a reader would block on it): refused by what it is, not 'no
    traces found'."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    result = _diagnose(fifo)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "not a regular file or a directory" in result.stderr
