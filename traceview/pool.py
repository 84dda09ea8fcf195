"""Per-trace work over many traces in worker processes, results in input order.

``map_traces(fn, paths, jobs)`` runs ``fn(path)`` for every path: in this process when ``jobs`` is 1
(or there is one path), else in up to ``jobs`` worker processes. A worker holds one trace at a time
and sends back only ``fn``'s result, so ``fn`` should return something compact (a summary, a
diagnosis without its event rows: :func:`diagnose_compact`); then at most ``jobs`` timelines are
in memory at once. Results come back in the order of ``paths``, never in completion order. A user
error for a trace (:class:`~traceview.errors.TraceviewError`) is raised again here for the first
failing trace in input order, the error a serial run stops at.

This is a local pool for one machine; over thousands of traces map the same per-trace function
with Dask or Spark (docs/multi_rank.md).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from traceview.arrays import one_values_shared
from traceview.errors import FormatError, InputError, TraceviewError, one_line
from traceview.heap import huge_page_advice_off
from traceview.pandas_import import prepare_worker, pyarrow_withheld
from traceview.schema import CATEGORY_LEVELS, Timeline
from traceview.table import Labels

T = TypeVar("T")


def default_jobs() -> int:
    """One worker per CPU this process may use: the CPUs it is pinned to (taskset, Slurm's
    binding) and at most its cgroup's CPU quota (a container's or a job's share of a larger node),
    not every core of the machine."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (no affinity on this platform)
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cpus, quota) if quota is not None else cpus)


def cgroup_cpu_quota(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> int | None:
    """The CPUs a cgroup v2 quota allows ("200000 100000": 2), rounded up; None without one."""
    try:
        quota, period = path.read_text().split()[:2]
        return None if quota == "max" else max(1, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class _Failed:
    """A user error raised in a worker, carried back as plain data (any error class pickles)."""

    message: str
    exit_code: int


class WorkerError(TraceviewError):
    """A user error from a worker process: the original message and exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class _Unreadable:
    """A result that would not be read back in the parent, as plain data: sent instead of it, so
    the pool never breaks on it (a broken pool's shutdown can wait forever on a worker)."""

    detail: str


def _guarded(fn: Callable[[Path], T], path: Path) -> T | _Failed | _Unreadable:
    try:
        value = fn(path)
    except TraceviewError as err:
        return _Failed(str(err), err.exit_code)
    try:
        pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception as err:  # noqa: BLE001 - whatever the reading raises is the defect to report
        return _Unreadable(f"{type(err).__name__}: {err}")
    return value


def _context() -> Any:  # noqa: ANN401 - a multiprocessing context
    """Workers start from a fork server that has traceview's analysis modules imported, so each
    starts in milliseconds without inheriting this process's threads (a progress spinner); where
    there is no fork server (Windows) they are spawned."""
    if sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        # The workers' pandas sees pyarrow when this process's does (traceview/pandas_import.py).
        lean = ["traceview._pandas_without_pyarrow"] if pyarrow_withheld() else []
        ctx.set_forkserver_preload([*lean, "traceview.analyzers.diagnosis", "traceview.analyzers.ranks"])
        return ctx
    return multiprocessing.get_context("spawn")


def map_traces(fn: Callable[[Path], T], paths: Sequence[Path], jobs: int,
               on_done: Callable[[int, int], None] | None = None) -> list[T]:
    """``[fn(p) for p in paths]``, in ``jobs`` processes; ``on_done(done, total)`` after each trace."""
    total = len(paths)
    if jobs <= 1 or total <= 1:
        results = []
        for i, path in enumerate(paths):
            results.append(fn(path))
            if on_done is not None:
                on_done(i + 1, total)
        return results
    slots: list[Any] = [None] * total
    first_failure = total
    done = 0
    started_before = set(multiprocessing.active_children())
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=_context(), initializer=prepare_worker,
                                 initargs=(pyarrow_withheld(), one_values_shared(), huge_page_advice_off())) as pool:
            futures = {pool.submit(_guarded, fn, path): i for i, path in enumerate(paths)}
            for future in as_completed(futures):
                index = futures[future]
                try:
                    value = future.result()
                except CancelledError:
                    continue
                except BrokenProcessPool:
                    _kill_live_workers(pool, started_before)
                    raise
                if isinstance(value, _Unreadable):
                    raise RuntimeError(f"a worker's result could not be read back ({value.detail})")
                slots[index] = value
                done += 1
                if isinstance(value, _Failed) and index < first_failure:
                    first_failure = index
                    # Traces after the failing one are not needed: the serial run stops there too.
                    for other, i in futures.items():
                        if i > index:
                            other.cancel()
                if on_done is not None:
                    on_done(done, total)
    except BrokenProcessPool as err:
        if err.__cause__ is not None:
            # The worker lived, but its result could not be read back here: a defect, not the
            # memory a smaller --jobs would spare (the cause is the reading's traceback, as text).
            lines = [line for line in str(err.__cause__).splitlines() if line.strip(" '")]
            detail = lines[-1] if lines else "no detail"
            raise RuntimeError(f"a worker's result could not be read back ({detail})") from None
        raise InputError(f"a worker process died while reading traces (out of memory?); "
                         f"retry with fewer --jobs (was {jobs})") from None
    if first_failure < total:
        failed = slots[first_failure]
        raise WorkerError(failed.message, failed.exit_code)
    return slots


def _kill_live_workers(pool: ProcessPoolExecutor, started_before: set[Any]) -> None:
    """Kill the workers of a broken pool that are still alive, before its shutdown waits for them.
    The pool terminates its workers when it breaks, but one can outlive that and block forever on
    a queue's lock held by a worker terminated mid-write: the shutdown then never returns (a CI
    run hung there, a worker waiting in the task queue's get). Every process this one started
    since the pool was made is killed, with those of the executor's process table (a private
    attribute, read with a default)."""
    table = list((getattr(pool, "_processes", None) or {}).values())
    for process in table + [p for p in multiprocessing.active_children() if p not in started_before]:
        if process.is_alive():
            process.kill()


@dataclass
class ReleasedTimeline(Timeline):
    """A timeline whose event rows were let go after analysis: the columns (with no rows) and the
    metadata stay, and ``has_device`` keeps the answer the full table gave."""

    device_present: bool = False

    @property
    def has_device(self) -> bool:
        return self.device_present


def release_events(diag: Any) -> Any:
    """The diagnosis without its event rows: what every report reads except the HTML step
    picture and the cross-framework op families."""
    events = diag.timeline.table.take(np.zeros(0, dtype=np.int64))
    for column in events.columns:
        # Free-text dictionaries (names, tracks) would otherwise keep every string of the trace.
        if isinstance(events[column], Labels) and column not in CATEGORY_LEVELS:
            events[column] = Labels(events[column].codes, [])
    timeline = ReleasedTimeline(table=events, meta=diag.timeline.meta, memory=None,
                                device_present=diag.timeline.has_device)
    return dataclasses.replace(diag, timeline=timeline)


def diagnose_compact(path: Path, options: Any, top: int | None, keep_events: bool, leave_out: bool = False) -> Any:
    """Diagnose one trace in a worker; without ``keep_events`` the event rows stay behind. With
    ``leave_out`` (one trace of a folder), a trace that cannot be read is a
    :class:`~traceview.results.LeftOut` naming it and why, so that the folder's others are reported."""
    from traceview.loader import diagnose

    try:
        diag = diagnose(path, options, top)
    except (InputError, FormatError) as err:
        if not leave_out:
            raise
        from traceview.results import LeftOut

        return LeftOut.of(path, one_line(str(err)))
    return diag if keep_events else release_events(diag)


def diagnose_many(paths: Sequence[Path], options: Any, top: int | None, jobs: int, keep_events: bool,
                  on_done: Callable[[int, int], None] | None = None, leave_out: bool = False) -> list[Any]:
    """Diagnoses of ``paths`` in input order, computed in ``jobs`` processes (``leave_out``:
    :func:`diagnose_compact`'s)."""
    return map_traces(partial(diagnose_compact, options=options, top=top, keep_events=keep_events,
                              leave_out=leave_out), paths, jobs,
                      on_done)


def diagnose_for_report(paths: Sequence[Path], options: Any, top: int | None, jobs: int, keep_events: bool,
                        on_done: Callable[[int, int], None] | None = None, leave_out: bool = False) -> list[Any]:
    """Diagnoses for one report over ``paths``, in ``jobs`` processes, keeping event rows only
    where the report reads them: ``keep_events`` (the HTML step picture), or a folder of several
    frameworks, whose traces are compared op family by op family. The reader formats predict that
    from a few bytes per file; the frameworks found settle it (Kineto holds torch and numpy)."""
    from traceview.readers import format_of

    keep = keep_events or len({format_of(p) for p in paths} - {None}) > 1
    diagnoses = diagnose_many(paths, options, top, jobs, keep, on_done, leave_out)
    if not keep and len({d.timeline.meta.framework for d in diagnoses if hasattr(d, "timeline")}) > 1:
        diagnoses = diagnose_many(paths, options, top, jobs, True, on_done, leave_out)
    return diagnoses
