"""``traceview collect``: capture the paired workloads with the frameworks' own profilers."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from traceview.commands.output import emit, path_from_text
from traceview.errors import TraceviewError, UsageError

if TYPE_CHECKING:  # rich is imported when the command runs: every command line registers this one
    from rich.console import Console


def collect(
    workload: Optional[str] = typer.Argument(None, metavar="WORKLOAD", help="Workload to capture (see --list)."),
    framework: str = typer.Option(
        "all", "--framework", metavar="NAMES", help="Comma-separated frameworks: torch, tf, jax, numpy, or all."
    ),
    mode: str = typer.Option(
        "all",
        "--mode",
        "-m",
        metavar="MODES",
        help="Comma-separated modes: eager, compile, torchscript, and cudagraphs with --device cuda (torch; "
        "all leaves it out); eager, function, xla, fit, graph-v1 (tf); jit (jax); or all.",
    ),
    device: str = typer.Option("cpu", "--device", metavar="DEVICE", help="cpu, or cuda where the framework sees a GPU."),
    output: Optional[Path] = typer.Option(
        None, "-o", "--output", metavar="DIR", parser=path_from_text,
        help="Folder to write into; one subfolder per framework-mode."
    ),
    steps: Optional[int] = typer.Option(None, "--steps", metavar="N", help="Steady steps to profile (default: the workload's)."),
    warmup: Optional[int] = typer.Option(
        None, "--warmup", metavar="N", help="Warm-up steps between the cold step(s) and the steady ones (default: 1)."
    ),
    threads: Optional[int] = typer.Option(None, "--threads", metavar="N", help="Intra/inter-op threads (default: all cores)."),
    isolate: bool = typer.Option(
        True, "--isolate/--in-process", help="Run each capture in a fresh Python process (default) or in this one."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace captures already in the output folder."),
    list_: bool = typer.Option(False, "--list", help="Show the workloads and which framework x mode pairs exist."),
) -> None:
    """Capture a workload in torch, TensorFlow and JAX (and numpy) from identical weights and data.

    Each framework-mode pair gets a folder with its native trace and a manifest.json.

    Traces: torch writes Kineto *.pt.trace.json.gz, TensorFlow and JAX plugins/profile/<run>/<host>.xplane.pb.

    The cold first step (tracing, compilation) is inside the profiled window.

    The manifest keeps versions, threads, per-step wall time with and without the profiler, and loss parity.

    Example: traceview collect mlp2 --framework torch,tf -m eager,function -o runs/mlp2
    """
    from traceview.collectors.runner import CaptureSettings, collect as run_collect, default_threads
    from traceview.renderers.console import console

    if list_:
        # Rendered first, then written as a report is (commands/output.py emit): a full disk or a
        # pipe closed early is one line there, where rich or the parser would end with status 1.
        shown = console(highlight=False)  # the width and colours standard output takes
        buffer = io.StringIO()
        render_matrix(console(highlight=False, file=buffer, width=shown.width, color_system=shown.color_system,
                              force_terminal=shown.is_terminal))
        emit(buffer.getvalue(), None, takes_output_option=False)
        return
    if workload is None:
        raise UsageError("name a workload to capture (traceview collect --list shows them)")
    from traceview.collectors.workloads import WORKLOADS

    if workload not in WORKLOADS:
        raise UsageError(f"unknown workload {workload!r}; known: {', '.join(WORKLOADS)} (traceview collect --list)")
    if output is None:
        raise UsageError("missing -o/--output: the folder to write the captures into")
    settings = CaptureSettings(
        steps=steps, warmup=warmup, device=device, threads=threads if threads is not None else default_threads()
    )
    outcomes = run_collect(
        workload,
        output,
        framework,
        mode,
        settings,
        isolate=isolate,
        overwrite=overwrite,
        console=console(stderr=True, highlight=False, soft_wrap=True),
    )
    failed = [o for o in outcomes if o.error]
    if failed:
        names = ", ".join(o.label for o in failed)
        raise TraceviewError(f"{len(failed)} of {len(outcomes)} captures failed ({names}); the others are in {output}")


def render_matrix(console: Console) -> None:
    """The workload x (framework, mode) table behind ``--list``, plus what each mode means."""
    from rich.table import Table

    from traceview.collectors.runner import availability
    from traceview.collectors.workloads import MODE_HELP, MODES, WORKLOADS, not_applicable

    columns = [(fw, m) for fw, modes in MODES.items() for m in modes]
    # Borderless with one space between columns, so the ten modes fit an 80-column terminal.
    table = Table(title="workload x framework-mode (yes: captured by traceview collect)", box=None,
                  padding=(0, 1), collapse_padding=True, pad_edge=False, header_style="bold")
    table.add_column("workload", no_wrap=True)
    short = {"torchscript": "script"}  # header only; the modes table below spells it out
    for fw, m in columns:
        label = short.get(m, m)
        table.add_column(f"{fw}\n{label}", justify="center", no_wrap=True, min_width=max(len(fw), len(label)))
    unavailable: dict[str, str] = {}
    for name, spec in WORKLOADS.items():
        cells = []
        for fw, m in columns:
            if not_applicable(spec, fw, m):
                cells.append("-")
                continue
            why = availability(fw, m)
            if why:
                unavailable[f"{fw}-{m}"] = why
                cells.append("n/a*")
            else:
                cells.append("yes")
        table.add_row(name, *cells)
    console.print(table)
    if unavailable:
        for pair, why in unavailable.items():
            console.print(f"* {pair}: {why} on this machine")
    modes = Table(title="modes", show_header=True)
    modes.add_column("framework-mode", no_wrap=True)
    modes.add_column("what runs")
    for (fw, m), text in MODE_HELP.items():
        modes.add_row(f"{fw}-{m}", text)
    console.print(modes)
    work = Table(title="workloads", show_header=True)
    work.add_column("workload", no_wrap=True)
    work.add_column("what")
    work.add_column("question it answers")
    for name, spec in WORKLOADS.items():
        work.add_row(name, spec.description, spec.question)
    console.print(work)
