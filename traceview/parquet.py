"""The normalized timeline and the per-step attribution as Parquet files
(:func:`traceview.write_parquet`, ``traceview normalize``; :func:`traceview.query` reads them).

Two files per trace (columns documented in docs/multi_rank.md):

- ``<stem>.events.parquet``: one row per event, the timeline's columns as they are
  (docs/schema.md) with text columns dictionary-encoded, plus ``rank`` and ``source``;
- ``<stem>.steps.parquet``: one row per step: its window, the cold / steady flags and the ns of
  every attribution bucket (``<bucket>_ns``, whatever buckets the attribution has), plus
  ``rank``, ``rank_from``, ``world_size``, ``source`` and ``origin_ns``.

Each file's key-value metadata ``traceview`` holds the trace facts as JSON (format, framework,
devices, host, schema version, origin), so a file read alone still says where it came from.
pyarrow is imported only here, with a one-line message when it is missing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import orjson
import pandas as pd

from traceview.errors import FormatError, InputError, MissingExtraError, UsageError, one_line
from traceview.results import LeftOut, RankInfo

EVENTS_SUFFIX = ".events.parquet"
STEPS_SUFFIX = ".steps.parquet"
METADATA_KEY = b"traceview"
_TRACE_SUFFIXES = (".gz", ".json", ".pb")


# What a normalize run wrote and left out, beside its files: a query over the folder says when its
# set is partial (sql.run_query). The leading "_" keeps it out of Spark's, Dask's and pyarrow's
# reading of the folder as a dataset (they pass over names starting with "_" or ".").
MANIFEST_NAME = "_traceview-normalize.json"


@dataclass(frozen=True)
class ParquetFiles:
    """What ``traceview normalize`` wrote: a ``<stem>.events.parquet`` and a ``<stem>.steps.parquet``
    per trace, in one folder."""

    folder: Path  # where the files are
    sources: tuple[str, ...]  # the traces written, each once, in input order
    events: int  # event rows written, all traces together
    steps: int  # step rows written, all traces together
    # Traces of several that could not be read: no files for them (named in the folder's manifest).
    left_out: tuple[LeftOut, ...] = ()


def require_pyarrow() -> ModuleType:
    """``pyarrow.parquet``, or the error that says which extra to install."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError("pyarrow (for Parquet)", "parquet") from None
    return pq


def _dictionary(value: str, n: int) -> Any:  # noqa: ANN401 - a pyarrow array
    """A column holding one string ``n`` times, stored once (dictionary-encoded)."""
    import pyarrow as pa

    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value], pa.string()))


def _with_metadata(table: Any, diag: Any) -> Any:  # noqa: ANN401 - pyarrow tables
    meta = diag.timeline.meta
    facts = {"source": meta.source, "format": meta.format, "framework": meta.framework, "host_name": meta.host_name,
             "origin_ns": meta.origin_ns, "schema_version": meta.schema_version,
             "devices": [{"index": d.index, "name": d.name, "vendor": d.vendor} for d in meta.devices]}
    return table.replace_schema_metadata({**(table.schema.metadata or {}), METADATA_KEY: orjson.dumps(facts)})


def events_table(diag: Any, rank: RankInfo) -> Any:  # noqa: ANN401 - a pyarrow table
    """The event rows: pandas categoricals become Arrow dictionary columns (text stored once)."""
    import pyarrow as pa

    events = diag.timeline.events
    table = pa.Table.from_pandas(events, preserve_index=False)
    n = len(events)
    table = table.append_column("rank", pa.array(np.full(n, rank.rank, dtype=np.int32)))
    table = table.append_column("source", _dictionary(str(diag.timeline.meta.source), n))
    return _with_metadata(table, diag)


def steps_table(diag: Any, rank: RankInfo) -> Any:  # noqa: ANN401 - a pyarrow table
    """One row per step with the ns of every attribution bucket."""
    import pyarrow as pa

    table = diag.steps.table
    per = diag.attribution.per_step
    n = len(table)
    steady = np.zeros(n, dtype=bool)
    steady[diag.steps.steady_positions] = True
    frame = pd.DataFrame({
        "step": np.arange(n, dtype=np.int32),  # position: the events' `step` column points here
        "number": np.asarray(table["number"], dtype=np.int64),
        "name": pd.Categorical(table["name"].astype(str)),
        "start_ns": np.asarray(table["start"], dtype=np.int64),
        "end_ns": np.asarray(table["end"], dtype=np.int64),
        "host_end_ns": np.asarray(table["host_end"], dtype=np.int64),
        "duration_ns": np.asarray(table["duration"], dtype=np.int64),
        "cold": np.asarray(table["cold"], dtype=bool),
        "steady": steady,
        "graph_build_events": np.asarray(table["graph_build_events"], dtype=np.int64),
    })
    for bucket in per.columns:  # every bucket the attribution has, then "total"
        frame[f"{bucket}_ns"] = np.asarray(per[bucket], dtype=np.int64)
    out = pa.Table.from_pandas(frame, preserve_index=False)
    meta = diag.timeline.meta
    out = out.append_column("rank", pa.array(np.full(n, rank.rank, dtype=np.int32)))
    out = out.append_column("rank_from", _dictionary(rank.origin, n))
    out = out.append_column("world_size", pa.array([rank.world_size] * n, pa.int32()))
    out = out.append_column("source", _dictionary(str(meta.source), n))
    out = out.append_column("origin_ns", pa.array(np.full(n, meta.origin_ns, dtype=np.int64)))
    return _with_metadata(out, diag)


def write(diag: Any, directory: Path, stem: str, rank: RankInfo) -> tuple[int, int]:
    """Write ``<stem>.events.parquet`` and ``<stem>.steps.parquet``; returns their row counts."""
    pq = require_pyarrow()
    events = events_table(diag, rank)
    steps = steps_table(diag, rank)
    pq.write_table(events, directory / f"{stem}{EVENTS_SUFFIX}", compression="zstd")
    pq.write_table(steps, directory / f"{stem}{STEPS_SUFFIX}", compression="zstd")
    return events.num_rows, steps.num_rows


def write_traces(paths: Sequence[Path], folder: Path, stems: dict[Path, str], workers: int) -> ParquetFiles:
    """Diagnose each trace and write its pair of files into ``folder`` (which exists) under its
    stem, in ``workers`` processes; a trace that declares no rank gets :func:`fallback_ranks`'."""
    from traceview.pool import map_traces

    fallback = fallback_ranks(paths)
    results = map_traces(partial(write_trace, directory=folder, stems=stems, fallback=fallback,
                                 leave_out=len(paths) > 1), paths, workers)
    written = [(path, rows) for path, rows in zip(paths, results) if not isinstance(rows, LeftOut)]
    files = ParquetFiles(folder=folder, sources=tuple(str(p) for p, _ in written),
                         events=sum(e for _, (e, _) in written), steps=sum(s for _, (_, s) in written),
                         left_out=tuple(r for r in results if isinstance(r, LeftOut)))
    manifest = {"written": [{"source": str(p), "stem": stems[p], "events": e, "steps": s} for p, (e, s) in written],
                "left_out": [item.to_dict() for item in files.left_out]}
    try:
        (folder / MANIFEST_NAME).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    except OSError as err:
        raise UsageError(f"{folder}: cannot write {MANIFEST_NAME} ({err.strerror})") from None
    return files


def write_trace(path: Path, directory: Path, stems: dict[Path, str], fallback: dict[Path, RankInfo],
                leave_out: bool = False) -> tuple[int, int] | LeftOut:
    """Load, diagnose and write one trace (in a worker): only the row counts travel back; with
    ``leave_out`` (one of several), a trace that cannot be read is a LeftOut, and no files."""
    from traceview.loader import diagnose
    from traceview.analyzers.ranks import declared_rank

    try:
        diag = diagnose(path)
    except (InputError, FormatError) as err:
        if not leave_out:
            raise
        return LeftOut.of(path, one_line(str(err)))
    rank = declared_rank(diag.timeline.meta) or fallback[path]
    try:
        return write(diag, directory, stems[path], rank)
    except OSError as err:
        raise UsageError(f"{directory}: cannot write the Parquet files ({err.strerror})") from None


def fallback_ranks(paths: Sequence[Path]) -> dict[Path, RankInfo]:
    """The rank of a trace that declares none: its host order among the XPlane files of its
    profile run folder, else its position among the inputs."""
    from traceview.analyzers.ranks import host_order
    from traceview.readers import format_of
    from traceview.results import RANK_FROM_INPUT_ORDER

    hosts = host_order((str(p), format_of(p) or "") for p in paths)
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
