"""``traceview compare``: why one trace's steady-state step is slower than another's."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from traceview.commands.output import (COLOR_OPTION, DISPATCH_GAP_OPTION, FORMAT_OPTION, OUTPUT_OPTION, REDACT_OPTION,
                                       RUN_OPTION, STRICT_OPTION, WIDTH_OPTION, emit, path_from_text, report_width,
                                       use_color)


def compare(
    baseline: Path = typer.Argument(..., metavar="BASELINE", parser=path_from_text,
                                    help="The reference trace (or a folder with one trace)."),
    candidate: Path = typer.Argument(..., metavar="CANDIDATE", parser=path_from_text,
                                     help="The trace to explain (or a folder with one trace)."),
    format: str = FORMAT_OPTION,
    run: Optional[str] = RUN_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    width: Optional[int] = WIDTH_OPTION,
    color: Optional[bool] = COLOR_OPTION,
    fail_if_slower: Optional[float] = typer.Option(None, "--fail-if-slower", metavar="PCT",
                                                   help="Exit 1 when the candidate's steady step is more than PCT % "
                                                        "slower than the baseline's even at the low end of the ratio's "
                                                        "95 % interval (CI regression gate that ignores step noise)."),
    redact: bool = REDACT_OPTION,
    dispatch_gap_us: Optional[float] = DISPATCH_GAP_OPTION,
    top: str = typer.Option("10", "--top", metavar="N|all",
                            help="Rows in the kernel and op tables and in the ops-and-kernels diff."),
    strict: bool = STRICT_OPTION,
) -> None:
    """Explain why one trace's steady-state step is slower than another's."""
    from traceview import api
    from traceview.renderers.registry import renderer

    renderer(format, comparison=True)  # an unknown --format is refused before any trace is read
    api.regression_limit(fail_if_slower)
    width = report_width(width)
    if output is not None:
        api.refuse_overwriting_inputs(output, [*api.trace_files(baseline, run), *api.trace_files(candidate, run)],
                                      "--output")
    comparison = api.compare_report(baseline, candidate, run=run, dispatch_gap_us=dispatch_gap_us, top=top,
                                    redact=redact, keep_events=format == "html")
    emit(api.render(comparison, format, width=width, color=use_color(color, output)), output)
    # After the report: --strict (exit 2), then --fail-if-slower (exit 1).
    api.check_comparison(comparison, strict=strict, fail_if_slower=fail_if_slower)
