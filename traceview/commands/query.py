"""``traceview query``: SQL over a folder written by ``traceview normalize`` (DuckDB, embedded)."""

from __future__ import annotations

import csv
import io
import shutil
import sys
from pathlib import Path
from typing import Any

import typer

from traceview.commands.output import emit, is_terminal, path_from_text
from traceview.errors import InputError, MissingExtraError, UsageError
from traceview.renderers.units import visible

FORMATS = ("table", "csv", "json")


def query(
    folder: Path = typer.Argument(..., metavar="DIR", parser=path_from_text, help="A folder written by `traceview normalize`."),
    sql: str = typer.Argument(..., metavar="SQL", help="SQL (DuckDB dialect) over the views `events` and `steps`."),
    format: str = typer.Option("table", "--format", "-f", metavar="FORMAT", help="Output: table (default), csv or json."),
) -> None:
    """Run SQL over the Parquet files of a folder: view `events` (every event of every rank) and view
    `steps` (every step of every rank, with the ns of each cause). Columns and examples: docs/multi_rank.md.
    """
    from traceview.renderers.parquet import EVENTS_SUFFIX, STEPS_SUFFIX

    if format not in FORMATS:
        raise UsageError(f"--format {format!r} is not one of: {', '.join(FORMATS)}")
    try:
        import duckdb
    except ImportError:
        raise MissingExtraError("duckdb (for SQL queries)", "query") from None
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; give the folder `traceview normalize -o` wrote")
    connection = duckdb.connect()
    for view, suffix in (("events", EVENTS_SUFFIX), ("steps", STEPS_SUFFIX)):
        # Regular files only: a FIFO would block the read, a folder or a dangling link fail it.
        files = sorted(str(p) for p in folder.glob(f"*{suffix}") if p.is_file())
        if not files:
            raise InputError(f"{folder}: no *{suffix} files; write them with `traceview normalize TRACE... -o {folder}`")
        # An explicit, sorted file list (the same row order on every run), each name's glob
        # characters escaped: DuckDB expands every entry as a pattern, and a trace may be named
        # "run*.json" (its files would also match "run1…"). union_by_name: traces may carry
        # different extra columns.
        try:
            connection.read_parquet([_literal_pattern(f) for f in files], union_by_name=True).create_view(view)
        except duckdb.Error as err:
            raise InputError(f"{folder}: cannot read its *{suffix} files ({str(err).strip().splitlines()[0]}); "
                             f"write them again with `traceview normalize TRACE... -o {folder}`") from None
    try:
        cursor = connection.execute(sql)
        if cursor is None:  # the text held no statement: empty, blank, only ";" or a comment
            raise UsageError(f"no SQL statement in {visible(sql)!r}; give one, e.g. \"SELECT count(*) FROM events\"")
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    except duckdb.Error as err:
        raise UsageError(f"query failed: {str(err).strip().splitlines()[0]}") from None
    emit(_format(columns, rows, format), None, takes_output_option=False)


def _format(columns: list[str], rows: list[tuple[Any, ...]], format: str) -> str:
    if format == "json":
        import orjson

        records = [dict(zip(columns, (_json_value(v) for v in row))) for row in rows]
        return orjson.dumps(records, option=orjson.OPT_INDENT_2, default=str).decode() + "\n"
    text_rows = [[_cell(v) for v in row] for row in rows]
    if format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(text_rows)
        return buffer.getvalue()
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in columns:
        table.add_column(visible(name), overflow="fold")
    for row in text_rows:
        table.add_row(*row)
    buffer = io.StringIO()
    width = shutil.get_terminal_size((100, 24)).columns if is_terminal(sys.stdout) else 100
    # markup off: values from traces are printed as they are, never read as rich markup.
    Console(file=buffer, width=width, markup=False, highlight=False, emoji=False, no_color=True).print(table)
    return buffer.getvalue() + f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n"


def _literal_pattern(path: str) -> str:
    """``path`` as a DuckDB file pattern that matches only itself: ``*``, ``?`` and ``[`` each in
    a one-character class."""
    return path.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")


# JSON numbers wider than 64 bits (DuckDB's HUGEINT sums) are written as strings: the JSON
# encoder takes no larger integer, and many readers would round one silently.
_JSON_INT_RANGE = (-(2**63), 2**64 - 1)


def _json_value(value: Any) -> Any:  # noqa: ANN401
    """A query value as JSON takes it, at any depth of a LIST, STRUCT or MAP: integers beyond 64
    bits as text, a MAP's keys as text (JSON object keys are strings)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if _JSON_INT_RANGE[0] <= value <= _JSON_INT_RANGE[1] else str(value)
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(_json_value(k)): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


def _cell(value: Any) -> str:  # noqa: ANN401
    """A value as text: NULL for missing, trace text without control characters."""
    if value is None:
        return "NULL"
    return visible(value)
