"""Ranks on Dask and Spark for real, in local mode: examples/ranks_dask.py on a dask.bag, and the
Spark section of docs/multi_rank.md run as written on Spark local[2] — its Python blocks, then
its Spark SQL over the Parquet the executors wrote. Each must give the per-rank numbers of
``traceview diagnose -f json`` and find the rank the fixture slowed.

The Spark code comes from the document itself, so the docs cannot drift from what runs: the
``python`` blocks of its Dask-and-Spark section that use Spark run in order in one namespace, with
the fixture's folders in place of the placeholders ``/shared/runs`` and ``/shared/parquet``; the
``sql`` blocks of that section are Spark SQL, and those before it DuckDB's, the query a Spark
query stands for being the DuckDB statement whose result has the same columns.

Skipped with the reason when dask, pyspark or a Java runtime (Spark 4 needs Java 17+) is missing.
One Spark session serves the module; its JVM start is most of the module's time.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from tests.conftest import REPO
from tests.test_cli import run_cli
from tests.test_ranks import STRETCH_STEP, write_run
from traceview.renderers import json_report

DOC = REPO / "docs" / "multi_rank.md"
SPARK_SECTION = "## Thousands of traces"
RUNS_PLACEHOLDER = '"/shared/runs"'
PARQUET_PLACEHOLDER = '"/shared/parquet"'
SLOW_RANK = 2
# pyspark warns on pandas 3 at its first use of pandas; the RDD and SQL paths here never hand it a frame.
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
# The sample trace runs on the CPU and has no kernels: its host ops stand in for them, in both
# dialects alike, so that the kernel queries add up something.
CPU_STAND_IN = ("'kernel'", "'host_op'")
# Log only errors from the JVM (Spark's default profile logs every warning at start-up).
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c: %m%n
"""


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """Every fenced block of a markdown text: (offset of its fence, language, code)."""
    return [(m.start(), m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def spark_python_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.index(SPARK_SECTION)
    return [code for at, lang, code in fenced_blocks(text) if at > section and lang == "python" and "spark" in code]


def sql_blocks(spark: bool) -> list[str]:
    """The Spark SQL blocks (in the Dask-and-Spark section) or the DuckDB ones (before it)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.index(SPARK_SECTION)
    return [code for at, lang, code in fenced_blocks(text) if lang == "sql" and (at > section) == spark]


def duckdb_statements() -> list[str]:
    """The DuckDB queries one statement each (a block may hold several, ``;`` between them)."""
    return [s.strip() for block in sql_blocks(spark=False) for s in block.split(";") if s.strip()]


def stand_in(sql: str) -> str:
    return sql.replace(*CPU_STAND_IN)


def test_the_document_has_the_blocks_this_module_runs() -> None:
    """Runs without Spark: a renamed section or placeholder fails here, not as a skip."""
    python = spark_python_blocks()
    assert len(python) == 2 and "SparkSession" in python[0] and "spark.read.parquet" in python[1]
    assert RUNS_PLACEHOLDER in python[0] and PARQUET_PLACEHOLDER in python[1]
    assert len(sql_blocks(spark=True)) == 2
    assert any("arg_max" in s for s in duckdb_statements())


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three ranks of the small CPU sample trace; rank SLOW_RANK has step STRETCH_STEP stretched."""
    return write_run(tmp_path_factory.mktemp("ranks"), 3, slow=SLOW_RANK, name="rank{}.pt.trace.json.gz")


@pytest.fixture(scope="module")
def command_runs(ranks: Path) -> list[dict[str, Any]]:
    """The ``multi_rank`` list of ``traceview diagnose RANKS -f json``: the numbers to match."""
    result = run_cli("diagnose", str(ranks), "-f", "json")
    assert result.returncode == 0, result.stderr
    runs = orjson.loads(result.stdout)["multi_rank"]
    assert len(runs) == 1 and len(runs[0]["ranks"]) == 3
    return runs


def test_the_dask_example_runs_on_dask_bag(ranks: Path, command_runs: list[dict[str, Any]], tmp_path: Path) -> None:
    pytest.importorskip("dask.bag", reason="dask[bag] is not installed (the test extra has it)")
    result = subprocess.run([sys.executable, str(REPO / "examples" / "ranks_dask.py"), str(ranks),
                             "--parquet", str(tmp_path / "pq"), "--jobs", "2"],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "traces read by dask.bag on local processes" in result.stderr  # not the process-pool fallback
    assert orjson.loads(result.stdout)["multi_rank"] == command_runs
    assert len(list((tmp_path / "pq").glob("*.steps.parquet"))) == 3


def _java_major() -> int | None:
    """The major version of the Java that Spark would start (JAVA_HOME's, else the PATH's), or
    None where there is none: an older one fails Spark's start instead of skipping."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java:
        return None
    try:
        said = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', said)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # ("1.8.0_392": Java 8)


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local[2] Spark session whose Python workers run this interpreter (it has traceview)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (the test extra has it)")
    java = _java_major()
    if java is None or java < 17:
        pytest.skip(f"{'no Java runtime' if java is None else f'Java {java}'} for Spark "
                    "(pyspark 4 needs Java 17 or later)")
    from pyspark.sql import SparkSession

    home = tmp_path_factory.mktemp("spark")
    log_config = home / "log4j2.properties"
    log_config.write_text(LOG4J2_PROPERTIES)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYSPARK_PYTHON", sys.executable)
        env.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
        env.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # no lookup of the host's name, no warning about it
        session = (SparkSession.builder.master("local[2]").appName("traceview-tests")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "2")
                   .config("spark.sql.warehouse.dir", str(home / "warehouse"))
                   .config("spark.local.dir", str(home / "local"))
                   .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
                   .getOrCreate())
        try:
            yield session
        finally:
            session.stop()


@pytest.fixture(scope="module")
def spark_section(spark: Any, ranks: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The namespace after the section's Python blocks ran (in doc order, one namespace, as a
    reader would run them), with what they printed under ``"printed"``."""
    parquet = tmp_path_factory.mktemp("parquet") / "out"
    first, second = spark_python_blocks()
    code = first.replace(RUNS_PLACEHOLDER, repr(str(ranks))) + second.replace(PARQUET_PLACEHOLDER, repr(str(parquet)))
    namespace: dict[str, Any] = {"__name__": "__spark_doc_example__"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"{DOC.relative_to(REPO)} (Spark section)", "exec"), namespace)  # noqa: S102 - the docs' own code
    namespace["printed"] = printed.getvalue()
    return namespace


def test_the_spark_snippet_gives_the_commands_ranks(spark_section: dict[str, Any],
                                                  command_runs: list[dict[str, Any]]) -> None:
    assert spark_section["spark"].sparkContext.master == "local[2]"  # the snippet's getOrCreate took ours
    assert spark_section["printed"].count("\n") == 1  # one run printed
    assert orjson.loads(json_report.dumps(spark_section["run"].to_dict())) == command_runs[0]


def test_the_executors_parquet_is_the_normalize_commands(spark_section: dict[str, Any], ranks: Path,
                                                         tmp_path: Path) -> None:
    import traceview

    traceview.write_parquet(ranks, tmp_path, jobs=1)
    for kind in ("steps", "events"):
        ours = sorted(p.name for p in spark_section["out_dir"].glob(f"*.{kind}.parquet"))
        assert ours == sorted(p.name for p in tmp_path.glob(f"*.{kind}.parquet")) and len(ours) == 3
        for name in ours:
            pd.testing.assert_frame_equal(pd.read_parquet(spark_section["out_dir"] / name),
                                          pd.read_parquet(tmp_path / name))


def spark_rows(spark: Any, sql: str) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.sql(sql).collect()]


def test_spark_sql_names_the_slowed_rank_as_the_command_does(spark_section: dict[str, Any],
                                                              command_runs: list[dict[str, Any]]) -> None:
    """The Spark query for the slowest rank per step, against the command's straggler table."""
    (query,) = [q for q in sql_blocks(spark=True) if "slowest_rank" in q]
    rows = {row["number"]: row for row in spark_rows(spark_section["spark"], query)}
    assert rows[STRETCH_STEP]["slowest_rank"] == SLOW_RANK
    straggler_steps = command_runs[0]["stragglers"]["steps"]
    assert straggler_steps and {s["number"] for s in straggler_steps} <= set(rows)
    for step in straggler_steps:
        row = rows[step["number"]]
        if step["slowest_rank"] is not None:  # the command names none where every rank took as long
            assert row["slowest_rank"] == step["slowest_rank"], step["number"]
        assert row["slowest_ns"] == step["max_ns"]
        assert row["median_ns"] == pytest.approx(step["median_ns"])
        assert row["over_median"] == pytest.approx(round(step["over_median_share"], 4), abs=1e-4)


@pytest.mark.parametrize("query", sql_blocks(spark=True), ids=lambda q: q.split()[1].strip(","))
def test_each_spark_query_answers_as_its_duckdb_query(spark_section: dict[str, Any], query: str) -> None:
    """Each Spark SQL block runs and gives the rows of the DuckDB query with the same columns,
    over the same files. Columns named ``*_rank`` are the rank of a max (``max_by``,
    ``arg_max``): either engine may pick any of several tied ranks, so they are left to the test
    above, which knows the ties."""
    import traceview

    spark_result = spark_section["spark"].sql(stand_in(query))
    columns = spark_result.columns
    ours = [row.asDict() for row in spark_result.collect()]
    assert ours, "the query gave no rows: it checks nothing"
    folder = spark_section["out_dir"]
    answers = [orjson.loads(traceview.query(folder, stand_in(s), format="json")) for s in duckdb_statements()]
    twins = [rows for rows in answers if rows and list(rows[0]) == columns]
    assert len(twins) == 1, f"no single DuckDB query in {DOC.name} has the columns {columns}"
    (theirs,) = twins
    assert len(ours) == len(theirs)
    for mine, twin in zip(ours, theirs):
        for column in columns:
            if not column.endswith("_rank"):
                assert mine[column] == pytest.approx(twin[column]), (column, mine, twin)
