"""``traceview run -- python train.py ARGS``: profile an unmodified training script, then diagnose it."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path
from typing import Optional

import typer

from traceview.commands.output import (COLOR_OPTION, DISPATCH_GAP_OPTION, FORMAT_OPTION, REDACT_OPTION, STRICT_OPTION,
                                       WIDTH_OPTION, path_from_text, say, unknown_option_hint)
from traceview.errors import UsageError

# Everything after the command's first word is the command's, options included.
CONTEXT_SETTINGS = {"allow_interspersed_args": False, "ignore_unknown_options": True}
FRAMEWORKS = ("auto", "torch", "tf", "jax")
_STEPS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def run(
    ctx: typer.Context,
    command: list[str] = typer.Argument(..., metavar="-- COMMAND [ARGS]...",
                                        help="The training command, e.g. python train.py --epochs 1."),
    framework: str = typer.Option("auto", "--framework", metavar="NAME", help="Whose steps count: auto (the first framework whose "
                                                              "training step runs), torch, tf, jax."),
    steps: str = typer.Option("5-15", "--steps", metavar="A-B",
                              help="Steps to profile, 1-based and inclusive; the steps before are warm-up."),
    calibrate: bool = typer.Option(False, "--calibrate",
                                   help="Run the command a second time without the profiler and report the "
                                        "profiler's inflation of the same steps."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="DIR", parser=path_from_text,
                                          help="Folder for the trace and manifest.json "
                                               "(default traceview-runs/<script>-<date>-<time>)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a capture already in the -o folder."),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE", parser=path_from_text,
                                          help="Write the report to this file instead of stdout."),
    format: str = FORMAT_OPTION,
    width: Optional[int] = WIDTH_OPTION,
    color: Optional[bool] = COLOR_OPTION,
    redact: bool = REDACT_OPTION,
    dispatch_gap_us: Optional[float] = DISPATCH_GAP_OPTION,
    top: str = typer.Option("10", "--top", metavar="N|all", help="Rows in the kernel and op tables."),
    strict: bool = STRICT_OPTION,
    python_events: bool = typer.Option(True, "--python-events/--no-python-events",
                                       help="Record the script's Python calls (torch's with_stack; the "
                                            "TensorFlow and JAX profilers record none here). Off: far fewer "
                                            "events a step."),
    profiler_memory: Optional[str] = typer.Option(None, "--profiler-memory", metavar="SIZE",
                                                  help="The most memory the profiler may add to the script's "
                                                       "process, its stop included (e.g. 8G, 500M); beyond it the "
                                                       "window ends early. Default: 80% of the memory available "
                                                       "when profiling starts."),
) -> None:
    """Profile an unmodified training script and report where each step's time goes.

    The command (python, or a launcher that starts it) runs with a start-up hook; the script is not changed.

    Steps are found in torch optimizer.step(), Keras Model.fit batches, a custom loop's tf.function / jax.jit step,
    or in an eager loop the tape, optimizer or gradient call it makes once a step.

    The profiler's memory is watched: where its events would not fit, the window ends early and says so.

    Steps A-B are profiled with the framework's own profiler; the trace and a manifest.json go to -o.

    The script's output passes through; when it fails, its exit code is traceview's.

    Example: traceview run --steps 5-15 -- python train.py --epochs 1
    """
    from traceview.commands.diagnose import report_diagnosis
    from traceview.renderers.registry import renderer

    if not command:
        raise UsageError("name the command to profile after --, e.g. traceview run -- python train.py")
    _refuse_unknown_option(command, ctx)
    renderer(format)
    if framework not in FRAMEWORKS:
        raise UsageError(f"--framework {framework!r} is not one of: {', '.join(FRAMEWORKS)}")
    first, last = _parse_steps(steps)
    memory = _parse_size(profiler_memory) if profiler_memory is not None else 0
    if report is not None and not report.parent.is_dir():
        # (checked before the script runs: its whole run would be lost to a report it cannot write)
        raise UsageError(f"--report {report}: its folder {report.parent} does not exist")
    trace_dir = _trace_dir(output, command, overwrite)

    from traceview.inject.launcher import CommandFailed, RunRequest, profile_command

    outcome = profile_command(RunRequest(tuple(command), trace_dir, first, last, framework, calibrate, python_events,
                                         memory), _say)
    for note in outcome.notes:
        _say(note)
    failed = shlex.join(command) if outcome.exit_code else ""
    if outcome.trace is None:
        if failed:
            raise CommandFailed(f"`{failed}` exited with code {outcome.exit_code} before a trace was written (before "
                                "the profiled steps, or inside them without the profiler's export: killed, or "
                                "os._exit)", outcome.exit_code)
        raise UsageError(f"no trace was written for steps {first}-{last} (see the lines above)")
    status = outcome.status or {}
    _say(f"profiled steps {outcome.first}-{min(outcome.last, int(status.get('steps_seen', outcome.last)))} of "
         f"{status.get('steps_seen')} ({status.get('framework')}: {status.get('source_detail')}): {outcome.trace}")
    report_diagnosis(outcome.trace, format=format, output=report, width=width, color=color, redact=redact,
                     dispatch_gap_us=dispatch_gap_us, top=top, strict=strict and not failed)
    if failed:
        raise CommandFailed(f"`{failed}` exited with code {outcome.exit_code}", outcome.exit_code)


# The highest step number --steps takes: far beyond any run's length, within every counter the
# hooks and the manifest (JSON written by orjson: 64-bit integers at most) keep.
MAX_STEP = 2**31 - 1


def _parse_steps(text: str) -> tuple[int, int]:
    match = _STEPS.match(text)
    if not match:
        raise UsageError(f"--steps {text!r}: use A-B, e.g. 5-15 (steps from 1)")
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if first < 1 or last < first:
        raise UsageError(f"--steps {text!r}: steps count from 1 and A must not exceed B")
    if last > MAX_STEP:
        raise UsageError(f"--steps {text!r}: a step number is at most {MAX_STEP:,}")
    return first, last


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _parse_size(text: str) -> int:
    """``8G``, ``500M``, ``2.5GB``, ``1048576`` → bytes (binary units, as memory is counted)."""
    match = _SIZE.match(text)
    size = int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]) if match else 0
    if size < 2**20:
        raise UsageError(f"--profiler-memory {text!r}: give a size of at least 1M, e.g. 8G or 500M")
    return size


def _trace_dir(output: Optional[Path], command: list[str], overwrite: bool) -> Path:
    if output is None:
        base = Path("traceview-runs") / f"{_script_stem(command)}-{time.strftime('%Y%m%d-%H%M%S')}"
        folder, n = base, 1
        while folder.exists():  # two runs in one second
            n += 1
            folder = base.with_name(f"{base.name}-{n}")
        return folder
    if output.exists() and not output.is_dir():
        raise UsageError(f"-o {output}: is a file; name a folder for the trace")
    if output.is_dir() and any(output.iterdir()):
        if not overwrite:
            raise UsageError(f"-o {output}: is not empty; pass --overwrite to replace a capture there, "
                             "or name another folder")
        from traceview.collectors.capture import remove_capture

        remove_capture(output)
    return output


def _script_stem(command: list[str]) -> str:
    """A name for the default trace folder: the script's stem, a -m module, else the program."""
    for i, arg in enumerate(command):
        if arg.endswith(".py"):
            return Path(arg).stem
        if arg == "-m" and i + 1 < len(command):
            return command[i + 1].rsplit(".", 1)[-1]
    return Path(command[0]).name or "run"


def _say(message: str) -> None:
    say(f"traceview: {message}\n")


def _refuse_unknown_option(command: list[str], ctx: typer.Context) -> None:
    """The command's first word is a program, never an option: a word starting with "-" there is
    an option of run's own that it does not have (``--stesp 5-10``), which would otherwise be
    run as the command."""
    first = command[0]
    if not first.startswith("-") or first == "-":
        return
    raise UsageError(f"no such option: {first}{unknown_option_hint(first, ctx.command)}; traceview run's options "
                     "go before --, the command after it: traceview run --steps 5-15 -- python train.py")
