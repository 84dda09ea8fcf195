"""``traceview export``: the normalized timeline as a Chrome trace for ui.perfetto.dev / chrome://tracing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from traceview.errors import UsageError


def export(
    traces: list[Path] = typer.Argument(..., metavar="TRACE...", help="Trace files (.json, .json.gz, .xplane.pb), TensorBoard logdirs or "
                                                   "folders written by `traceview collect`; one process each."),
    perfetto: Path = typer.Option(..., "--perfetto", help="Write a Chrome trace-event JSON here (gzip-compressed "
                                                          "when the name ends in .gz)."),
    redact: bool = typer.Option(False, "--redact", help="Replace file paths, host names and user names with "
                                                        "placeholders (<path>, <host>, <user>)."),
    run: Optional[str] = typer.Option(None, "--run",
                                      help="TensorBoard logdir: the run folder to read (default newest)."),
) -> None:
    """Write traces as one Chrome trace-event JSON to open in ui.perfetto.dev or chrome://tracing.

    Each trace is one process (pid 1, 2, … in argument order): host threads, device streams, launch arrows.

    Two extra tracks per trace: "steps" and "traceview: attribution" (the cause of each stretch of every step).

    Traces are aligned on their first step.
    """
    from traceview.analyzers.diagnosis import diagnose
    from traceview.loader import trace_paths
    from traceview.renderers import perfetto as perfetto_renderer

    if perfetto.exists() and perfetto.is_dir():
        raise UsageError(f"--perfetto {perfetto}: is a directory; give a file name such as trace.perfetto.json")
    paths: list[Path] = []
    for trace in traces:
        paths.extend(trace_paths(trace, run))
    if perfetto.resolve() in {p.resolve() for p in paths}:
        raise UsageError(f"--perfetto {perfetto}: would overwrite an input trace; choose another file name")
    diagnoses = [diagnose(p) for p in paths]
    try:
        size = perfetto_renderer.write(diagnoses, perfetto, redact=redact)
    except OSError as err:
        raise UsageError(f"{perfetto}: cannot write the trace ({err.strerror})") from None
    events = sum(len(d.timeline.events) for d in diagnoses)
    sys.stderr.write(f"wrote {perfetto} ({len(paths)} trace{'s' if len(paths) != 1 else ''}, {events:,} events, "
                     f"{size / 1e6:.1f} MB): open it in https://ui.perfetto.dev or chrome://tracing\n")
