"""Compare the ranks of a distributed run with Dask, one task per rank trace.

    python examples/ranks_dask.py TRACE_OR_FOLDER... [--parquet DIR] [--jobs N]

Each task runs traceview's own per-rank function, ``summarize_trace(path)``: it reads one trace,
diagnoses it and returns a small picklable ``RankSummary`` (per-step times and bucket ns, no event
rows), so a worker holds one timeline at a time whatever the number of ranks. The driver then
calls ``multi_rank(summaries)`` and prints the multi-rank comparison as JSON (the ``multi_rank``
key of ``traceview diagnose --format json``). With ``--parquet DIR`` each task also writes the
rank's ``<stem>.events.parquet`` and ``<stem>.steps.parquet`` (query them with ``traceview query``).

With Dask installed (``pip install "dask[bag]"``) the tasks run as a ``dask.bag`` (on a
``dask.distributed`` cluster when a Client is active); without it, on a local
``concurrent.futures`` process pool; a line on stderr says which ran the tasks. On Spark the same
functions go in ``rdd.map`` (docs/multi_rank.md). The trace paths must be readable where the tasks run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

from traceview.analyzers.ranks import declared_rank, multi_rank, summarize
from traceview.loader import trace_paths
from traceview.results import RANK_FROM_INPUT_ORDER, RankInfo, RankSummary

T = TypeVar("T")


def rank_task(item: tuple[int, Path], parquet_dir: Path | None, stems: dict[Path, str]) -> RankSummary:
    """One rank: diagnose, optionally write its Parquet pair, return the compact summary."""
    from traceview import parquet
    from traceview.loader import diagnose

    position, path = item
    diag = diagnose(path)
    if parquet_dir is not None:
        rank = declared_rank(diag.timeline.meta) or RankInfo(rank=position, origin=RANK_FROM_INPUT_ORDER)
        parquet.write(diag, parquet_dir, stems[path], rank)
    return summarize(diag)


def map_ranks(task: Callable[[tuple[int, Path]], T], items: Sequence[tuple[int, Path]],
              jobs: int | None) -> tuple[list[T], str]:
    """``[task(i) for i in items]`` on Dask when it is installed, else on a local process pool;
    results in input order either way, and where they ran, in words."""
    try:
        import dask.bag as db
    except ImportError:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(task, items)), "a local process pool (Dask is not installed)"
    bag = db.from_sequence(items, npartitions=max(1, len(items))).map(task)
    try:  # a dask.distributed Client, when one is running, takes the tasks
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        client = None
    # Computed outside the try: a task's own ValueError must not send the run to local processes.
    if client is not None:
        return bag.compute(), f"dask.bag on the dask.distributed scheduler {client.scheduler.address}"
    return bag.compute(scheduler="processes", num_workers=jobs), "dask.bag on local processes"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="rank trace files or folders of them")
    parser.add_argument("--parquet", type=Path, help="also write each rank's Parquet files here")
    parser.add_argument("--jobs", type=int, default=None, help="local worker processes (default: one per core)")
    args = parser.parse_args(argv)

    from traceview.errors import TraceviewError
    from traceview.parquet import trace_stems
    from traceview.renderers.json_report import dumps

    try:
        paths = [p for trace in args.traces for p in trace_paths(trace)]
        if args.parquet is not None:
            args.parquet.mkdir(parents=True, exist_ok=True)
        task = partial(rank_task, parquet_dir=args.parquet, stems=trace_stems(paths))
        summaries, engine = map_ranks(task, list(enumerate(paths)), args.jobs)
    except TraceviewError as err:
        print(f"ranks_dask: {err}", file=sys.stderr)
        return err.exit_code
    print(f"ranks_dask: {len(summaries)} traces read by {engine}", file=sys.stderr)
    runs = multi_rank(summaries)
    if not runs:
        print("ranks_dask: no two traces are ranks of one run (see docs/multi_rank.md)", file=sys.stderr)
    sys.stdout.write(dumps({"multi_rank": [run.to_dict() for run in runs]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
