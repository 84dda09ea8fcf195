"""The parent's side of ``traceview run``: run a command with the hook, collect what it captured.

:func:`profile_command` writes a ``sitecustomize.py`` (``_site.py``) into a temporary folder, puts
that folder first on the command's ``PYTHONPATH`` with the settings in ``TRACEVIEW_RUN_CONFIG``,
and runs the command with stdin, stdout and stderr passed through. Afterwards it reads the status
the profiled process wrote (:mod:`.protocol`) and writes ``manifest.json`` beside the trace with
the fields :mod:`traceview.capture_facts` reads (the profiled and, with ``calibrate``, the
unprofiled step times of the same steps), so the report shows the profiler's inflation.

When the script ran fewer steps than the window's first, the command is run once more with the
window moved onto the steps it has. ``calibrate`` runs the command once more without the profiler,
timing the same steps in the same way (the hook's ``perf_counter_ns`` around each step).
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from traceview.errors import TraceviewError, UsageError
from traceview.inject import protocol

_INJECT_DIR = Path(__file__).resolve().parent
_SITE_PLACEHOLDER = "INJECT_DIR = None  # replaced by the launcher"


@dataclass(frozen=True)
class RunRequest:
    command: tuple[str, ...]
    trace_dir: Path
    first: int = 5
    last: int = 15
    framework: str = "auto"
    calibrate: bool = False
    python_events: bool = True
    profiler_memory: int = 0  # bytes; 0: the memory guard's automatic share


@dataclass
class RunOutcome:
    exit_code: int  # the command's (128 + N when a signal N ended it)
    trace: Path | None  # the trace written, None when nothing was captured
    status: dict[str, Any] | None  # what the profiled process reported (protocol)
    first: int  # the window captured
    last: int
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] | None = None


@dataclass(frozen=True)
class _Launch:
    code: int  # the command's exit code
    status: dict[str, Any] | None  # what the profiled process reported
    imported: list[str]  # frameworks imported by processes that reached no step
    hook_loaded: bool  # whether any process of the command loaded the hook


class CommandFailed(TraceviewError):
    """The profiled command exited with a non-zero code; that code is traceview's."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def profile_command(request: RunRequest, say: Callable[[str], None]) -> RunOutcome:
    """Run ``request.command`` with the profiler on steps ``first``..``last``; ``say`` gets one-line
    progress messages (a rerun, a calibration run)."""
    trace_dir = request.trace_dir.resolve()
    settings = protocol.Settings(str(trace_dir), "", request.first, request.last, request.framework, True,
                                 request.python_events, request.profiler_memory)
    launch = _launch(request.command, settings)
    notes: list[str] = []
    if _no_step_fit_in_memory(launch.status) and launch.code == 0 and settings.python_events \
            and launch.status.get("framework") == "torch":
        notes.extend(launch.status.get("notes") or [])
        say("not one profiled step fitted in the profiler's memory with Python events: running the command "
            "again without them (--no-python-events)")
        settings = replace(settings, python_events=False)
        launch = _launch(request.command, settings)
    seen = int(launch.status.get("steps_seen", 0)) if launch.status else 0
    rerun = bool(launch.status and not launch.status.get("profiled") and launch.code == 0
                 and 0 < seen < request.first)
    if rerun:
        first = max(1, seen - (request.last - request.first))
        say(f"the script ran {seen} steps, fewer than the first one asked for ({request.first}): "
            f"running it again to capture steps {first}-{seen}")
        settings = replace(settings, first=first, last=seen)
        launch = _launch(request.command, settings)
    status = launch.status
    outcome = RunOutcome(launch.code, None, status, settings.first, settings.last, notes)
    if status is None:
        if launch.code == 0:
            raise UsageError(_no_steps_message(request, launch))
        return outcome
    outcome.first, outcome.last = int(status["first"]), int(status["last"])
    notes.extend(status.get("notes") or [])
    captured = _captured(status)
    if _no_step_fit_in_memory(status):
        raise UsageError(f"not one profiled step fitted in the profiler's memory: {(status.get('notes') or ['?'])[-1]}")
    if captured and not status.get("memory_stop") and (rerun or captured[-1] < request.last):
        notes.append(f"the script ran {status.get('steps_seen')} steps: captured steps {captured[0]}-{captured[-1]}"
                     f"{' in a second run' if rerun else ''} (asked {request.first}-{request.last})")
    if status.get("trace"):
        outcome.trace = Path(status["trace"])
    if outcome.trace is None or not captured:
        return outcome
    calibration = None
    if request.calibrate and launch.code == 0:
        say(f"calibration: running the command again without the profiler to time steps "
            f"{captured[0]}-{captured[-1]}")
        timed = _launch(request.command, replace(settings, first=captured[0], last=captured[-1], profile=False))
        calibration = timed.status if timed.code == 0 else None
        if calibration is None:
            notes.append(f"the calibration run {f'exited with code {timed.code}' if timed.code else 'found no steps'}; "
                         "no unprofiled step time")
    outcome.manifest = write_manifest(trace_dir, request, status, calibration, notes)
    return outcome


def _no_step_fit_in_memory(status: dict[str, Any] | None) -> bool:
    """Whether the memory guard stopped the profiler inside the window's first step."""
    stop = (status or {}).get("memory_stop") or {}
    return stop.get("inside_step") is not None and not _captured(status or {})


def _captured(status: dict[str, Any]) -> list[int]:
    return sorted(int(n) for n in (status.get("times_s") or {}))


def _launch(command: tuple[str, ...], settings: protocol.Settings) -> _Launch:
    """Run the command once with the hook and read what its processes wrote back."""
    with tempfile.TemporaryDirectory(prefix="traceview-run-") as tmp:
        site_dir = Path(tmp) / "site"
        status_dir = Path(tmp) / "status"
        site_dir.mkdir()
        status_dir.mkdir()
        template = (_INJECT_DIR / "_site.py").read_text(encoding="utf-8")
        (site_dir / "sitecustomize.py").write_text(
            template.replace(_SITE_PLACEHOLDER, f"INJECT_DIR = {str(_INJECT_DIR)!r}"), encoding="utf-8")
        settings = replace(settings, status_dir=str(status_dir))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site_dir), env.get("PYTHONPATH")) if p)
        env[protocol.CONFIG_ENV] = settings.to_env()
        code = _run(command, env)
        status_file = status_dir / protocol.STATUS_NAME
        status = protocol.read_json(str(status_file)) if status_file.is_file() else None
        imported: list[str] = []
        for path in sorted(status_dir.glob(f"{protocol.IMPORTED_PREFIX}*.json")):
            imported.extend(n for n in protocol.read_json(str(path)).get("imported", []) if n not in imported)
        return _Launch(code, status, imported, (status_dir / protocol.LOADED_NAME).exists())


def _run(command: tuple[str, ...], env: dict[str, str]) -> int:
    try:
        process = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        raise UsageError(f"{command[0]}: command not found") from None
    except PermissionError:
        raise UsageError(f"{command[0]}: permission denied") from None
    try:
        code = process.wait()
    except KeyboardInterrupt:
        # The terminal sent SIGINT to the command too; let it finish its own way.
        code = process.wait()
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


def _no_steps_message(request: RunRequest, launch: _Launch) -> str:
    command = shlex.join(request.command)
    imported = launch.imported
    if not launch.hook_loaded:
        return (f"`{command}` started no Python process that loaded traceview's hook: run a Python "
                "interpreter (traceview run -- python train.py), without -S, -E or -I")
    if not imported:
        return (f"`{command}` ran no training step: it imported none of torch, tensorflow, keras, jax; "
                "traceview run finds steps in those frameworks' training loops")
    if request.framework != "auto":
        return (f"`{command}` ran no {request.framework} training step; it imported {', '.join(imported)} "
                "(--framework auto takes the first framework whose step runs)")
    what = {"torch": "no torch optimizer ever stepped (optimizer.step())",
            "keras": "no Keras Model.fit train batch ran, nor a Keras optimizer applied twice at one line",
            "tensorflow": "no tf.function was called twice outside Model.fit, nor a tf.GradientTape left twice at one line",
            "jax": "no jax.jit function was called twice, nor a jax.grad / value_and_grad function at one line"}
    return f"`{command}` ran no training step: {'; '.join(what[n] for n in imported if n in what)}"


def write_manifest(trace_dir: Path, request: RunRequest, status: dict[str, Any],
                   calibration: dict[str, Any] | None, notes: list[str]) -> dict[str, Any]:
    """``manifest.json`` in ``trace_dir``, in the format ``traceview collect`` writes."""
    from traceview.collectors import manifest as mf

    trace = Path(status["trace"])
    captured = _captured(status)
    profiled = [float(status["times_s"][str(n)]) for n in captured]
    cold = [1] if captured and captured[0] == 1 else []
    steady = [n for n in captured if n not in cold]
    unprofiled = [float(calibration["times_s"][str(n)]) for n in captured
                  if calibration and str(n) in calibration.get("times_s", {})]
    unprofiled_steady = [float(calibration["times_s"][str(n)]) for n in steady
                         if calibration and str(n) in calibration.get("times_s", {})]
    med_p = _median([float(status["times_s"][str(n)]) for n in steady])
    med_u = _median(unprofiled_steady)
    facts = status.get("facts") or {}
    device = facts.get("device") or {"kind": "cpu", "name": None}
    framework = status.get("framework")
    manifest: dict[str, Any] = {
        "manifest_version": mf.MANIFEST_VERSION,
        "created": mf.now_iso(),
        "workload": {"name": "run", "description": f"traceview run -- {shlex.join(request.command)}"},
        "framework": framework,
        "mode": "run",
        "mode_help": "an unmodified script under traceview run",
        "device": {"kind": device.get("kind"), "name": device.get("name") or mf.cpu_name()},
        "host": mf.host_info(),
        "versions": facts.get("versions") or {},
        "threads": facts.get("threads") or {},
        "batch": None,
        "steps": {"total": len(captured), "cold": len(cold), "warmup": 0, "steady": len(steady)},
        "cold_steps": cold,
        "warmup_steps": [],
        "steady_steps": steady,
        "trace": {
            "path": os.path.relpath(trace, trace_dir),
            "format": status.get("trace_format"),
            "bytes": trace.stat().st_size if trace.is_file() else None,
            **(status.get("profiler") or {}),
        },
        "timing": {
            "unit": "s",
            "profiled_s": profiled,
            "unprofiled_s": unprofiled or None,
            # Per profiled step: seconds the process's threads were runnable but waited for a CPU
            # (Linux schedstat): the machine's contention, which stretches every op of the step.
            "cpu_wait_s": [float((status.get("cpu_wait_s") or {}).get(str(n), 0.0)) for n in captured]
            if status.get("cpu_wait_s") else None,
            "cold_profiled_s": profiled[0] if cold else None,
            "cold_unprofiled_s": unprofiled[0] if cold and unprofiled else None,
            "steady_median_profiled_s": med_p,
            "steady_median_unprofiled_s": med_u,
            "profiler_overhead": (med_p / med_u - 1.0) if med_p and med_u else None,
            "clock": "perf_counter_ns around each step inside the script's process; step markers open "
                     "before and close after",
            "unprofiled_note": ("the same steps in a second run of the command without the profiler (--calibrate)"
                                if med_u else "not measured (traceview run --calibrate measures it)"),
        },
        "losses": None,
        "parity": {"ok": None, "note": "not applicable: one script, no paired run"},
        "run": {
            "command": list(request.command),
            "step_source": status.get("source"),
            "step_source_detail": status.get("source_detail"),
            "steps_requested": [request.first, request.last],
            "steps_captured": [captured[0], captured[-1]] if captured else None,
            "steps_seen": status.get("steps_seen"),
        },
        "notes": list(notes),
    }
    mf.write(trace_dir, manifest)
    return manifest


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


