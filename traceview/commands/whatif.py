"""``traceview whatif``: a trace's steps replayed with causes removed or scaled: what a fix buys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from traceview.commands.output import (COLOR_OPTION, DISPATCH_GAP_OPTION, OUTPUT_OPTION, RUN_OPTION, WIDTH_OPTION, emit,
                                       format_option, path_from_text, report_width, use_color)
from traceview.errors import UsageError
from traceview.renderers.registry import WHATIF

# A time with its unit (µs when none): --dispatch-per-op 5us, 0.5ms, 800ns.
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$", re.IGNORECASE)
_TO_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


def microseconds(text: str) -> float:
    """``5us`` / ``0.5ms`` / ``800ns`` / ``5`` (µs) as µs; a usage error otherwise."""
    match = _TIME.match(text)
    if not match:
        raise UsageError(f"--dispatch-per-op {text!r}: give a time such as 5us, 0.5ms or 800ns")
    return float(match.group(1)) * _TO_US[(match.group(2) or "us").lower()]


def scales(values: list[str]) -> dict[str, float]:
    """``kernel=0.5`` pairs as {cause: factor}; a usage error for anything else."""
    out: dict[str, float] = {}
    for value in values:
        cause, _, factor = value.partition("=")
        try:
            out[cause.strip()] = float(factor)
        except ValueError:
            raise UsageError(f"--scale {value!r}: give CAUSE=FACTOR, such as kernel=0.5") from None
    return out


def whatif(
    path: Path = typer.Argument(..., metavar="PATH", parser=path_from_text,
                                help="A trace file, or a folder or logdir holding one trace."),
    without: list[str] = typer.Option([], "--without", metavar="CAUSE",
                                      help="Remove a cause: a bucket (input, host_compute, graph_build, sync_wait, "
                                           "memcpy, communication, launch_overhead, kernel) or a detail "
                                           "(idle.paused, launch_overhead.python …). Repeatable."),
    scale: list[str] = typer.Option([], "--scale", metavar="CAUSE=FACTOR",
                                    help="Scale a cause's time: kernel=0.5 replays math twice as fast. Repeatable."),
    dispatch_per_op: Optional[str] = typer.Option(
        None, "--dispatch-per-op", metavar="TIME",
        help="Set the launch/dispatch overhead per framework op (5us: what compiling the step — CUDA graphs, "
             "tf.function, torch.compile, jax.jit — makes of it); the ops' own math stays."),
    format: str = format_option(WHATIF),
    run: Optional[str] = RUN_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    width: Optional[int] = WIDTH_OPTION,
    color: Optional[bool] = COLOR_OPTION,
    dispatch_gap_us: Optional[float] = DISPATCH_GAP_OPTION,
) -> None:
    """Predict the steady step with causes removed or scaled: the steps replayed along the
    dependencies the trace records (docs/whatif.md), with the critical path of the predicted step
    and what each finding's fix buys, in the order to make them."""
    from traceview import api
    from traceview.renderers.registry import renderer

    renderer(format, whatif=True)  # an unknown --format is refused before the trace is read
    width = report_width(width)
    per_op = microseconds(dispatch_per_op) if dispatch_per_op is not None else None
    if output is not None:
        api.refuse_overwriting_inputs(output, api.trace_files(path, run), "--output")
    result = api.whatif(path, without=without, scale=scales(scale), dispatch_per_op_us=per_op, run=run,
                        dispatch_gap_us=dispatch_gap_us)
    emit(api.render(result, format, width=width, color=use_color(color, output)), output)
