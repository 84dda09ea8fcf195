"""The command line starts inflating and scanning a gzipped trace before it imports the
analyses (readers/_prefetch.py): the reader gets exactly what it would have read itself (the
scanned fields, or the file's content), or nothing and reads the file itself."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from traceview.readers import _prefetch, kineto_fields

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = next(p for p in sorted((ROOT / "sample_traces").rglob("*.pt.trace.json.gz")) if "torch-eager" in str(p))


def test_a_prefetched_trace_is_scanned_as_the_reader_scans_it() -> None:
    _prefetch.start(str(SAMPLE))
    taken = _prefetch.take_scanned(SAMPLE)
    direct = kineto_fields.scan_fields(SAMPLE)
    assert taken is not None and taken.events_seen == direct.events_seen > 0 and taken.top == direct.top
    for field in ("ph", "cat", "name", "pid", "tid"):
        assert getattr(taken.fields, field).values == getattr(direct.fields, field).values
        assert np.array_equal(getattr(taken.fields, field).all_codes(), getattr(direct.fields, field).all_codes())
    for field in ("ts", "dur", "correlation", "nbytes", "elements"):
        assert np.array_equal(np.concatenate(getattr(taken.fields, field)), np.concatenate(getattr(direct.fields, field)))
    assert _prefetch.take_scanned(SAMPLE) is None and _prefetch.take(SAMPLE) is None  # taken once


def test_a_plain_json_trace_is_scanned_from_the_disk(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(gzip.decompress(SAMPLE.read_bytes()))
    _prefetch.start(str(trace))
    taken = _prefetch.take_scanned(trace)
    assert taken is not None and taken.events_seen == kineto_fields.scan_fields(SAMPLE).events_seen > 0
    assert _prefetch.take(trace) is None


def test_another_format_is_left_to_its_reader() -> None:
    xplane = next(iter(sorted((ROOT / "sample_traces").rglob("*.xplane.pb"))))
    _prefetch.start(str(xplane))
    assert _prefetch.take_scanned(xplane) is None and _prefetch.take(xplane) is None


def test_a_document_the_scanner_declines_leaves_its_text(tmp_path: Path) -> None:
    content = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1e3, "dur": 2}]}'
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(gzip.compress(content))
    _prefetch.start(str(trace))
    assert _prefetch.take_scanned(trace) is None  # (an exponent in a time: the scanner is not sure of it)
    taken = _prefetch.take(trace)
    assert taken is not None and taken.read() == content


def test_a_file_changed_since_is_not_taken(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(SAMPLE.read_bytes())
    _prefetch.start(str(trace))
    os.utime(trace, ns=(1, 1))
    assert _prefetch.take(trace) is None
    _prefetch._pending.clear()


@pytest.mark.parametrize("damage", ["truncated", "trailing bytes", "not gzip"])
def test_anything_unusual_is_left_to_the_reader(tmp_path: Path, damage: str) -> None:
    raw = SAMPLE.read_bytes()
    trace = tmp_path / "t.json.gz"
    trace.write_bytes({"truncated": raw[: len(raw) // 2] + raw[-4:], "trailing bytes": raw + b"junk",
                       "not gzip": b"{" + raw}[damage])
    _prefetch.start(str(trace))
    assert _prefetch.take(trace) is None


def _diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "traceview", "diagnose", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_the_report_is_the_same_with_and_without(tmp_path: Path) -> None:
    with_prefetch = _diagnose(str(SAMPLE), "--format", "json")
    without = subprocess.run(
        [sys.executable, "-c", "import sys, traceview.cli as c; c._start_reading = lambda arguments: None; c.main()",
         "diagnose", str(SAMPLE), "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    assert with_prefetch.returncode == without.returncode == 0, with_prefetch.stderr + without.stderr
    assert with_prefetch.stdout == without.stdout


@pytest.mark.parametrize("limit_set", ["before the start", "after the start"])
def test_the_size_limit_holds_for_a_prefetched_trace(monkeypatch: pytest.MonkeyPatch, limit_set: str) -> None:
    from traceview.errors import InputError
    from traceview.readers import kineto

    if limit_set == "before the start":
        monkeypatch.setenv("TRACEVIEW_MAX_BYTES", "1000")
    _prefetch.start(str(SAMPLE))
    assert _prefetch._pending
    monkeypatch.setenv("TRACEVIEW_MAX_BYTES", "1000")  # (--max-bytes is read after the thread started)
    with pytest.raises(InputError, match="decompresses to more than 1,000 bytes"):
        kineto.read(SAMPLE)
    assert not _prefetch._pending  # the reader took what the thread made, and still refused it


def test_the_command_line_starts_it_for_the_traces_a_command_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from traceview import cli

    started: list[str] = []
    monkeypatch.setattr(_prefetch, "start", started.append)
    other = str(SAMPLE.parent / "manifest.json")  # a file, but the value of -o: not read ahead
    assert os.path.isfile(other)
    for argv in (["--max-bytes", "9000", "diagnose", "-o", other, str(SAMPLE), "--format", "json"],
                 ["collect", str(SAMPLE)]):
        cli._start_reading(cli._trace_arguments(argv) or [])
    assert started == [str(SAMPLE)]
