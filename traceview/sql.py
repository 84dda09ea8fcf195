"""SQL over a folder of Parquet files written by :func:`traceview.write_parquet` (``traceview
normalize``): DuckDB, embedded, with two views, ``events`` and ``steps``, over every trace's
files; the result as the text ``traceview query`` prints (:func:`traceview.query`).

DuckDB is imported only when a query runs, with a one-line message when it is missing.
"""

from __future__ import annotations

import csv
import io
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from traceview.errors import InputError, MissingExtraError, TraceviewWarning, UsageError
from traceview.parquet import EVENTS_SUFFIX, MANIFEST_NAME, STEPS_SUFFIX
from traceview.text import visible

FORMATS = ("table", "csv", "json")


def run_query(folder: Path, sql: str, format: str) -> str:
    """Every statement of ``sql`` run over ``folder``'s files; the results as ``format`` (one of
    :data:`FORMATS`) gives them."""
    if format not in FORMATS:
        raise UsageError(f"--format {format!r} is not one of: {', '.join(FORMATS)}")
    try:
        import duckdb
    except ImportError:
        raise MissingExtraError("duckdb (for SQL queries)", "query") from None
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; give the folder `traceview normalize -o` wrote")
    _warn_if_partial(folder)
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
    results = _run_statements(connection, sql, duckdb.Error, one_query=format != "table")
    return "\n".join(_format(columns, rows, format) for columns, rows in results)


def _warn_if_partial(folder: Path) -> None:
    """A warning where the normalize run that wrote the folder left traces out: the views hold the
    others only."""
    try:
        left_out = orjson.loads((folder / MANIFEST_NAME).read_bytes()).get("left_out") or []
    except (OSError, orjson.JSONDecodeError, AttributeError):  # (no manifest: a folder of Parquet files as it is)
        return
    if left_out:
        names = ", ".join(str(item.get("source", "?")) for item in left_out if isinstance(item, dict))
        warnings.warn(f"{folder}: a partial set: {len(left_out)} traces could not be read when it was written and "
                      f"are in no view ({names}; {MANIFEST_NAME})", TraceviewWarning, stacklevel=3)


def _run_statements(connection: Any, sql: str,  # noqa: ANN401 - a duckdb connection
                    failure: type[Exception],  # (duckdb.Error: duckdb is imported only when a query runs)
                    one_query: bool) -> list[tuple[list[str], list[tuple[Any, ...]]]]:
    """Run each statement of ``sql`` in order; (columns, rows) of each one whose result is rows
    the user asked for. Every such result is kept: "SELECT a; SELECT b" shows both; with
    ``one_query`` (csv, json) a second one is refused, before anything runs where the statements
    say so."""
    try:
        statements = connection.extract_statements(sql)
        if not statements:  # empty, blank, only ";" or a comment
            raise UsageError(f"no SQL statement in {visible(sql)!r}; give one, e.g. \"SELECT count(*) FROM events\"")
        if one_query:
            _refuse_several(sum(statement.type.name in _QUERY_STATEMENTS for statement in statements))
        results, asked = [], []
        for statement in statements:
            cursor = connection.execute(statement)
            if cursor is not None and cursor.description:
                columns = [d[0] for d in cursor.description]
                results.append((columns, cursor.fetchall()))
                # Other statements (SET, CREATE, COPY …) answer with a status: a "Success" flag, a
                # "Count" of rows written (an INSERT … RETURNING gives rows: those are asked for).
                if statement.type.name in _QUERY_STATEMENTS or columns not in _STATUS_COLUMNS:
                    asked.append(results[-1])
    except failure as err:
        raise UsageError(f"query failed: {str(err).strip().splitlines()[0]}") from None
    if one_query:
        _refuse_several(len(asked))
    return asked or results[-1:] or [([], [])]  # a status only when there is nothing else to show


def _refuse_several(queries: int) -> None:
    if queries > 1:
        raise UsageError(f"csv and json take one result and the SQL has {queries} queries; "
                         f"run one at a time, or use the table format")


# DuckDB statement types (duckdb.StatementType) whose result is rows the user asked for;
# SELECT covers DESCRIBE, SHOW and SUMMARIZE, which DuckDB parses as selects.
_QUERY_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "PRAGMA", "CALL", "EXECUTE"})
_STATUS_COLUMNS = (["Success"], ["Count"])


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
    return _text_table(columns, rows, text_rows) + f"({len(rows)} row{'s' if len(rows) != 1 else ''})\n"


# A cell wider than this is cut with "…" in the table (csv and json give every value whole):
# one long name must not push every other column off the screen.
MAX_CELL_COLUMNS = 60
_NUMBERS = (int, float, Decimal)


def _text_table(columns: list[str], rows: list[tuple[Any, ...]], text_rows: list[list[str]]) -> str:
    """An aligned plain-text table: a column as wide as its widest cell (up to MAX_CELL_COLUMNS),
    numbers to the right, two spaces between columns; a row per line at any terminal width,
    as psql and the DuckDB shell print them. (Built with string operations: a rich table took
    ~3 ms a row.)"""
    headers = [_fit(_one_line(visible(name))) for name in columns]
    body = [[_fit(_one_line(cell)) for cell in row] for row in text_rows]
    widths = [max([_width(h)] + [_width(row[i]) for row in body]) for i, h in enumerate(headers)]
    right = [bool(rows) and all(isinstance(row[i], _NUMBERS) or row[i] is None for row in rows)
             and any(isinstance(row[i], _NUMBERS) for row in rows) for i in range(len(columns))]

    def line(cells: list[str]) -> str:
        padded = [_pad(cell, width, at_right) for cell, width, at_right in zip(cells, widths, right)]
        return "  ".join(padded).rstrip() + "\n"

    out = [line(headers), line(["─" * w for w in widths])]
    out.extend(line(row) for row in body)
    return "".join(out)


# Line breaks and tabs in a value would break its row or shift its columns: written as escapes.
_LINE_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _one_line(text: str) -> str:
    return text.translate(_LINE_BREAKS)


def _width(text: str) -> int:
    """Terminal columns of ``text`` (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # (imported here: a query of ASCII text needs none of rich)

    return cell_len(text)


def _fit(text: str) -> str:
    """``text`` cut to MAX_CELL_COLUMNS columns, ending in "…" when cut."""
    if _width(text) <= MAX_CELL_COLUMNS:
        return text
    cut = text[: MAX_CELL_COLUMNS - 1]
    while _width(cut) > MAX_CELL_COLUMNS - 1:
        cut = cut[:-1]
    return cut + "…"


def _pad(text: str, width: int, at_right: bool) -> str:
    room = " " * (width - _width(text))
    return room + text if at_right else text + room


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
