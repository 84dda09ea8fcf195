"""Every hostile input of tests/hostile_corpus.py through ``traceview diagnose``: the expected exit
code; on refusal one line on stderr naming the problem; never an internal error or a traceback; on
success a report whose invariants hold (tests/report_invariants.py), byte-identical on a rerun,
and, for hostile trace text, terminal / markdown / HTML output that the text does not shape.

The CLI runs in this process (``traceview.cli.main``) so the corpus stays fast; the gzip bomb runs
in a child process whose peak RSS is measured.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile_corpus import CASES, Case, by_name
from tests.report_invariants import json_violations, text_violations

RSS_LIMIT_BYTES = 500 * 2**20


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``traceview <argv>`` in this process: (exit code, stdout, stderr with any Python warning)."""
    from traceview.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            main(argv)
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    extra = "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    return code, stdout.getvalue(), stderr.getvalue() + extra


def _params() -> list:
    out = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        out.append(pytest.param(case.name, marks=marks, id=case.name))
    return out


def test_the_corpus_is_large_and_named_uniquely():
    assert len(by_name()) >= 60


@pytest.mark.parametrize("name", _params())
def test_hostile_input(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    case = by_name()[name]
    if case.name == "gzip-bomb":
        pytest.skip("run in a child process by test_a_gzip_bomb_is_refused_in_bounded_memory")
    if case.skip_as_root and os.geteuid() == 0:
        pytest.skip("root reads a mode-000 file")
    monkeypatch.delenv("TRACEVIEW_MAX_BYTES", raising=False)  # --max-bytes sets it for the process
    path = case.build(tmp_path)
    argv = [*case.options, "diagnose", str(path), "--format", "json"]
    code, out, err = run_cli(argv)
    _check_outcome(case, code, out, err)
    if code not in (0, 3):  # (3: the report of the readable traces)
        return
    document = json.loads(out)
    assert json_violations(document) == []
    again = run_cli(argv)
    assert again == (code, out, err), "a rerun gave different output"
    texts = {"json": out}
    if case.hostile_text:
        texts |= {fmt: run_cli([*case.options, "diagnose", str(path), "--format", fmt, "--width", "100"])[1]
                  for fmt in ("terminal", "md", "html")}
    assert text_violations(texts, case.hostile_text) == []


def _check_outcome(case: Case, code: int, out: str, err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == case.expect.exit_code, f"exit {code}, stderr: {err!r}"
    lines = err.splitlines()
    if code == 2:
        assert out == ""
        assert len(lines) == 1, err
        assert case.expect.message in lines[0], err
        assert "\x1b" not in err and "\x07" not in err, err
    elif code == 3:
        assert out and lines[-1].startswith("traceview: partial report: ") and case.expect.message in lines[-1], err
        assert all(line.startswith("traceview: warning:") for line in lines[:-1]), err
        assert any(case.expect.message in line and line.endswith("(left out of the report)") for line in lines), err
        assert case.warns is None or any(case.warns in line for line in lines), err
    elif case.warns:
        assert lines and all(line.startswith("traceview: warning:") for line in lines), err
        assert any(case.warns in line for line in lines), err
    else:
        assert err == "", err


def test_a_gzip_bomb_is_refused_in_bounded_memory(tmp_path: Path):
    case = by_name()["gzip-bomb"]
    path = case.build(tmp_path)
    # The run is the child of a small wrapper interpreter, which reports that child's peak RSS. Measured
    # from here, a child started by this (large) test process would carry this process's memory:
    # Linux keeps the high-water mark of the memory a process had before exec.
    wrapper = ("import json, resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
               "print(json.dumps([done.returncode, done.stdout, done.stderr, peak]))\n")
    command = [sys.executable, "-c", wrapper, sys.executable, "-m", "traceview", *case.options, "diagnose", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    returncode, stdout, stderr, peak = json.loads(result.stdout)
    _check_outcome(case, returncode, stdout, stderr)
    assert peak < RSS_LIMIT_BYTES, f"peak RSS {peak / 2**20:.0f} MiB"
