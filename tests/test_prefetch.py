"""The command line starts reading the traces it names before it imports the analyses
(readers/_prefetch.py): the reader gets exactly what it would have made itself (the scanned
fields, or the scanner's refusal), or nothing and reads the file itself; memory is bounded and
nothing is kept that is not taken."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from traceview.readers import _prefetch, kineto_fields

from test_kineto_scan import assert_same_fields

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _nothing_left_behind() -> Iterator[None]:
    yield
    _prefetch.forget()


SAMPLE = next(p for p in sorted((ROOT / "sample_traces").rglob("*.pt.trace.json.gz")) if "torch-eager" in str(p))


def _nothing_made(ahead: _prefetch.ReadAhead | None) -> bool:
    return ahead is not None and ahead.scanned is None and ahead.declined is None


def test_a_prefetched_trace_is_scanned_as_the_reader_scans_it() -> None:
    _prefetch.start(str(SAMPLE))
    ahead = _prefetch.take(SAMPLE)
    direct = kineto_fields.scan_fields(SAMPLE)
    assert ahead is not None and ahead.scanned is not None and direct.events_seen > 0
    assert_same_fields(ahead.scanned, direct)
    assert _prefetch.take(SAMPLE) is None  # taken once
    assert _prefetch._budget == [_prefetch.PREFETCH_BYTES]  # and its share of the budget given back


def test_a_plain_json_trace_is_scanned_from_the_disk(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_bytes(gzip.decompress(SAMPLE.read_bytes()))
    _prefetch.start(str(trace))
    ahead = _prefetch.take(trace)
    assert ahead is not None and ahead.scanned is not None
    assert ahead.scanned.events_seen == kineto_fields.scan_fields(SAMPLE).events_seen > 0


XPLANES = sorted((ROOT / "sample_traces").rglob("*.xplane.pb"))


def test_a_file_of_no_format_is_left_to_the_readers(tmp_path: Path) -> None:
    other = tmp_path / "t.bin"
    other.write_bytes(b"\x00\x01 not a trace")
    _prefetch.start(str(other))
    ahead = _prefetch.take(other)
    assert ahead is None or (_nothing_made(ahead) and ahead.space is None)


def _read_all_ahead(path: Path) -> _prefetch.ReadAhead:
    """Start reading ``path`` ahead and let the thread finish (every line decoded) before taking it."""
    _prefetch.start(str(path))
    thread, _ = next(iter(_prefetch._pending.values()))
    thread.join()
    ahead = _prefetch.take(path)
    assert ahead is not None
    return ahead


@pytest.mark.parametrize("xplane", XPLANES[:3], ids=lambda p: str(p.relative_to(ROOT / "sample_traces")))
def test_an_xplane_read_ahead_gives_the_timeline_its_reader_gives(xplane: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    from traceview.readers import xplane as reader

    direct = reader.read(xplane)
    ahead = _read_all_ahead(xplane)
    lines = [line for plane in ahead.space.planes for line in plane.lines if line.count]
    assert lines and all(line.ahead is not None for line in lines)  # the skeleton, every line decoded
    monkeypatch.setattr(_prefetch, "take", lambda path: ahead)
    prefetched = reader.read(xplane)
    assert all(line.ahead is None for line in lines)  # each handed over, once
    assert prefetched.events.equals(direct.events)
    assert prefetched.meta == direct.meta
    monkeypatch.undo()
    _prefetch.start(str(xplane))  # taken at once: the reader decodes what the thread had not
    assert reader.read(xplane).events.equals(direct.events)


def test_a_further_xplane_is_left_to_its_reader(tmp_path: Path) -> None:
    first, second = XPLANES[:2]
    _prefetch.start(str(first))
    _prefetch.start(str(second))  # (held while the first is analysed: its reader reads it then)
    assert _prefetch.take(second) is None
    assert _prefetch.take(first) is not None


def test_a_damaged_xplane_gets_its_readers_error(tmp_path: Path) -> None:
    from traceview.errors import FormatError
    from traceview.readers import xplane as reader

    damaged = tmp_path / "t.xplane.pb"
    raw = XPLANES[0].read_bytes()
    damaged.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FormatError) as unprefetched:
        reader.read(damaged)
    assert _read_all_ahead(damaged).space is None
    _prefetch.start(str(damaged))
    with pytest.raises(FormatError) as prefetched:
        reader.read(damaged)
    assert str(prefetched.value) == str(unprefetched.value)
    assert not _prefetch._pending


def test_a_document_the_scanner_declines_goes_to_the_other_decodings(tmp_path: Path) -> None:
    from traceview.readers import kineto

    content = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1e3, "dur": 2}]}'
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(gzip.compress(content))
    _prefetch.start(str(trace))
    ahead = _prefetch.take(trace)
    assert ahead is not None and ahead.scanned is None and ahead.declined  # (an exponent in a time)
    unprefetched = kineto.read(trace)
    _prefetch.start(str(trace))
    prefetched = kineto.read(trace)
    assert len(prefetched.events) == 1 and prefetched.events.equals(unprefetched.events)


def test_a_file_changed_since_is_not_taken(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(SAMPLE.read_bytes())
    _prefetch.start(str(trace))
    os.utime(trace, ns=(1, 1))
    assert _prefetch.take(trace) is None
    _prefetch.forget()
    assert not _prefetch._pending and _prefetch._budget == [_prefetch.PREFETCH_BYTES]


@pytest.mark.parametrize("damage", ["truncated", "trailing bytes", "not gzip"])
def test_anything_unusual_is_left_to_the_reader(tmp_path: Path, damage: str) -> None:
    raw = SAMPLE.read_bytes()
    trace = tmp_path / "t.json.gz"
    trace.write_bytes({"truncated": raw[: len(raw) // 2] + raw[-4:], "trailing bytes": raw + b"junk",
                       "not gzip": b"{" + raw}[damage])
    _prefetch.start(str(trace))
    ahead = _prefetch.take(trace)  # (None: not even started, e.g. a trailer that says "beyond the limit")
    assert ahead is None or _nothing_made(ahead)


def test_a_further_trace_is_read_ahead_only_within_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for trace in (first, second):
        trace.write_bytes(gzip.decompress(SAMPLE.read_bytes()))
    monkeypatch.setattr(_prefetch, "_budget", [second.stat().st_size - 1])
    _prefetch.start(str(first))  # the first: its fields are what its reader holds anyway
    _prefetch.start(str(second))  # held while the first is analysed: over the budget
    assert _prefetch.take(second) is None
    assert _prefetch.take(first) is not None


def test_without_the_scanner_or_a_thread_nothing_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_prefetch, "_built", lambda module: False)
    _prefetch.start(str(SAMPLE))
    _prefetch.start(str(XPLANES[0]))
    assert not _prefetch._pending
    monkeypatch.setattr(_prefetch, "_built", lambda module: True)

    def refuse(self: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_prefetch.threading.Thread, "start", refuse)
    _prefetch.start(str(SAMPLE))
    assert not _prefetch._pending and _prefetch._budget == [_prefetch.PREFETCH_BYTES]


def _diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "traceview", "diagnose", *args], capture_output=True, text=True,
                          cwd=ROOT)


@pytest.mark.parametrize("trace", [SAMPLE, XPLANES[0]], ids=["kineto", "xplane"])
def test_the_report_is_the_same_with_and_without(trace: Path) -> None:
    with_prefetch = _diagnose(str(trace), "--format", "json")
    without = subprocess.run(
        [sys.executable, "-c", "import sys, traceview.cli as c; c._start_reading = lambda arguments: None; c.main()",
         "diagnose", str(trace), "--format", "json"], capture_output=True, text=True, cwd=ROOT)
    assert with_prefetch.returncode == without.returncode == 0, with_prefetch.stderr + without.stderr
    assert with_prefetch.stdout == without.stdout


@pytest.mark.parametrize("limit_set", ["before the start", "after the start"])
def test_the_size_limit_holds_for_a_prefetched_trace(monkeypatch: pytest.MonkeyPatch, limit_set: str) -> None:
    from traceview.errors import InputError
    from traceview.readers import kineto

    if limit_set == "before the start":
        monkeypatch.setenv("TRACEVIEW_MAX_BYTES", "1000")
    _prefetch.start(str(SAMPLE))
    assert bool(_prefetch._pending) == (limit_set == "after the start")  # (over the limit: not even inflated)
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


@pytest.mark.parametrize("argv, expected", [
    (["diagnose", "{trace}", "--format", "json"], ["{trace}"]),
    (["diagnose", "--format", "json", "{trace}"], ["{trace}"]),
    (["diagnose", "--strict", "{trace}"], []),  # after an option: only the parser knows it is a flag
    (["diagnose", "-o", "{other}", "{trace}"], ["{trace}"]),  # -o's value is no trace
    (["diagnose", "--format=json", "{trace}"], ["{trace}"]),
    (["compare", "{trace}", "{other}"], ["{trace}", "{other}"]),
    (["diagnose", "--", "-o", "{trace}"], ["{trace}"]),
    (["--max-bytes", "9000", "diagnose", "{trace}"], []),  # a root option first: left to the parser
    (["collect", "{trace}"], []),
    (["diagnose", "no-such-file.json"], []),
])
def test_the_console_script_starts_only_what_the_parser_reads_too(argv: list[str], expected: list[str]) -> None:
    from traceview import cli, console

    other = str(SAMPLE.parent / "manifest.json")
    words = [w.format(trace=SAMPLE, other=other) for w in argv]
    surely = console.surely_trace_arguments(words)
    assert surely == [w.format(trace=SAMPLE, other=other) for w in expected]
    assert set(surely) <= set(cli._trace_arguments(words) or [])


_CONSOLE_PROBE = """
import gc, sys
from traceview.readers import _prefetch
seen = []
start = _prefetch.start
def watched(path):
    seen.append(("typer" in sys.modules, "pandas" in sys.modules, gc.isenabled()))
    start(path)
_prefetch.start = watched
from traceview.__main__ import main
sys.argv[1:] = ["diagnose", sys.argv[1], "--format", "json", "--steps", "not-a-window"]
try:
    main()
except SystemExit:
    pass
print("SEEN", seen, "COLLECTOR", gc.isenabled(), gc.get_freeze_count() > 0)
"""


def test_the_console_script_reads_before_loading_the_parser_and_resumes_the_collector() -> None:
    done = subprocess.run([sys.executable, "-c", _CONSOLE_PROBE, str(SAMPLE)], capture_output=True, text=True,
                          check=True)
    last = done.stdout.splitlines()[-1]
    # The first start comes before typer is loaded, with the collector paused; the command line's
    # own start of the same file follows (before pandas). After the imports the collector runs again.
    assert last.startswith("SEEN [(False, False, False), (True, False, False)]"), last
    assert last.endswith("COLLECTOR True True"), last


_BLAS_PROBE = """
import os, sys
from traceview.console import start
start(sys.argv[1:])
import numpy
print("BLAS", os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize(("argv", "user_setting", "expected"), [
    (["diagnose", "{trace}"], None, "1"),
    (["compare", "{trace}", "{trace}"], None, "1"),
    (["normalize", "{trace}", "-o", "out"], None, "1"),
    (["collect", "mlp2"], None, None),  # runs workloads: OpenBLAS keeps its threads
    (["diagnose", "{trace}"], "3", "3"),  # the user's choice stands
])
def test_the_analysing_commands_start_no_blas_threads(argv: list[str], user_setting: str | None,
                                                       expected: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                             "OMP_NUM_THREADS")}
    if user_setting is not None:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    words = [w.format(trace=SAMPLE) for w in argv]
    done = subprocess.run([sys.executable, "-c", _BLAS_PROBE, *words], capture_output=True, text=True, check=True,
                          env=env)
    setting, threads = done.stdout.split()[1:]
    assert setting == str(expected)
    if expected == "1":
        # numpy's import adds no OpenBLAS worker thread: the main thread and at most the read-ahead's
        # (one thread for the trace named twice); with a worker per further core there would be more.
        assert int(threads) <= 2, threads


_IMPORTER_PROBE = """
import sys, threading
importers = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in ("numpy", "traceview.readers.kineto_fields"):
            importers.setdefault(name, (threading.current_thread().name, "typer" in sys.modules))
        return None
sys.meta_path.insert(0, Watch())
import os, time
from traceview.readers import _prefetch
inflate = _prefetch._inflate
def slow_inflate(*args):  # (a large trace's inflating: it lasts until the main thread is past its imports)
    waited = time.monotonic()
    while "traceview.readers.kineto_fields" not in sys.modules and time.monotonic() - waited < 10:
        time.sleep(0.01)
    return inflate(*args)
_prefetch._inflate = slow_inflate
ending = os._exit  # (the console script ends with it once the report is out)
def report(status):
    print("IMPORTERS", importers.get("numpy"), importers.get("traceview.readers.kineto_fields"), flush=True)
    ending(status)
os._exit = report
from traceview.__main__ import main
sys.argv[1:] = ["diagnose", sys.argv[1], "--format", "json"]
main()
"""


def test_the_main_thread_imports_the_scanner_while_the_reading_thread_inflates() -> None:
    done = subprocess.run([sys.executable, "-c", _IMPORTER_PROBE, str(SAMPLE)], capture_output=True, text=True)
    last = [line for line in done.stdout.splitlines() if line.startswith("IMPORTERS")][-1]
    # Both by the main thread, before the command-line parser is loaded.
    assert last == "IMPORTERS ('MainThread', False) ('MainThread', False)", last
