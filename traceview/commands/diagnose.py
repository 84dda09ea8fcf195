"""``traceview diagnose``: what a trace is, its steps, and where each step's time goes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

from traceview.commands.output import (COLOR_OPTION, DISPATCH_GAP_OPTION, FORMAT_OPTION, OUTPUT_OPTION, REDACT_OPTION,
                                       RUN_OPTION, STRICT_OPTION, WIDTH_OPTION, emit, is_terminal, path_from_text,
                                       report_width, stderr_console, use_color)


def diagnose(
    path: Path = typer.Argument(..., metavar="PATH", parser=path_from_text,
                                help="A trace file (.json, .json.gz, .xplane.pb), a TensorBoard logdir, or a "
                                     "folder written by `traceview collect`."),
    format: str = FORMAT_OPTION,
    run: Optional[str] = RUN_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    width: Optional[int] = WIDTH_OPTION,
    color: Optional[bool] = COLOR_OPTION,
    redact: bool = REDACT_OPTION,
    dispatch_gap_us: Optional[float] = DISPATCH_GAP_OPTION,
    top: str = typer.Option("10", "--top", metavar="N|all", help="Rows in the kernel and op tables; at most N ranks "
                            "in a run's per-rank table (8 without --per-rank)."),
    jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N",
        help="A folder's traces are read in this many processes at once (default: one per CPU the process may use)."),
    strict: bool = STRICT_OPTION,
    per_rank: bool = typer.Option(False, "--per-rank", help="A run of more than 8 ranks: list every rank and show "
                                  "each rank's own report (default: the ranks furthest from the median step, and the "
                                  "reports of the outlying ranks and one typical rank)."),
    per_trace: bool = typer.Option(False, "--per-trace", help="A folder of several traces: show the own report of "
                                   "every trace compared within its workload (default: its baseline's, the others a "
                                   "line each in the tables first; html and json hold every trace)."),
) -> None:
    """Report what a trace is, its steps, and where each step's time goes.

    A folder with several ranks of one distributed run also gets a multi-rank section: per-rank step
    time, stragglers per step, and the spread of each cause across the ranks (docs/multi_rank.md).
    """
    report_diagnosis(path, format=format, run=run, output=output, width=width, color=color, redact=redact,
                     dispatch_gap_us=dispatch_gap_us, top=top, jobs=jobs, strict=strict, per_rank=per_rank,
                     per_trace=per_trace)


def report_diagnosis(path: Path, *, format: str = "terminal", run: Optional[str] = None,
                     output: Optional[Path] = None, width: Optional[int] = None, color: Optional[bool] = None,
                     redact: bool = False, dispatch_gap_us: Optional[float] = None, top: str = "10",
                     jobs: Optional[int] = None, strict: bool = False, per_rank: bool = False,
                     per_trace: bool = False) -> None:
    """The diagnose command's work: :func:`traceview.api.diagnose_report`, rendered, written, then
    the ``--strict`` check."""
    from traceview import api
    from traceview.renderers.registry import renderer

    renderer(format)  # an unknown --format is refused before any trace is read
    width = report_width(width)
    if output is not None:
        api.refuse_overwriting_inputs(output, api.trace_files(path, run), "--output")
    # Progress only where a person watches it, never into a pipe or a file.
    console = stderr_console() if is_terminal(sys.stderr) and format == "terminal" and output is None else None
    with _progress(console) as progress:
        result = api.diagnose_report(path, run=run, dispatch_gap_us=dispatch_gap_us, top=top, jobs=jobs,
                                     redact=redact, keep_events=format == "html", progress=progress,
                                     comparable=False)
    emit(api.render(result, format, width=width, color=use_color(color, output), per_rank=per_rank,
                    per_trace=per_trace), output)
    if strict:
        api.check_quality(result)
    api.check_partial(result)


@contextmanager
def _progress(console: Any) -> Iterator[Callable[[str], None] | None]:  # noqa: ANN401 - rich imported lazily
    """A spinner on the terminal that shows each progress message; nothing without a console."""
    if console is None:
        yield None
        return
    with console.status("") as status:
        yield status.update
