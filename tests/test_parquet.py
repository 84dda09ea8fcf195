"""``traceview normalize`` (Parquet) and ``traceview query`` (DuckDB) over several ranks."""

from __future__ import annotations

import sys

import numpy as np
import orjson
import pytest

import traceview
from tests.conftest import SAMPLES, shared_trace
from tests.test_cli import run_cli
from tests.test_ranks import STRETCH_STEP, sample_torch_eager, write_rank
from traceview.loader import diagnose
from traceview.errors import UsageError
from traceview.parquet import trace_stems
from traceview.schema import COLUMNS

pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory):
    """Two ranks of a small real CPU trace (rank 1 with a stretched step), normalized."""
    runs = tmp_path_factory.mktemp("runs")
    src = sample_torch_eager()
    for rank in range(2):
        write_rank(src, runs / f"rank{rank}.pt.trace.json.gz", rank, 2,
                   stretch_step=STRETCH_STEP if rank else None, stretch_us=3000.0)
    out = tmp_path_factory.mktemp("parquet")
    result = run_cli("normalize", str(runs), "-o", str(out), "--jobs", "2")
    assert result.returncode == 0, result.stderr
    return runs, out


def query(folder, sql: str) -> list[dict]:
    result = run_cli("query", str(folder), sql, "--format", "json")
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def test_round_trip_rows_and_columns(two_ranks):
    runs, out = two_ranks
    for rank in range(2):
        diag = diagnose(runs / f"rank{rank}.pt.trace.json.gz")
        events = pq.read_table(out / f"rank{rank}.pt.trace.events.parquet")
        steps = pq.read_table(out / f"rank{rank}.pt.trace.steps.parquet")
        assert events.num_rows == len(diag.timeline.events)
        assert steps.num_rows == len(diag.steps.table)
        assert list(events.column_names) == [*diag.timeline.events.columns, "rank", "source"]
        assert set(COLUMNS) <= set(events.column_names)
        for column in ("kind", "name", "track", "launcher", "copy_kind", "source"):
            assert str(events.schema.field(column).type).startswith("dictionary<values=string"), column
        assert events.column("rank").to_pylist() == [rank] * events.num_rows
        # Read back with pandas: the same event table (categoricals restored).
        back = events.to_pandas().drop(columns=["rank", "source"])
        for column in diag.timeline.events.columns:
            assert np.array_equal(back[column].astype(str).to_numpy(),
                                  diag.timeline.events[column].astype(str).to_numpy()), column
        frame = steps.to_pandas()
        buckets = [c for c in diag.attribution.per_step.columns if c != "total"]
        assert frame[[f"{b}_ns" for b in buckets]].sum(axis=1).tolist() == frame["duration_ns"].tolist()
        assert frame["rank_from"].astype(str).unique().tolist() == ["distributedInfo"]
        assert frame["world_size"].tolist() == [2] * len(frame)
        assert orjson.loads(steps.schema.metadata[b"traceview"])["source"] == str(runs / f"rank{rank}.pt.trace.json.gz")


def test_duckdb_per_rank_numbers_match_each_trace(two_ranks):
    runs, out = two_ranks
    rows = query(out, "SELECT rank, count(*) AS events, sum(dur) FILTER (WHERE kind = 'host_op') AS host_op_ns "
                      "FROM events GROUP BY rank ORDER BY rank")
    expected = []
    for rank in range(2):
        ev = diagnose(runs / f"rank{rank}.pt.trace.json.gz").timeline.events
        host = ev["kind"].astype(str).to_numpy() == "host_op"
        expected.append({"rank": rank, "events": len(ev), "host_op_ns": int(ev["dur"].to_numpy()[host].sum())})
    assert rows == expected
    slowest = query(out, "SELECT number, arg_max(rank, duration_ns) AS slowest_rank, "
                         "max(duration_ns) - min(duration_ns) AS spread FROM steps GROUP BY number ORDER BY number")
    stretched = next(r for r in slowest if r["number"] == STRETCH_STEP)
    assert stretched["slowest_rank"] == 1 and abs(stretched["spread"] - 3_000_000) <= 2


def test_duckdb_kernel_time_per_rank_on_a_real_gpu_trace(tmp_path):
    real = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    runs = tmp_path / "runs"
    runs.mkdir()
    paths = [write_rank(real, runs / f"rank{r}.json.gz", r, 2, backend="nccl") for r in range(2)]
    out = tmp_path / "pq"
    assert run_cli("normalize", *map(str, paths), "-o", str(out), "--jobs", "2").returncode == 0
    ev = diagnose(paths[0]).timeline.events
    kernel_ns = int(ev["dur"].to_numpy()[ev["kind"].astype(str).to_numpy() == "kernel"].sum())
    rows = query(out, "SELECT rank, sum(dur) AS kernel_ns FROM events WHERE kind = 'kernel' GROUP BY rank ORDER BY rank")
    assert rows == [{"rank": 0, "kernel_ns": kernel_ns}, {"rank": 1, "kernel_ns": kernel_ns}]
    steps = query(out, "SELECT rank, sum(kernel_ns) AS k, sum(total_ns) AS t, sum(duration_ns) AS d FROM steps "
                       "GROUP BY rank ORDER BY rank")
    assert all(r["t"] == r["d"] and 0 < r["k"] <= r["d"] for r in steps)


def test_write_parquet_is_normalize(tmp_path, two_ranks):
    """traceview.write_parquet writes the tables `traceview normalize` writes, and says what it wrote."""
    runs, out = two_ranks
    traces = sorted(runs.glob("*.json.gz"))
    written = traceview.write_parquet([runs, traces[0]], tmp_path / "lib", jobs=1)  # a trace named twice: once
    assert written.folder == tmp_path / "lib" and written.sources == tuple(map(str, traces))
    names = sorted(p.name for p in out.glob("*.parquet"))
    assert sorted(p.name for p in written.folder.glob("*.parquet")) == names
    for name in names:
        assert pq.read_table(written.folder / name).equals(pq.read_table(out / name)), name
    assert written.events == sum(pq.read_metadata(out / n).num_rows for n in names if n.endswith(".events.parquet"))
    assert written.steps == sum(pq.read_metadata(out / n).num_rows for n in names if n.endswith(".steps.parquet"))
    with pytest.raises(UsageError, match="--jobs must be at least 1"):
        traceview.write_parquet(runs, tmp_path / "none", jobs=0)


def test_query_output_formats_and_escaping(two_ranks):
    _, out = two_ranks
    table = run_cli("query", str(out), "SELECT '[bold]x[/bold]' AS s, chr(27) || '[31mred' AS t, NULL AS n")
    assert table.returncode == 0, table.stderr
    assert "[bold]x[/bold]" in table.stdout and "\x1b" not in table.stdout and "NULL" in table.stdout
    csv = run_cli("query", str(out), "SELECT rank, count(*) AS n FROM steps GROUP BY rank ORDER BY rank", "-f", "csv")
    assert csv.stdout.splitlines() == ["rank,n", "0,5", "1,5"]


def test_query_table_aligns_columns_and_cuts_only_long_cells(two_ranks):
    _, out = two_ranks
    # A wide-character column first (each character two terminal columns), cut past 60 columns;
    # a line break and a tab in a value written as escapes, never breaking the row.
    sql = ("SELECT repeat('漢', 40) AS wide, rank, count(*) AS n, repeat('é', 70) AS long_text, "
           "'a' || chr(10) || 'b' || chr(9) || 'c' AS odd FROM steps GROUP BY rank ORDER BY rank")
    table = run_cli("query", str(out), sql)
    assert table.returncode == 0, table.stderr
    header, rule, *rows, count = table.stdout.splitlines()
    assert header.split() == ["wide", "rank", "n", "long_text", "odd"] and count == "(2 rows)"
    assert set(rule.replace(" ", "")) == {"─"}
    wide_cut = "漢" * 29 + "…"  # 59 columns: a 30th wide character would make 61
    assert all(row.startswith(wide_cut + "  ") for row in rows)
    # Every column starts, in terminal columns, where its header does: numbers end at its right edge.
    from rich.cells import cell_len

    def column_of(line: str, text: str) -> int:
        return cell_len(line[: line.index(text)])

    rank_right = header.index("rank") + len("rank")
    assert [column_of(row, f" {r}  ") + 1 + len(str(r)) for r, row in enumerate(rows)] == [rank_right] * 2
    assert all(column_of(row, "é" * 59 + "…") == header.index("long_text") for row in rows)
    assert all(row.endswith("a\\nb\\tc") for row in rows)
    whole = run_cli("query", str(out), sql, "-f", "csv").stdout
    assert "é" * 70 in whole and "漢" * 40 in whole


def test_query_runs_every_statement_and_shows_every_query(two_ranks):
    _, out = two_ranks
    both = run_cli("query", str(out), "SELECT 1 AS a; SELECT 'x' AS b")
    assert both.returncode == 0
    assert both.stdout.split() == ["a", "─", "1", "(1", "row)", "b", "─", "x", "(1", "row)"]
    # Statements that only answer with a status (SET, CREATE … AS) show nothing beside a query;
    # rows an INSERT … RETURNING gives are asked for.
    setup = run_cli("query", str(out), "SET threads = 1; CREATE TABLE t AS SELECT 7 AS x; SELECT x FROM t",
                    "-f", "json")
    assert setup.returncode == 0 and orjson.loads(setup.stdout) == [{"x": 7}]
    returning = run_cli("query", str(out), "CREATE TABLE t (x INT); INSERT INTO t VALUES (1), (2) RETURNING x; "
                                           "SET threads = 1", "-f", "json")
    assert returning.returncode == 0 and orjson.loads(returning.stdout) == [{"x": 1}, {"x": 2}]
    two = run_cli("query", str(out), "SELECT 1; SELECT 2", "-f", "csv")
    assert two.returncode == 2 and "take one result" in two.stderr and not two.stdout


def test_the_library_query_is_the_commands_text(two_ranks):
    _, out = two_ranks
    sql = "SELECT rank, count(*) AS n, min(name) AS first FROM events GROUP BY rank ORDER BY rank"
    for format in ("table", "csv", "json"):
        printed = run_cli("query", str(out), sql, "--format", format)
        assert printed.returncode == 0, printed.stderr
        assert traceview.query(out, sql, format=format) == printed.stdout
    with pytest.raises(UsageError) as caught:
        traceview.query(str(out), "SELECT 1; SELECT 2", format="csv")
    assert run_cli("query", str(out), "SELECT 1; SELECT 2", "-f", "csv").stderr.strip() == f"traceview: {caught.value}"


@pytest.mark.parametrize("args, message", [
    (["SELECT nope FROM events"], "query failed"),
    (["SELECT 1", "--format", "xml"], "--format"),
    ([""], "no SQL statement"),
    ([" ;"], "no SQL statement"),
    (["/* only a comment */"], "no SQL statement"),
])
def test_query_errors_are_one_line(two_ranks, args, message):
    _, out = two_ranks
    result = run_cli("query", str(out), *args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_query_json_keeps_integers_wider_than_64_bits_exact(two_ranks):
    _, out = two_ranks
    result = run_cli("query", str(out), "SELECT 170141183460469231731687303715884105727::HUGEINT AS huge, "
                                        "sum(duration_ns)::HUGEINT AS total, 7 AS small FROM steps", "-f", "json")
    assert result.returncode == 0, result.stderr
    row = orjson.loads(result.stdout)[0]
    assert row["huge"] == "170141183460469231731687303715884105727"  # as text: no JSON reader rounds it
    assert isinstance(row["total"], int) and row["total"] > 0 and row["small"] == 7


def test_normalize_never_overwrites_an_input_named_like_its_output(tmp_path):
    # A trace's format is read from its content, so a trace may bear the name of an output file.
    trace = next(iter(sorted((SAMPLES / "mlp2" / "torch-eager").glob("*.json.gz"))), None)
    if trace is None:
        pytest.skip("no torch sample")
    source = tmp_path / "x.json.gz"
    source.write_bytes(trace.read_bytes())
    named = tmp_path / "x.events.parquet"
    named.write_bytes(trace.read_bytes())
    result = run_cli("normalize", str(source), str(named), "-o", str(tmp_path), "-j", "1")
    assert result.returncode == 2 and "would overwrite the input trace" in result.stderr, result.stderr
    assert named.read_bytes() == trace.read_bytes()


def test_query_json_of_nested_values(two_ranks):
    _, out = two_ranks
    row = query(out, "SELECT MAP([1], [2]) AS m, [(2::HUGEINT) << 70] AS l, {'s': (2::HUGEINT) << 70} AS s")[0]
    assert row == {"m": {"1": 2}, "l": [str(2 << 70)], "s": {"s": str(2 << 70)}}


def test_query_reads_each_file_once_whatever_its_name(tmp_path, two_ranks):
    # DuckDB reads every listed path as a pattern: "rank*" would also match "rank0", "rank1".
    import shutil

    _, out = two_ranks
    folder = tmp_path / "out[1]"
    shutil.copytree(out, folder)
    for suffix in (".events.parquet", ".steps.parquet"):
        shutil.copy(next(folder.glob(f"rank0*{suffix}")), folder / f"rank*{suffix}")
    assert query(folder, "SELECT count(*) AS n FROM steps")[0]["n"] == 15
    assert query(out, "SELECT count(*) AS n FROM steps")[0]["n"] == 10


def test_query_over_a_broken_or_odd_parquet_file_is_one_line(tmp_path, two_ranks):
    import os
    import shutil

    _, out = two_ranks
    folder = tmp_path / "out"
    shutil.copytree(out, folder)
    odd = folder / "zz.events.parquet"
    os.mkfifo(odd)  # not read at all (it would block): only regular files are
    assert query(folder, "SELECT count(*) AS n FROM steps")[0]["n"] == 10
    odd.unlink()
    odd.write_bytes(b"PAR1 not parquet PAR1")
    result = run_cli("query", str(folder), "SELECT 1")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "zz.events.parquet" in result.stderr and "Traceback" not in result.stderr


def test_query_to_a_full_or_closed_standard_output_is_one_line(two_ranks):
    import os
    import subprocess

    _, out = two_ranks
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    env = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "traceview", "query", str(out), "SELECT 1"], stdout=full,
                                stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    closed = subprocess.run([sys.executable, "-m", "traceview", "query", str(out), "SELECT 1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
                            preexec_fn=lambda: os.close(1))
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr, closed.stderr


def test_query_on_a_folder_without_parquet(tmp_path):
    result = run_cli("query", str(tmp_path), "SELECT 1")
    assert result.returncode == 2 and "traceview normalize" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command, module, extra", [
    (["normalize", "TRACE", "-o", "OUT"], "pyarrow", "traceview[parquet]"),
    (["query", "OUT", "SELECT 1"], "duckdb", "traceview[query]"),
])
def test_missing_extra_is_one_line(tmp_path, command, module, extra):
    """With the library unimportable (a stub package that raises ImportError shadows it)."""
    import subprocess

    from tests.conftest import REPO

    stub = tmp_path / "stub" / module
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('blocked for the test')\n")
    (tmp_path / "OUT").mkdir()
    args = [str(sample_torch_eager()) if a == "TRACE" else str(tmp_path / "OUT") if a == "OUT" else a for a in command]
    result = subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=REPO,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "stub")},
                            timeout=120)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and extra in result.stderr


def test_stems_are_unique_per_trace():
    xplanes = sorted((SAMPLES / "mlp2").rglob("*.xplane.pb"))
    if len(xplanes) < 2:
        pytest.skip("sample XPlane traces are missing")
    stems = trace_stems(xplanes)
    assert len(set(stems.values())) == len(xplanes)
    assert all(s.endswith("vm.xplane") and "/" not in s for s in stems.values())


def test_normalize_refuses_a_file_as_output(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x")
    result = run_cli("normalize", str(sample_torch_eager()), "-o", str(target))
    assert result.returncode == 2 and "is a file" in result.stderr
