"""``traceview query``: SQL over a folder written by ``traceview normalize`` (DuckDB, embedded)."""

from __future__ import annotations

from pathlib import Path

import typer

from traceview.commands.output import emit, path_from_text


def _formats_from(incomplete: str) -> list[str]:
    """Shell completion of ``--format``: the result formats traceview.sql writes."""
    from traceview.sql import FORMATS

    return [name for name in FORMATS if name.startswith(incomplete)]


def query(
    folder: Path = typer.Argument(..., metavar="DIR", parser=path_from_text,
                                  help="A folder written by `traceview normalize`."),
    sql: str = typer.Argument(..., metavar="SQL", help="SQL (DuckDB dialect) over the views `events` and `steps`."),
    format: str = typer.Option("table", "--format", "-f", metavar="FORMAT", help="Output: table (default), csv or json.",
                               autocompletion=_formats_from),
) -> None:
    """Run SQL over the Parquet files of a folder: view `events` (every event of every rank) and view
    `steps` (every step of every rank, with the ns of each cause). Columns and examples: docs/multi_rank.md.
    """
    from traceview import api

    emit(api.query(folder, sql, format=format), None, takes_output_option=False)
