"""A folder whose traces are partly unreadable is reported without them: every readable rank is
in the report, each unreadable one is named with its reason (in the report and on stderr), and
the exit status says the report is partial (3; ``--strict`` fails with 2); ``normalize`` writes
the readable ones and names the others in its manifest, and ``query`` warns on such a set
(docs/bad_input.md)."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest

import traceview
from tests.test_cli import run_cli
from tests.test_ranks import sample_torch_eager, write_rank
from traceview.errors import QualityError, TraceviewWarning

# The broken files of a many-rank folder as users meet them: a copy cut short, a file the job
# never wrote into, a gzip of something else, bytes of nothing.
BROKEN = ("rank-2.pt.trace.json.gz", "rank-3.pt.trace.json.gz", "rank-4.pt.trace.json.gz", "rank-5.pt.trace.json.gz")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ranks")
    src = sample_torch_eager()
    for rank in (0, 1):
        write_rank(src, out / f"rank-{rank}.pt.trace.json.gz", rank, 6)
    whole = (out / "rank-1.pt.trace.json.gz").read_bytes()
    (out / BROKEN[0]).write_bytes(whole[: len(whole) // 3])  # `head -c` of a rank's .gz
    (out / BROKEN[1]).write_bytes(b"")
    (out / BROKEN[2]).write_bytes(gzip.compress(b'{"hello": 1}'))
    (out / BROKEN[3]).write_bytes(bytes(range(256)) * 3)
    (out / "config.json").write_text('{"lr": 0.1}')  # not named as a trace: no trace, no complaint
    return out


def test_every_readable_rank_is_reported_and_every_other_named(folder: Path) -> None:
    done = run_cli("diagnose", str(folder), "-f", "json", "--jobs", "2")
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert [Path(t["trace"]["source"]).name for t in report["traces"]] == ["rank-0.pt.trace.json.gz",
                                                                           "rank-1.pt.trace.json.gz"]
    assert [Path(item["source"]).name for item in report["left_out"]] == list(BROKEN)
    reasons = [item["reason"] for item in report["left_out"]]
    assert "truncated" in reasons[0] and "empty" in reasons[1] and "not a trace" in reasons[2] + reasons[3]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == len(BROKEN) + 1
    assert all(line.startswith("traceview: warning: ") and "(left out of the report)" in line for line in lines[:-1])
    assert lines[-1].startswith("traceview: partial report: 4 of 6 traces could not be read")
    assert "config.json" not in done.stderr
    serial = run_cli("diagnose", str(folder), "-f", "json", "--jobs", "1")
    assert serial.stdout == done.stdout and serial.returncode == 3


def test_every_format_names_them_first(folder: Path) -> None:
    for fmt, mark in (("terminal", "Left out: 4 of 6 traces could not be read"),
                      ("md", "**Left out: 4 of 6 traces could not be read"),
                      ("html", '<h2 class="left-out">Left out: 4 of 6 traces could not be read')):
        text = run_cli("diagnose", str(folder), "-f", fmt, "--width", "100").stdout
        assert mark in text and text.index(mark) < text.index("rank-0.pt.trace.json.gz", text.index(mark) + 1)
        assert all(name in text for name in BROKEN)


def test_strict_fails_a_partial_report(folder: Path) -> None:
    done = run_cli("diagnose", str(folder), "--strict", "-f", "json")
    assert done.returncode == 2 and json.loads(done.stdout)["left_out"]
    assert "traces that could not be read (left out): " in done.stderr.strip().splitlines()[-1]


def test_the_library_returns_the_folder_with_what_it_left_out(folder: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = traceview.diagnose(folder)
    assert [Path(item.source).name for item in result.left_out] == list(BROKEN)
    assert len(result.diagnoses) == 2 and "4 left out" in repr(result)
    assert sum(issubclass(w.category, TraceviewWarning) for w in caught) == len(BROKEN)
    with pytest.raises(QualityError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traceview.diagnose(folder, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        redacted = traceview.diagnose(folder, redact=True)
    assert all(item.source.startswith("<path>/") and str(folder) not in item.reason for item in redacted.left_out)


def test_nothing_readable_is_one_line(tmp_path: Path) -> None:
    for name in BROKEN[1:3]:
        (tmp_path / name).write_bytes(b"")
    done = run_cli("diagnose", str(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    assert "no trace of" in done.stderr and "could be read" in done.stderr and "(and 1 more" in done.stderr
    alone = run_cli("diagnose", str(tmp_path / BROKEN[1]))  # one file: refused as before
    assert alone.returncode == 2 and "file is empty" in alone.stderr


def test_normalize_writes_the_readable_and_query_warns(folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "parquet"
    done = run_cli("normalize", str(folder), "-o", str(out))
    assert done.returncode == 3, done.stderr
    assert sorted(p.name for p in out.glob("*.parquet")) == [
        "rank-0.pt.trace.events.parquet", "rank-0.pt.trace.steps.parquet",
        "rank-1.pt.trace.events.parquet", "rank-1.pt.trace.steps.parquet"]
    manifest = json.loads((out / "_traceview-normalize.json").read_text())
    assert [Path(item["source"]).name for item in manifest["written"]] == ["rank-0.pt.trace.json.gz",
                                                                           "rank-1.pt.trace.json.gz"]
    assert [Path(item["source"]).name for item in manifest["left_out"]] == list(BROKEN)
    assert "partial set: 4 of 6 traces" in done.stderr.strip().splitlines()[-1]
    pytest.importorskip("duckdb")
    query = run_cli("query", str(out), "SELECT count(DISTINCT rank) AS ranks FROM steps", "-f", "csv")
    assert query.returncode == 0 and query.stdout.splitlines() == ["ranks", "2"]
    assert "a partial set: 4 traces could not be read" in query.stderr
