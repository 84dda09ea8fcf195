"""``traceview normalize``: traces as Parquet files, one pair per trace, for SQL and dataframes."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from traceview.commands.output import RUN_OPTION, path_from_text, say
from traceview.errors import PartialReport


def normalize(
    traces: list[Path] = typer.Argument(..., metavar="TRACE...", parser=path_from_text,
                                        help="Trace files (.json, .json.gz, .xplane.pb), TensorBoard logdirs or "
                                             "folders of rank traces."),
    output: Path = typer.Option(..., "--output", "-o", metavar="DIR", parser=path_from_text,
                                help="Folder for the Parquet files (created when missing)."),
    run: Optional[str] = RUN_OPTION,
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Traces read at once, one process each (default: one per CPU the process may use)."),
) -> None:
    """Write each trace's normalized timeline and per-step attribution as Parquet files.

    Per trace: <stem>.events.parquet (one row per event) and <stem>.steps.parquet (one row per step,
    with the ns of every cause), each with the trace's rank and source; columns in docs/multi_rank.md.
    Query the folder with `traceview query`, DuckDB, pandas, Spark or Dask.
    """
    from traceview import api
    from traceview.parquet import MANIFEST_NAME

    written = api.write_parquet(traces, output, run=run, jobs=jobs)
    count = len(written.sources)
    say(f"wrote {count} trace{'s' if count != 1 else ''} ({written.events:,} events, {written.steps:,} steps) "
        f"to {written.folder}: query it with `traceview query {written.folder} \"SELECT …\"`\n")
    if written.left_out:
        total = count + len(written.left_out)
        raise PartialReport(f"partial set: {len(written.left_out)} of {total} traces could not be read and have no "
                            f"Parquet files (named in {written.folder / MANIFEST_NAME}): "
                            + ", ".join(item.source for item in written.left_out))
