"""Command line: thin typer commands; each validates, calls one library function, renders.

Errors a user can act on (:class:`traceview.errors.TraceviewError`) become one line on stderr and
exit code 2; anything else becomes one line and exit code 3 (set TRACEVIEW_DEBUG=1 for the
traceback).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any, Optional

import typer

from traceview.errors import TraceviewError, TraceviewWarning, UsageError, one_line

app = typer.Typer(
    name="traceview",
    help="Explain deep-learning training-step time from torch.profiler and TensorFlow/JAX profiler traces.",
    # Shell completion: `traceview --install-completion` (bash, zsh, fish, PowerShell).
    add_completion=True,
    # Plain click help: no boxes, and no <bool> / {path} type placeholders around the options.
    rich_markup_mode=None,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)



def _show_version(value: bool) -> None:
    if value:
        from traceview import __version__
        from traceview.schema import SCHEMA_VERSION

        sys.stdout.write(f"traceview {__version__} (timeline schema {SCHEMA_VERSION})\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Show the version and exit."),
    max_bytes: Optional[int] = typer.Option(
        None, "--max-bytes", min=1, metavar="BYTES",
        help="Refuse a compressed trace that would inflate beyond this many bytes (default 8 GiB)."),
) -> None:
    """Explain deep-learning training-step time from torch.profiler and TensorFlow/JAX profiler traces."""
    if max_bytes is not None:
        # Read by traceview.readers._io.max_bytes (also settable as TRACEVIEW_MAX_BYTES).
        os.environ["TRACEVIEW_MAX_BYTES"] = str(max_bytes)


FORMAT_HELP = "Output format: terminal (default), md, json, html."
STRICT_HELP = ("Exit 2, after writing the report, when a trace has a trace-quality problem (lost events, "
               "clock skew, overlaps, duplicated correlation ids, empty steps: docs/bad_input.md).")


def _top_rows(value: str) -> Optional[int]:
    """``--top``: a positive number of rows, or ``all``."""
    if value.strip().lower() == "all":
        return None
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    raise UsageError(f"--top must be a positive number or 'all', got {value!r}")


def _stderr_console():  # noqa: ANN202 - rich imported lazily
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False)


def _width(requested: Optional[int]) -> int:
    if requested:
        return requested
    if sys.stdout.isatty():
        return max(80, min(shutil.get_terminal_size((100, 24)).columns, 140))
    return 100


@app.command()
def diagnose(
    path: Path = typer.Argument(..., metavar="PATH",
                                help="A trace file (.json, .json.gz, .xplane.pb), a TensorBoard logdir, or a "
                                     "folder written by `traceview collect`."),
    format: str = typer.Option("terminal", "--format", "-f", metavar="FORMAT", help=FORMAT_HELP),
    run: Optional[str] = typer.Option(None, "--run", metavar="RUN",
                                      help="TensorBoard logdir: the run folder to read (default newest)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE",
                                          help="Write the report to this file."),
    width: Optional[int] = typer.Option(None, "--width", metavar="COLUMNS", help="Terminal report width in columns."),
    color: Optional[bool] = typer.Option(None, "--color/--no-color", help="Force colours on or off."),
    redact: bool = typer.Option(False, "--redact", help="Replace file paths, host names and user names."),
    dispatch_gap_us: Optional[float] = typer.Option(
        None, "--dispatch-gap-us", metavar="MICROSECONDS",
        help="Unrecorded gaps on the step's thread up to this long count as dispatch, longer ones as host "
             "compute (default: calibrated on the trace; 0 turns the rule off)."),
    top: str = typer.Option("10", "--top", metavar="N|all", help="Rows in the kernel and op tables."),
    jobs: Optional[int] = typer.Option(
        None, "--jobs", "-j", min=1, metavar="N",
        help="A folder's traces are read in this many processes at once (default: one per core)."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
) -> None:
    """Report what a trace is, its steps, and where each step's time goes.

    A folder with several ranks of one distributed run also gets a multi-rank section: per-rank step
    time, stragglers per step, and the spread of each cause across the ranks (docs/multi_rank.md).
    """
    from traceview.analyzers.attribution import AttributionOptions
    from traceview.analyzers.diagnosis import diagnose as run_diagnose
    from traceview.loader import trace_paths
    from traceview.pool import default_jobs

    renderer = _renderer(format)
    if dispatch_gap_us is not None and dispatch_gap_us < 0:
        raise UsageError("--dispatch-gap-us must be >= 0")
    options = AttributionOptions(
        dispatch_gap_ns=None if dispatch_gap_us is None else int(round(dispatch_gap_us * 1000)))
    rows = _top_rows(top)
    paths = trace_paths(path, run)
    show_progress = sys.stderr.isatty() and format == "terminal" and output is None
    console = _stderr_console() if show_progress else None
    workers = min(jobs or default_jobs(), len(paths))
    if workers > 1:
        # Only the HTML report draws event rows (a step of each trace); the others let them go.
        diagnoses = _diagnose_in_processes(paths, options, rows, workers, format == "html", console)
    else:
        diagnoses = []
        for p in paths:
            if console is not None:
                with console.status(f"reading {p} …"):
                    diagnoses.append(run_diagnose(p, options, rows))
            else:
                diagnoses.append(run_diagnose(p, options, rows))
    runs = []
    if len(diagnoses) >= 2:
        from traceview.analyzers.ranks import multi_rank, summarize

        runs = multi_rank([summarize(d) for d in diagnoses])
    if redact:
        from traceview.redact import redact_diagnoses

        redacted = redact_diagnoses(diagnoses)
        sources = {d.timeline.meta.source: r.timeline.meta.source for d, r in zip(diagnoses, redacted)}
        runs = [r.relabel(sources) for r in runs]
        diagnoses = redacted
    from traceview.analyzers.compare import folder_comparisons

    text = renderer.render_diagnoses(diagnoses, width=_width(width), color=_use_color(color, output),
                                     comparisons=folder_comparisons(diagnoses), multi_rank=runs)
    _emit(text, output)
    if strict:
        _check_quality(diagnoses)


@app.command()
def compare(
    baseline: Path = typer.Argument(..., metavar="BASELINE", help="The reference trace (or a folder with one trace)."),
    candidate: Path = typer.Argument(..., metavar="CANDIDATE",
                                     help="The trace to explain (or a folder with one trace)."),
    format: str = typer.Option("terminal", "--format", "-f", metavar="FORMAT", help=FORMAT_HELP),
    run: Optional[str] = typer.Option(None, "--run", metavar="RUN",
                                      help="TensorBoard logdir: the run folder to read (default newest)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE",
                                          help="Write the report to this file."),
    width: Optional[int] = typer.Option(None, "--width", metavar="COLUMNS", help="Terminal report width in columns."),
    color: Optional[bool] = typer.Option(None, "--color/--no-color", help="Force colours on or off."),
    fail_if_slower: Optional[float] = typer.Option(None, "--fail-if-slower", metavar="PCT",
                                                   help="Exit 1 when the candidate's steady step is more than PCT % "
                                                        "slower than the baseline's even at the low end of the ratio's "
                                                        "95 % interval (CI regression gate that ignores step noise)."),
    redact: bool = typer.Option(False, "--redact", help="Replace file paths, host names and user names."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
) -> None:
    """Explain why one trace's steady-state step is slower than another's."""
    from traceview.analyzers.compare import compare as run_compare
    from traceview.analyzers.diagnosis import diagnose as run_diagnose
    from traceview.loader import trace_paths

    renderer = _renderer(format, comparison=True)
    sides = []
    for label, path in (("baseline", baseline), ("candidate", candidate)):
        paths = trace_paths(path, run)
        if len(paths) != 1:
            raise UsageError(f"{path}: holds {len(paths)} traces; name one trace file for the {label}")
        sides.append(run_diagnose(paths[0]))
    if redact:
        from traceview.redact import redact_diagnoses

        sides = redact_diagnoses(sides)
    comparison = run_compare(sides[0], sides[1])
    text = renderer.render_comparison(comparison, width=_width(width), color=_use_color(color, output))
    _emit(text, output)
    if strict:  # before --fail-if-slower: a verdict on untrustworthy numbers is moot
        _check_quality(sides)
    if fail_if_slower is not None and comparison.baseline_step_ns > 0:
        # The low end of the interval: a slowdown the step-time noise could explain does not fail.
        interval = comparison.ratio_interval
        low = interval[0] if interval else comparison.ratio
        slower_pct = (comparison.ratio - 1.0) * 100.0
        if (low - 1.0) * 100.0 > fail_if_slower:
            within = f"; at least {(low - 1.0) * 100.0:.1f} % with 95 % confidence" if interval else ""
            _stderr_console().print(f"traceview: candidate is {slower_pct:.1f} % slower than the baseline{within} "
                                    f"(limit {fail_if_slower:g} %)", markup=False, highlight=False)
            raise typer.Exit(1)


def _check_quality(diagnoses: list[Any]) -> None:
    """``--strict``: one line naming each trace's quality problems, exit status 2."""
    from traceview.analyzers.quality import strict_message
    from traceview.errors import QualityError

    message = strict_message((d.timeline.meta.source, d.quality) for d in diagnoses)
    if message:
        raise QualityError(message)


def _diagnose_in_processes(paths: list[Path], options: Any, rows: Optional[int], workers: int, keep_events: bool,
                           console: Any) -> list[Any]:
    """Diagnoses of ``paths`` in ``workers`` processes, in path order; a spinner counts them on a terminal."""
    from traceview.pool import diagnose_for_report

    if console is None:
        return diagnose_for_report(paths, options, rows, workers, keep_events)
    label = f"reading {len(paths)} traces in {workers} processes …"
    with console.status(label) as status:
        return diagnose_for_report(paths, options, rows, workers, keep_events,
                                   lambda done, total: status.update(f"{label} {done} done"))


def _renderer(format: str, comparison: bool = False):  # noqa: ANN202
    from traceview.renderers import base

    if format not in base.names():
        raise UsageError(f"--format {format!r} is not one of: {', '.join(base.names())}")
    renderer = base.get(format)
    if comparison and renderer.render_comparison is None:
        supported = [n for n in base.names() if base.get(n).render_comparison is not None]
        raise UsageError(f"--format {format!r} cannot show a comparison; use one of: {', '.join(supported)}")
    return renderer


def _use_color(color: Optional[bool], output: Optional[Path]) -> bool:
    if color is not None:
        return color
    return sys.stdout.isatty() and output is None and "NO_COLOR" not in os.environ


def _emit(text: str, output: Optional[Path]) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"{output}: cannot write the report ({err.strerror})") from None


def _register_commands() -> None:
    """Commands that live in their own modules; each imports its heavy parts only when run."""
    from traceview.commands.collect import collect
    from traceview.commands.export import export
    from traceview.commands.normalize import normalize
    from traceview.commands.query import query
    from traceview.commands.run import CONTEXT_SETTINGS as RUN_CONTEXT, run

    app.command("collect")(collect)
    app.command("export")(export)
    app.command("normalize")(normalize)
    app.command("query")(query)
    app.command("run", context_settings=RUN_CONTEXT)(run)


_register_commands()


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: run the app, turning errors into one line and an exit code."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        _run(argv)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """A :class:`TraceviewWarning` is one ``traceview: warning:`` line; other warnings as Python shows them."""
    if issubclass(category, TraceviewWarning):
        _stderr_console().print(f"traceview: warning: {one_line(str(message))}", markup=False, highlight=False,
                                soft_wrap=True)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOWWARNING = warnings.showwarning


def _run(argv: Optional[list[str]]) -> None:
    try:
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)  # typer.Exit(n) comes back as a return value when standalone_mode is off
    except TraceviewError as err:
        # One line whatever the message holds (a file name may carry newlines or escape sequences);
        # a Text, never markup: messages name extras like traceview[torch], and file names.
        from rich.text import Text

        _stderr_console().print(Text.assemble(("traceview:", "bold red"), " ", one_line(str(err))), highlight=False,
                                soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as err:  # noqa: BLE001 - last line of defence: one line, never a traceback
        # Usage errors of the command-line parser (typer vendors click) know how to show themselves.
        if hasattr(err, "show") and isinstance(getattr(err, "exit_code", None), int):
            err.show()
            sys.exit(err.exit_code)
        if type(err).__name__ == "Abort":
            sys.exit(1)
        if os.environ.get("TRACEVIEW_DEBUG"):
            raise
        _stderr_console().print(
            f"traceview: internal error: {type(err).__name__}: {one_line(str(err))} "
            "(run with TRACEVIEW_DEBUG=1 for details)",
            markup=False, highlight=False, soft_wrap=True,
        )
        sys.exit(3)


if __name__ == "__main__":
    main()
