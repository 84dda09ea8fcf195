"""The library: one function per command, which the command line calls too.

``traceview diagnose``, ``compare`` and ``export`` parse their options and call
:func:`diagnose_report`, :func:`compare_report` and :func:`export` with them, then render the
result; :func:`diagnose`, :func:`compare` and :func:`load` are the same functions for scripts
and notebooks. ``traceview normalize`` and ``query`` call :func:`write_parquet` and :func:`query`. Every input the command line accepts is accepted here (a trace file, a
TensorBoard logdir or profile run folder, a folder of rank traces or of ``traceview collect``
captures, ``run=`` to pick a logdir's run), every analysis option has the command-line name in
snake_case and the same default, so a script gets the very numbers — and with
``render(result, "json")`` the very bytes — the command line prints.

Errors are :class:`traceview.errors.TraceviewError` subclasses with the one-line message the
command line shows. Heavy modules (pandas, the readers) are imported when a function runs.
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Union

from traceview.errors import (InputError, PartialReport, QualityError, RegressionError, TraceviewWarning,
                              UsageError)

if TYPE_CHECKING:  # pragma: no cover
    from traceview.parquet import ParquetFiles
    from traceview.results import (AttributionOptions, Comparison, Diagnosis, Export, FolderDiagnosis, LeftOut,
                                   WhatIf)
    from traceview.schema import Timeline

PathLike = Union[str, "os.PathLike[str]"]
# Progress messages while traces are read ("reading a.json …"); the command line shows them on a terminal.
Progress = Callable[[str], None]

# --top: rows of the kernel, op and memory tables and of a comparison's per-op diff.
DEFAULT_TOP = 10


def top_rows(top: int | str | None) -> int | None:
    """``top`` / ``--top``: a positive number of rows, or ``"all"`` (or None) for every row."""
    if top is None:
        return None
    text = str(top).strip().lower()
    if text == "all":
        return None
    if not isinstance(top, bool) and text.isascii() and text.isdigit() and int(text) > 0:
        return int(text)
    raise UsageError(f"--top must be a positive number or 'all', got {top!r}")


# --dispatch-gap-us ceiling: an hour; beyond it every unrecorded gap of any step is dispatch anyway.
MAX_DISPATCH_GAP_US = 3.6e9


def regression_limit(fail_if_slower: float | None) -> float | None:
    """``fail_if_slower`` / ``--fail-if-slower``, checked: a finite percentage (negative: the
    candidate must be faster by at least that much)."""
    if fail_if_slower is not None and not math.isfinite(fail_if_slower):
        raise UsageError(f"--fail-if-slower must be a finite percentage, got {fail_if_slower!r}")
    return fail_if_slower


def attribution_options(dispatch_gap_us: float | None, keep_segments: bool = True) -> AttributionOptions:
    """``dispatch_gap_us`` / ``--dispatch-gap-us`` as the attribution's options; ``keep_segments``:
    keep each step's bucket runs for a timeline (the HTML report, the Perfetto export)."""
    from traceview.results import AttributionOptions

    # (NaN compares false with everything: the bounds are written so that it fails them.)
    if dispatch_gap_us is not None and not 0 <= dispatch_gap_us <= MAX_DISPATCH_GAP_US:
        raise UsageError(f"--dispatch-gap-us must be a number of microseconds from 0 to {MAX_DISPATCH_GAP_US:g}, "
                         f"got {dispatch_gap_us!r}")
    return AttributionOptions(dispatch_gap_ns=None if dispatch_gap_us is None else int(round(dispatch_gap_us * 1000)),
                              keep_segments=keep_segments)


def trace_files(path: PathLike, run: str | None = None) -> list[Path]:
    """The trace files an input names: the file itself, or the traces found under a folder (the
    newest run of each TensorBoard logdir, or the run named ``run``; in a folder of torch.profiler
    traces, every trace, or those of the run named ``run``)."""
    from traceview.loader import trace_paths

    paths = trace_paths(Path(path), run)
    return paths if run is None or not Path(path).is_dir() else _traces_of_run(Path(path), paths, run)


def _traces_of_run(folder: Path, paths: list[Path], run: str) -> list[Path]:
    """``run`` in a folder of torch.profiler traces: the traces of the folder named ``run`` (each
    folder that holds traces is a run, as TensorBoard's PyTorch profiler plugin lists them; the
    folder named itself is the run of the traces directly in it). A run named that no folder is
    refused, naming the runs there, as a TensorBoard logdir's reader refuses it; in a logdir
    (XPlane files) that reader has chosen the run."""
    from traceview.readers.xplane_runs import is_xplane_name

    if any(is_xplane_name(p) for p in paths):
        return paths
    runs: dict[str, list[Path]] = {}
    for p in paths:
        runs.setdefault((folder.resolve() if p.parent == folder else p.parent).name, []).append(p)
    if run not in runs:
        raise InputError(f"{folder}: no run named '{run}' (runs found: {', '.join(sorted(runs))}); pick one of those")
    return runs[run]


def load(path: PathLike, *, run: str | None = None) -> Timeline | list[Timeline]:
    """Read a trace into the normalized, step-annotated timeline (``.events``: a DataFrame,
    docs/schema.md; ``.meta``: what the trace is).

    ``path``: a Kineto JSON (``.json``, ``.json.gz``) or XPlane (``.xplane.pb``) file, a TensorBoard
    logdir or profile run folder, or a folder of traces. ``run``: the run folder to read (a
    logdir's, default the newest; in a folder of torch.profiler traces, default all of them).
    Returns one :class:`~traceview.schema.Timeline`, or a list of them when the input holds
    several traces (in path order)."""
    from traceview.loader import load as load_one

    timelines = [load_one(p) for p in trace_files(path, run)]
    return timelines[0] if len(timelines) == 1 else timelines


def diagnose(path: PathLike, *, run: str | None = None, dispatch_gap_us: float | None = None,
             top: int | str | None = DEFAULT_TOP, jobs: int | None = None, redact: bool = False,
             strict: bool = False, keep_events: bool = True) -> Diagnosis | FolderDiagnosis:
    """Report what a trace is, its steps, and where each step's time goes (``traceview diagnose``).

    ``path``: a trace file, a TensorBoard logdir or profile run folder, or a folder of traces.
    Returns a :class:`~traceview.results.Diagnosis` when it holds one trace, else a
    :class:`~traceview.results.FolderDiagnosis` (every trace; each workload's traces, of every
    framework and mode, compared with its baseline: the torch eager capture where there is one;
    the multi-rank sections of runs of several ranks).

    - ``run``: the run folder to read: a TensorBoard logdir's (default: the newest), or, in a
      folder of torch.profiler traces, the subfolder whose traces to read (default: all of them).
    - ``dispatch_gap_us``: unrecorded gaps on the step's thread up to this long count as dispatch,
      longer ones as host compute (default: calibrated on the trace; 0 turns the rule off).
    - ``top``: rows in the kernel, op and memory tables (a number, or ``"all"``).
    - ``jobs``: a folder's traces are read in this many processes at once (default: one per CPU the process may use).
    - ``redact``: replace file paths, host names and user names with ``<path>``, ``<host>``, ``<user>``.
    - ``strict``: raise :class:`~traceview.errors.QualityError` (its ``result`` holds the
      diagnosis) when a trace has a trace-quality problem (docs/bad_input.md).
    - ``keep_events``: keep every trace's event rows and its steps' bucket runs
      (``Attribution.segments``); False does without the runs, and lets the rows go in the worker
      processes (less memory for large traces; the reports but the HTML timeline need neither).
    """
    result = diagnose_report(path, run=run, dispatch_gap_us=dispatch_gap_us, top=top, jobs=jobs, redact=redact,
                             keep_events=keep_events)
    if strict:
        check_quality(result)
    return result


def diagnose_report(path: PathLike, *, run: str | None = None, dispatch_gap_us: float | None = None,
                    top: int | str | None = DEFAULT_TOP, jobs: int | None = None, redact: bool = False,
                    keep_events: bool = True, progress: Progress | None = None,
                    comparable: bool = True) -> Diagnosis | FolderDiagnosis:
    """:func:`diagnose` without the ``strict`` check (the command line writes the report first),
    saying what it reads to ``progress``. ``comparable=False``: a lone trace's diagnosis is only
    rendered, never compared (the diagnose command), so the counts a comparison reads are not made
    (``AttributionOptions.count_records``)."""
    options = attribution_options(dispatch_gap_us, keep_segments=keep_events)
    rows = top_rows(top)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    from traceview.results import LeftOut

    paths = trace_files(path, run)
    if len(paths) == 1 and not comparable:  # (several traces: the workloads' comparisons read them)
        options = dataclasses.replace(options, count_records=False)
    read = _diagnose_paths(paths, options, rows, _workers(jobs, len(paths)), keep_events, progress)
    left_out = tuple(item for item in read if isinstance(item, LeftOut))
    diagnoses = [item for item in read if not isinstance(item, LeftOut)]
    _announce_left_out(left_out, not diagnoses, f"no trace of {path} could be read", " of the folder's traces",
                       "left out of the report")
    runs = []
    if len(diagnoses) >= 2:
        from traceview.analyzers.ranks import multi_rank, summarize

        runs = multi_rank([summarize(d) for d in diagnoses])
    if redact:
        from traceview.analyzers.redaction import redact_diagnoses, redact_left_out

        redacted = redact_diagnoses(diagnoses)
        sources = {d.source: r.source for d, r in zip(diagnoses, redacted)}
        runs = [r.relabel(sources) for r in runs]
        left_out = redact_left_out(left_out, diagnoses)
        diagnoses = redacted
    if len(diagnoses) == 1 and not left_out:
        return diagnoses[0]
    from traceview.results import FolderDiagnosis

    from traceview.analyzers.compare import workload_comparisons  # (a folder's only: not a lone trace's import)

    ranks = {str(source) for run in runs for source in run.ranks["source"]}
    return FolderDiagnosis(tuple(diagnoses), tuple(workload_comparisons([d for d in diagnoses if d.source not in ranks],
                                                                        rows)), tuple(runs), left_out, rank_rows=rows)


def _announce_left_out(left_out: Sequence[LeftOut], nothing_read: bool, refusal: str, more_of: str,
                       consequence: str) -> None:
    """The traces of several that could not be read: where none could, the first one's reason
    refuses the command, as for a lone trace (``refusal``: its opening words; ``more_of``: what the
    others are); else a warning naming each, with what leaving it out means (``consequence``)."""
    if nothing_read:
        first = left_out[0]
        more = f" (and {len(left_out) - 1} more{more_of})" if len(left_out) > 1 else ""
        raise InputError(f"{refusal}: {first.source}: {first.reason}{more}")
    for item in left_out:
        warnings.warn(f"{item.source}: {item.reason} ({consequence})", TraceviewWarning, stacklevel=3)


def _workers(jobs: int | None, traces: int) -> int:
    """Processes for ``traces`` traces: one for a lone trace (without importing the pool, which a
    lone trace's diagnosis does not need), else ``jobs`` or one per CPU the process may use, at most one a trace."""
    if traces <= 1:
        return 1
    from traceview.pool import default_jobs

    return min(jobs or default_jobs(), traces)


def _diagnose_paths(paths: list[Path], options: AttributionOptions, rows: int | None, workers: int,
                    keep_events: bool, progress: Progress | None) -> list[Diagnosis | LeftOut]:
    """Diagnoses of ``paths`` in path order: in this process (``workers`` 1), or in ``workers``
    processes; either way each trace's events are let go after its analysis unless the report
    reads them (pool.diagnose_for_report). Of several, one that cannot be read is left out."""
    if len(paths) == 1:  # (a lone trace imports no pool: the command starts faster)
        from traceview.loader import diagnose as diagnose_one

        if progress is not None:
            progress(f"reading {paths[0]} …")
        return [diagnose_one(paths[0], options, rows)]
    from traceview.pool import diagnose_for_report

    on_done = None
    if progress is not None:
        label = f"reading {len(paths)} traces" + (f" in {workers} processes" if workers > 1 else "") + " …"
        progress(label)
        on_done = (lambda done, total: progress(f"{label} {done} done"))  # noqa: E731 - one line
    return diagnose_for_report(paths, options, rows, workers, keep_events, on_done, leave_out=len(paths) > 1)


def compare(baseline: PathLike | Diagnosis, candidate: PathLike | Diagnosis, *, run: str | None = None,
            dispatch_gap_us: float | None = None, top: int | str | None = DEFAULT_TOP, redact: bool = False,
            strict: bool = False, fail_if_slower: float | None = None) -> Comparison:
    """Explain why the candidate's steady-state step is slower (or faster) than the baseline's
    (``traceview compare``).

    ``baseline``, ``candidate``: a trace file, or a folder or logdir holding one trace, or a
    :class:`~traceview.results.Diagnosis` already made (the options below then apply to the paths
    only). ``run``, ``dispatch_gap_us``, ``top`` and ``redact`` as for :func:`diagnose` (``top`` also
    sets the rows of the per-op diff).

    - ``strict``: raise :class:`~traceview.errors.QualityError` when a trace has a quality problem.
    - ``fail_if_slower``: raise :class:`~traceview.errors.RegressionError` (exit status 1 on the
      command line; its ``comparison`` holds the result) when the candidate is more than this many
      percent slower even at the low end of the ratio's 95 % interval.
    """
    regression_limit(fail_if_slower)  # before any trace is read
    result = compare_report(baseline, candidate, run=run, dispatch_gap_us=dispatch_gap_us, top=top, redact=redact)
    check_comparison(result, strict=strict, fail_if_slower=fail_if_slower)
    return result


def compare_report(baseline: PathLike | Diagnosis, candidate: PathLike | Diagnosis, *, run: str | None = None,
                   dispatch_gap_us: float | None = None, top: int | str | None = DEFAULT_TOP,
                   redact: bool = False, keep_events: bool = True) -> Comparison:
    """:func:`compare` without its checks (the command line writes the report first); without
    ``keep_events`` the diagnoses keep no timeline segments (no report but HTML shows them)."""
    from traceview.analyzers.compare import compare as compare_diagnoses

    options = attribution_options(dispatch_gap_us, keep_segments=keep_events)
    rows = top_rows(top)
    sides = [_one_diagnosis(value, label, run, options, rows)
             for label, value in (("baseline", baseline), ("candidate", candidate))]
    if redact:
        from traceview.analyzers.redaction import redact_diagnoses

        sides = redact_diagnoses(sides)
    return compare_diagnoses(sides[0], sides[1], rows)


def _one_diagnosis(value: PathLike | Diagnosis, label: str, run: str | None, options: AttributionOptions,
                   rows: int | None) -> Diagnosis:
    from traceview.loader import diagnose as diagnose_one
    from traceview.results import Diagnosis

    if isinstance(value, Diagnosis):
        return value
    if not isinstance(value, (str, os.PathLike)):
        raise UsageError(f"the {label} must be a trace path or a Diagnosis, got a {type(value).__name__}")
    paths = trace_files(value, run)
    if len(paths) != 1:
        raise UsageError(f"{value}: holds {len(paths)} traces; name one trace file for the {label}")
    return diagnose_one(paths[0], options, rows)


def check_quality(result: Diagnosis | FolderDiagnosis | Comparison) -> None:
    """``strict``: raise :class:`~traceview.errors.QualityError`, one line naming each trace's
    quality problems, when there are any."""
    from traceview.analyzers.quality import strict_message
    from traceview.results import Comparison, FolderDiagnosis

    if isinstance(result, Comparison):
        diagnoses = [result.baseline, result.candidate]
    elif isinstance(result, FolderDiagnosis):
        diagnoses = list(result.diagnoses)
    else:
        diagnoses = [result]
    left_out = result.left_out if isinstance(result, FolderDiagnosis) else ()
    message = strict_message((d.source, d.quality) for d in diagnoses)
    if left_out:
        unread = f"traces that could not be read (left out): {', '.join(item.source for item in left_out)}"
        message = f"{message}; {unread}" if message else f"trace quality problems (--strict): {unread}"
    if message:
        raise QualityError(message, result)


def check_partial(result: Diagnosis | FolderDiagnosis) -> None:
    """The command line's last check of a folder's report: :class:`~traceview.errors.PartialReport`
    (exit status 3) where traces were left out because they could not be read."""
    from traceview.results import FolderDiagnosis

    if isinstance(result, FolderDiagnosis) and result.left_out:
        total = len(result.diagnoses) + len(result.left_out)
        raise PartialReport(f"partial report: {len(result.left_out)} of {total} traces could not be read and are "
                            f"left out (named in the report): {', '.join(item.source for item in result.left_out)}")


def check_comparison(result: Comparison, strict: bool = False, fail_if_slower: float | None = None) -> None:
    """The checks of ``compare``: ``strict`` first (a verdict on untrustworthy numbers is moot),
    then ``fail_if_slower``."""
    from traceview.analyzers.compare import regression_message

    regression_limit(fail_if_slower)
    if strict:
        check_quality(result)
    if fail_if_slower is not None:
        message = regression_message(result, fail_if_slower)
        if message:
            raise RegressionError(message, result)


def export(traces: PathLike | Sequence[PathLike], perfetto: PathLike, *, run: str | None = None,
           redact: bool = False, dispatch_gap_us: float | None = None) -> Export:
    """Write traces as one Chrome Trace-Event JSON file for ui.perfetto.dev or chrome://tracing
    (``traceview export``): one process per trace, with the steps and the attribution as extra
    tracks, aligned on the first step; gzip-compressed when ``perfetto`` ends in ``.gz``.

    ``traces``: one input or several (files, logdirs, folders); ``run``, ``redact`` and
    ``dispatch_gap_us`` (which sets the attribution track) as for :func:`diagnose`."""
    from traceview.loader import diagnose as diagnose_one
    from traceview.renderers import perfetto as perfetto_renderer
    from traceview.results import Export

    target = Path(perfetto)
    inputs = [traces] if isinstance(traces, (str, os.PathLike)) else list(traces)
    options = attribution_options(dispatch_gap_us)
    if target.exists() and target.is_dir():
        raise UsageError(f"--perfetto {target}: is a directory; give a file name such as trace.perfetto.json")
    paths = [p for trace in inputs for p in trace_files(trace, run)]
    refuse_overwriting_inputs(target, paths, "--perfetto")
    diagnoses = [diagnose_one(p, options) for p in paths]
    try:
        size = perfetto_renderer.write(diagnoses, target, redact=redact)
    except OSError as err:
        remove_partial(target)
        raise UsageError(f"{target}: cannot write the trace ({err.strerror})") from None
    return Export(path=target, sources=tuple(d.source for d in diagnoses),
                  events=sum(len(d.timeline.table) for d in diagnoses), bytes=size)


def whatif(path: PathLike, *, without: Sequence[str] = (), scale: Mapping[str, float] | None = None,
           dispatch_per_op_us: float | None = None, run: str | None = None,
           dispatch_gap_us: float | None = None) -> WhatIf:
    """Replay a trace's steps along their recorded dependencies with causes removed or scaled, and
    predict the steady step (``traceview whatif``; the model: docs/whatif.md).

    ``path``: a trace file, or a folder or logdir holding one trace. ``without``: causes removed,
    each a bucket (``input``, ``host_compute``, ``graph_build``, ``sync_wait``, ``memcpy``,
    ``communication``, ``launch_overhead``, ``kernel``) or a detail of one (``idle.paused``,
    ``launch_overhead.python``). ``scale``: a factor on a cause's time (``{"kernel": 0.5}``: the
    math twice as fast). ``dispatch_per_op_us``: the launch/dispatch overhead set to this many
    µs per framework op (what compiling the step does to it; the ops' own math stays).
    ``run`` and ``dispatch_gap_us`` as for :func:`diagnose`. Returns a
    :class:`~traceview.results.WhatIf`: the steady step as recorded and predicted, per step, the
    predicted step's critical path, and every finding's own fix replayed."""
    from traceview.analyzers.attribution import replay_segments
    from traceview.analyzers.diagnosis import diagnose_timeline
    from traceview.analyzers.whatif import Transform, causes, whatif as replay_whatif
    from traceview.loader import load_with_steps

    scale = dict(scale or {})
    known = causes()
    for cause in [*without, *scale]:
        if cause not in known:
            raise UsageError(f"{cause!r} is no cause to remove or scale; use one of: {', '.join(known)}")
    for cause, factor in scale.items():
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor >= 0):
            raise UsageError(f"--scale {cause}={factor!r}: the factor must be a number at least 0")
    if dispatch_per_op_us is not None and not (math.isfinite(dispatch_per_op_us) and dispatch_per_op_us >= 0):
        raise UsageError(f"--dispatch-per-op must be a time at least 0, got {dispatch_per_op_us!r}")
    options = attribution_options(dispatch_gap_us, keep_segments=False)
    paths = trace_files(path, run)
    if len(paths) != 1:
        raise UsageError(f"{path}: holds {len(paths)} traces; give one trace to replay")
    timeline, steps = load_with_steps(paths[0])
    diag = diagnose_timeline(timeline, steps, options)
    skewed = diag.quality.skewed_devices if timeline.has_device else ()
    if skewed:
        raise InputError(f"{paths[0]}: the clock of device {', '.join(map(str, skewed))} runs behind the host's (its "
                         "kernels start before their launches: the trace-quality section), so a replay cannot order "
                         "the host's and the device's work; capture the trace again")
    transform = Transform(without=tuple(without), scale=scale,
                          dispatch_per_op_ns=None if dispatch_per_op_us is None else dispatch_per_op_us * 1e3)
    return replay_whatif(diag, replay_segments(timeline, steps, options), transform)


def write_parquet(traces: PathLike | Sequence[PathLike], output: PathLike, *, run: str | None = None,
                  jobs: int | None = None) -> ParquetFiles:
    """Write each trace's normalized timeline and per-step attribution as Parquet files
    (``traceview normalize``): ``<stem>.events.parquet`` (one row per event) and
    ``<stem>.steps.parquet`` (one row per step, with the ns of every cause), each with the trace's
    rank and source; columns in docs/multi_rank.md. Read the folder with :func:`query`, DuckDB,
    pandas, Spark or Dask.

    ``traces``: one input or several (files, logdirs, folders of rank traces; a trace named twice
    is written once); ``output``: the folder for the files (created when missing). ``run`` as for
    :func:`diagnose`; ``jobs``: traces read at once, one process each (default: one per CPU the process may use).
    Returns a :class:`~traceview.parquet.ParquetFiles` (the folder, the traces, the rows written;
    of several traces, those that could not be read are left out, each with a warning, and named
    in the folder's ``_traceview-normalize.json``).
    Raises :class:`~traceview.errors.MissingExtraError` without pyarrow (``traceview[parquet]``)."""
    from traceview.parquet import EVENTS_SUFFIX, STEPS_SUFFIX, require_pyarrow, trace_stems, write_traces

    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    require_pyarrow()  # before any trace is read: a missing extra is one line, not minutes later
    folder = Path(output)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--output {folder}: is a file; give a folder for the Parquet files")
    inputs = [traces] if isinstance(traces, (str, os.PathLike)) else list(traces)
    # A trace named twice (a file and its folder) is written once.
    paths = list(dict.fromkeys(p for trace in inputs for p in trace_files(trace, run)))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--output {folder}: cannot create the folder ({err.strerror})") from None
    stems = trace_stems(paths)
    for stem in stems.values():  # a trace may have any name: even the one an output file gets
        for suffix in (EVENTS_SUFFIX, STEPS_SUFFIX):
            refuse_overwriting_inputs(folder / f"{stem}{suffix}", paths, "--output")
    written = write_traces(paths, folder, stems, _workers(jobs, len(paths)))
    _announce_left_out(written.left_out, not written.sources, "no trace could be read", "",
                       "left out: no Parquet files for it")
    return written


def query(folder: PathLike, sql: str, *, format: str = "table") -> str:
    """Run SQL over the Parquet files of a folder written by :func:`write_parquet` (``traceview
    query``): view ``events`` (every event of every rank) and view ``steps`` (every step of every
    rank, with the ns of each cause); columns and examples in docs/multi_rank.md.

    ``sql``: one statement or several (DuckDB dialect), run in order. Returns the text the command
    prints: with ``format`` ``"table"`` (aligned columns, long cells cut) the result of each query
    in it; ``"csv"`` or ``"json"`` (a list of row objects; every value whole) take one query.
    Raises :class:`~traceview.errors.MissingExtraError` without DuckDB (``traceview[query]``)."""
    from traceview.sql import run_query

    return run_query(Path(folder), sql, format)


def refuse_overwriting_inputs(target: PathLike, inputs: Sequence[PathLike], option: str) -> None:
    """Refuse to write ``target`` when it is one of the input traces: the same path, a link to it,
    or a hard link (the same file under another name) — the user's files are never modified."""
    target = Path(target)
    try:
        written = target.stat()
    except OSError:
        return  # not there yet (or unreadable, and then the write says why)
    for path in inputs:
        try:
            read = Path(path).stat()
        except OSError:
            continue
        if (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino):
            raise UsageError(f"{option} {target}: would overwrite the input trace {path}; choose another file name")


def remove_partial(path: PathLike) -> None:
    """Remove what a failed write left of a file (a full disk stops it half way): a truncated
    report or export would pass for a whole one."""
    path = Path(path)
    try:
        if path.is_file():
            path.unlink()
    except OSError:
        pass  # (it could not be written; it may not be removable either)


def render(result: Diagnosis | FolderDiagnosis | Comparison, format: str = "terminal", *, width: int = 100,
           color: bool = False, per_rank: bool = False, per_trace: bool = False) -> str:
    """The report of a result as the command line prints it: ``format`` one of terminal, md,
    json, html; ``width`` in columns and ``color`` for the terminal report; ``per_rank``: a
    folder's text reports list every rank of a run of more than 8, with each rank's own report
    (by default the ranks furthest from the median step, and the reports of the outlying ranks
    and one typical rank: ``--per-rank``); ``per_trace``: the terminal and markdown reports of a
    folder show the own report of every trace compared within its workload (by default its
    baseline's only, the others a line each: ``--per-trace``; HTML and JSON hold every trace)."""
    from traceview.renderers.registry import render as render_result

    return render_result(result, format, width=width, color=color, per_rank=per_rank, per_trace=per_trace)
