"""``traceview export``: the normalized timeline as a Chrome trace for ui.perfetto.dev / chrome://tracing."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from traceview.commands.output import DISPATCH_GAP_HELP, RUN_OPTION, path_from_text, say


def export(
    traces: list[Path] = typer.Argument(..., metavar="TRACE...", parser=path_from_text,
                                        help="Trace files (.json, .json.gz, .xplane.pb), TensorBoard logdirs or "
                                             "folders written by `traceview collect`; one process each."),
    perfetto: Path = typer.Option(..., "--perfetto", metavar="FILE", parser=path_from_text,
                                  help="Write a Chrome trace-event JSON here (gzip-compressed when the name ends "
                                       "in .gz)."),
    redact: bool = typer.Option(False, "--redact", help="Replace file paths, host names and user names with "
                                                        "placeholders (<path>, <host>, <user>)."),
    run: Optional[str] = RUN_OPTION,
    dispatch_gap_us: Optional[float] = typer.Option(None, "--dispatch-gap-us", metavar="MICROSECONDS",
                                                    help=DISPATCH_GAP_HELP + " Sets the attribution track."),
) -> None:
    """Write traces as one Chrome trace-event JSON to open in ui.perfetto.dev or chrome://tracing.

    Each trace is one process (pid 1, 2, … in argument order): host threads, device streams, launch arrows.

    Two extra tracks per trace: "steps" and "traceview: attribution" (the cause of each stretch of every step).

    Traces are aligned on their first step.
    """
    from traceview import api

    written = api.export(traces, perfetto, run=run, redact=redact, dispatch_gap_us=dispatch_gap_us)
    count = len(written.sources)
    say(f"wrote {written.path} ({count} trace{'s' if count != 1 else ''}, {written.events:,} events, "
        f"{written.bytes / 1e6:.1f} MB): open it in https://ui.perfetto.dev or chrome://tracing\n")
