"""``traceview normalize``: traces as Parquet files, one pair per trace, for SQL and dataframes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from traceview.commands.output import RUN_OPTION, path_from_text, say
from traceview.errors import UsageError

if TYPE_CHECKING:  # the analyzers import pandas: not at command-line start-up
    from traceview.analyzers.ranks import RankInfo

_TRACE_SUFFIXES = (".gz", ".json", ".pb")


def normalize(
    traces: list[Path] = typer.Argument(..., metavar="TRACE...", parser=path_from_text,
                                        help="Trace files (.json, .json.gz, .xplane.pb), TensorBoard logdirs or "
                                             "folders of rank traces."),
    output: Path = typer.Option(..., "--output", "-o", metavar="DIR", parser=path_from_text,
                                help="Folder for the Parquet files (created when missing)."),
    run: Optional[str] = RUN_OPTION,
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Traces read at once, one process each (default: one per core)."),
) -> None:
    """Write each trace's normalized timeline and per-step attribution as Parquet files.

    Per trace: <stem>.events.parquet (one row per event) and <stem>.steps.parquet (one row per step,
    with the ns of every cause), each with the trace's rank and source; columns in docs/multi_rank.md.
    Query the folder with `traceview query`, DuckDB, pandas, Spark or Dask.
    """
    from traceview.loader import trace_paths
    from traceview.pool import default_jobs, map_traces
    from traceview.renderers.parquet import require_pyarrow

    require_pyarrow()  # before any trace is read: a missing extra is one line, not minutes later
    if output.exists() and not output.is_dir():
        raise UsageError(f"--output {output}: is a file; give a folder for the Parquet files")
    # A trace named twice (a file and its folder) is written once.
    paths = list(dict.fromkeys(p for trace in traces for p in trace_paths(trace, run)))
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--output {output}: cannot create the folder ({err.strerror})") from None
    stems = trace_stems(paths)
    from traceview.api import refuse_overwriting_inputs
    from traceview.renderers.parquet import EVENTS_SUFFIX, STEPS_SUFFIX

    for stem in stems.values():  # a trace may have any name: even the one an output file gets
        for suffix in (EVENTS_SUFFIX, STEPS_SUFFIX):
            refuse_overwriting_inputs(output / f"{stem}{suffix}", paths, "--output")
    fallback = fallback_ranks(paths)
    written = map_traces(partial(_write_one, directory=output, stems=stems, fallback=fallback), paths,
                         min(jobs or default_jobs(), len(paths)))
    events = sum(e for e, _ in written)
    steps = sum(s for _, s in written)
    say(f"wrote {len(paths)} trace{'s' if len(paths) != 1 else ''} ({events:,} events, {steps:,} steps) "
        f"to {output}: query it with `traceview query {output} \"SELECT …\"`\n")


def _write_one(path: Path, directory: Path, stems: dict[Path, str], fallback: dict[Path, RankInfo]) -> tuple[int, int]:
    """Load, diagnose and write one trace (in a worker): only the row counts travel back."""
    from traceview.analyzers.diagnosis import diagnose
    from traceview.analyzers.ranks import declared_rank
    from traceview.renderers import parquet

    diag = diagnose(path)
    rank = declared_rank(diag.timeline.meta) or fallback[path]
    try:
        return parquet.write(diag, directory, stems[path], rank)
    except OSError as err:
        raise UsageError(f"{directory}: cannot write the Parquet files ({err.strerror})") from None


def fallback_ranks(paths: Sequence[Path]) -> dict[Path, RankInfo]:
    """The rank of a trace that declares none: its host order among the XPlane files of its
    profile run folder, else its position among the inputs."""
    from traceview.analyzers.ranks import RANK_FROM_INPUT_ORDER, RankInfo, host_order
    from traceview.readers import detect

    hosts = host_order((str(p), detect(p).FORMAT_NAME) for p in paths)
    return {p: hosts.get(str(p)) or RankInfo(rank=i, origin=RANK_FROM_INPUT_ORDER) for i, p in enumerate(paths)}


def trace_stems(paths: Sequence[Path]) -> dict[Path, str]:
    """A file stem per trace: its name without the trace suffixes; where two traces share one
    (every TensorBoard host file is ``<host>.xplane.pb``), their folders relative to the inputs'
    common folder, joined with ``__``."""
    def bare(name: str) -> str:
        while name.endswith(_TRACE_SUFFIXES):
            name = name[: name.rindex(".")]
        return name

    stems = {p: bare(p.name) for p in paths}
    counts: dict[str, int] = {}
    for stem in stems.values():
        counts[stem] = counts.get(stem, 0) + 1
    common = os.path.commonpath([str(p.resolve().parent) for p in paths]) if paths else ""
    for p, stem in stems.items():
        if counts[stem] > 1:
            folders = Path(os.path.relpath(p.resolve().parent, common)).parts
            stems[p] = "__".join([*(f for f in folders if f not in (".", "")), stem])
    taken: set[str] = set()
    for p in paths:  # a.json beside a.json.gz: still one stem; number the later ones
        stem, n = stems[p], 1
        while stems[p] in taken:
            n += 1
            stems[p] = f"{stem}-{n}"
        taken.add(stems[p])
    return stems
