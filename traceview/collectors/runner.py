"""Capture paired workloads: one folder per (framework, mode), each with its trace and manifest.

:func:`capture_pair` is one capture, in this process:

1. the profiled run — fresh model from the spec's initial weights, the profiler started before
   step 0, so the cold step (tracing, compilation, graph setup) lies inside the trace; every step
   carries the framework's step marker;
2. the unprofiled run — a fresh model again (compiled state dropped with the backend's
   ``reset``), the same steps timed without the profiler, so profiler overhead is visible;
3. the parity run — only where the workload's parity variant differs (dropout off).

:func:`collect` plans the pairs of one workload, runs each capture (by default each in a fresh
Python process, so no capture inherits another's warmed caches or cold-start costs), then checks
loss parity across all of them and the eager reference runs and writes the verdict into every
manifest.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from traceview.collectors import manifest as mf
from traceview.collectors import parity
from traceview.collectors.harness import StepRecorder, median
from traceview.collectors.workloads import (
    DEVICE_MODES,
    EXPLICIT_MODES,
    FRAMEWORKS,
    MODE_HELP,
    MODES,
    WorkloadSpec,
    cold_step_count,
    get,
    materialize,
    not_applicable,
    pairs,
)
from traceview.errors import MissingExtraError, TraceviewError, UsageError, install_hint

BACKEND_MODULES: dict[str, str] = {
    "torch": "traceview.collectors.torch_collector",
    "tf": "traceview.collectors.tf_collector",
    "jax": "traceview.collectors.jax_collector",
    "numpy": "traceview.collectors.numpy_baseline",
}
# framework -> (what is missing, the traceview extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {"torch": ("torch", "torch"), "tf": ("tensorflow", "tf"), "jax": ("jax", "jax")}
_IMPORT_NAMES: dict[str, str] = {"torch": "torch", "tf": "tensorflow", "jax": "jax", "numpy": "numpy"}
# Top-level modules whose absence means the framework's extra is missing (not a traceview bug).
_EXTRA_MODULES: frozenset[str] = frozenset({"torch", "tensorflow", "keras", "jax", "jaxlib"})

_captures_in_process = 0


class ModeUnavailable(TraceviewError):
    """A (framework, mode) pair that exists for the workload but cannot run on this machine."""


def default_threads() -> int:
    return os.cpu_count() or 1


def framework_installed(framework: str) -> bool:
    """Cheap check (no import) used for planning and for ``--list``."""
    return importlib.util.find_spec(_IMPORT_NAMES[framework]) is not None


def load_backend(framework: str) -> ModuleType:
    """Import a collector module; a missing framework becomes :class:`MissingExtraError`."""
    if framework not in BACKEND_MODULES:
        raise UsageError(f"unknown framework {framework!r} (known: {', '.join(FRAMEWORKS)})")
    if framework in EXTRAS and not framework_installed(framework):
        raise MissingExtraError(*EXTRAS[framework])
    try:
        return importlib.import_module(BACKEND_MODULES[framework])
    except ImportError as err:
        root = (err.name or "").split(".")[0]
        if framework in EXTRAS and root in _EXTRA_MODULES:
            raise MissingExtraError(*EXTRAS[framework]) from err
        raise


# ---------------------------------------------------------------------------------------------
# One capture
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaptureSettings:
    """How many steps, on what device, with how many threads. ``None`` takes the workload default."""

    steps: int | None = None
    warmup: int | None = None
    device: str = "cpu"
    threads: int = field(default_factory=default_threads)
    # False skips the unprofiled timing run (quicker; the manifest then has no overhead figures).
    unprofiled: bool = True

    def validate(self) -> None:
        if self.steps is not None and self.steps < 1:
            raise UsageError(f"--steps must be at least 1, got {self.steps}")
        if self.warmup is not None and self.warmup < 0:
            raise UsageError(f"--warmup must be 0 or more, got {self.warmup}")
        if self.threads < 1:
            raise UsageError(f"--threads must be at least 1, got {self.threads}")
        if self.device not in ("cpu", "cuda", "gpu"):
            raise UsageError(f"--device must be cpu or cuda, got {self.device!r}")


def _run_profiled(
    backend: ModuleType, program: Any, folder: Path, device: str, total: int, python_events: bool
) -> tuple[StepRecorder, Path, Any]:
    session = backend.profiler_session(folder, device, python_events=python_events)
    recorder = StepRecorder(markers=session)
    session.start()
    try:
        program.run(total, recorder)
    except BaseException:
        try:
            session.stop()
        except Exception:  # the run's own error is the one to report
            pass
        raise
    trace_file = session.stop()
    return recorder, trace_file, session


def capture_pair(
    spec: WorkloadSpec, framework: str, mode: str, folder: Path, settings: CaptureSettings | None = None
) -> dict[str, Any]:
    """Capture one (framework, mode) of ``spec`` into ``folder``; return the manifest written.

    The manifest's ``parity`` block is left pending (``ok: null``); :func:`collect` fills it in
    once every capture and reference run of the workload is known.
    """
    global _captures_in_process
    settings = settings or CaptureSettings()
    settings.validate()
    why = not_applicable(spec, framework, mode)
    if why:
        raise UsageError(f"{spec.name}: {framework}-{mode} does not exist: {why}")
    backend = load_backend(framework)
    reason = backend.mode_unavailable(mode)
    needs = DEVICE_MODES.get((framework, mode))
    if needs is not None and settings.device != needs:
        reason = f"it runs on --device {needs} only"
    if reason:
        raise ModeUnavailable(f"{framework}-{mode} is unavailable here: {reason}")
    try:
        thread_info = backend.configure(settings.threads, settings.device)
    except RuntimeError as err:
        raise UsageError(str(err)) from err
    environment = backend.environment(mode)
    first_in_process = _captures_in_process == 0
    _captures_in_process += 1

    n_cold = cold_step_count(framework, mode)
    warmup = spec.warmup if settings.warmup is None else settings.warmup
    steady = spec.steps if settings.steps is None else settings.steps
    total = n_cold + warmup + steady
    cold_steps = list(range(n_cold))
    warmup_steps = list(range(n_cold, n_cold + warmup))
    steady_steps = list(range(n_cold + warmup, total))

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = materialize(spec)

    program = backend.build_program(spec, state, mode, settings.device)
    profiled, trace_file, session = _run_profiled(backend, program, folder, settings.device, total,
                                                  backend.python_events_default(mode))
    compile_report = backend.compile_report(mode)

    unprofiled: StepRecorder | None = None
    if settings.unprofiled:
        backend.reset()
        program = backend.build_program(spec, state, mode, settings.device)
        unprofiled = StepRecorder()
        program.run(total, unprofiled)

    n_parity = min(spec.parity_steps, total)
    if spec.parity_same_as_run:
        source = unprofiled if unprofiled is not None else profiled
        parity_losses = [float(v) for v in source.losses[:n_parity] if v is not None]
        parity_source = "unprofiled run" if unprofiled is not None else "profiled run"
    else:
        backend.reset()
        variant = spec.parity_variant()
        program = backend.build_program(variant, materialize(variant), mode, settings.device)
        rec = StepRecorder()
        program.run(n_parity, rec)
        parity_losses = [float(v) for v in rec.losses if v is not None]
        parity_source = "separate parity run (parity variant)"
    del program

    med_p = median([profiled.times_s[i] for i in steady_steps])
    med_u = median([unprofiled.times_s[i] for i in steady_steps]) if unprofiled is not None else None
    same_losses = None
    if unprofiled is not None and spec.parity_same_as_run:
        diffs = [
            parity.rel_diff(a, b, spec.parity_atol)
            for a, b in zip(profiled.losses, unprofiled.losses)
            if a is not None and b is not None
        ]
        same_losses = bool(diffs) and max(diffs) <= spec.parity_rtol

    manifest: dict[str, Any] = {
        "manifest_version": mf.MANIFEST_VERSION,
        "created": mf.now_iso(),
        "workload": spec.to_dict(),
        "framework": framework,
        "mode": mode,
        "mode_help": MODE_HELP[(framework, mode)],
        "device": {"kind": settings.device, "name": backend.device_name(settings.device)},
        "host": mf.host_info(),
        "versions": {**mf.base_versions(), **backend.versions()},
        "threads": {"requested": settings.threads, **thread_info},
        "environment": environment,
        "compile_report": compile_report,
        "process": {
            "pid": os.getpid(),
            "first_capture_in_process": first_in_process,
            "note": "a capture that is not the first in its process may find framework caches warm",
        },
        "batch": spec.batch,
        "steps": {"total": total, "cold": n_cold, "warmup": warmup, "steady": steady},
        "cold_steps": cold_steps,
        "warmup_steps": warmup_steps,
        "steady_steps": steady_steps,
        "trace": {
            "path": trace_file.relative_to(folder).as_posix(),
            "format": session.trace_format,
            "bytes": trace_file.stat().st_size,
            **session.describe(),
        },
        "timing": {
            "unit": "s",
            "profiled_s": profiled.times_s,
            "unprofiled_s": unprofiled.times_s if unprofiled is not None else None,
            "cold_profiled_s": sum(profiled.times_s[i] for i in cold_steps),
            "cold_unprofiled_s": sum(unprofiled.times_s[i] for i in cold_steps) if unprofiled is not None else None,
            "steady_median_profiled_s": med_p,
            "steady_median_unprofiled_s": med_u,
            "profiler_overhead": (med_p / med_u - 1.0) if med_p and med_u else None,
            "clock": "time.perf_counter_ns around each step; step markers open before and close after",
            "unprofiled_note": (
                "fresh model from the same initial weights, run after the profiled run in the same process: "
                "its cold step can reuse process-wide caches (kernel registrations, on-disk compile caches), "
                "so compare steady steps"
                if unprofiled is not None
                else "unprofiled run skipped (CaptureSettings.unprofiled=False)"
            ),
        },
        "losses": {
            "profiled": profiled.losses,
            "unprofiled": unprofiled.losses if unprofiled is not None else None,
            "profiled_equals_unprofiled": same_losses,
        },
        "parity": {
            "ok": None,
            "pending": True,
            "steps": n_parity,
            "source": parity_source,
            "losses": {parity.label(framework, mode): parity_losses},
        },
        "notes": backend.mode_notes(mode),
    }
    mf.write(folder, manifest)
    return manifest


def reference_losses(spec: WorkloadSpec, framework: str, settings: CaptureSettings) -> list[float]:
    """Losses of the parity variant in ``framework``'s reference mode, unprofiled."""
    backend = load_backend(framework)
    backend.configure(settings.threads, settings.device)
    variant = spec.parity_variant()
    mode = parity.REFERENCE_MODES[framework]
    program = backend.build_program(variant, materialize(variant), mode, settings.device)
    rec = StepRecorder()
    program.run(spec.parity_steps, rec)
    backend.reset()
    return [float(v) for v in rec.losses if v is not None]


# ---------------------------------------------------------------------------------------------
# A workload's captures
# ---------------------------------------------------------------------------------------------


@dataclass
class PairOutcome:
    framework: str
    mode: str
    folder: Path
    manifest: dict[str, Any] | None = None
    skipped: str | None = None
    error: str | None = None

    @property
    def label(self) -> str:
        return parity.label(self.framework, self.mode)


def _split(value: str | None) -> list[str] | None:
    """``"torch, tf"`` -> ``["torch", "tf"]``; ``None``/``"all"`` -> ``None`` (everything)."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items or items == ["all"]:
        return None
    return items


def plan(
    spec: WorkloadSpec, frameworks: str | None, modes: str | None
) -> tuple[list[tuple[str, str]], list[str]]:
    """The pairs to capture and a message for each explicitly asked pair that cannot be.

    Pairs for frameworks that are not installed are dropped with a message when the frameworks
    were left to default, and raise :class:`MissingExtraError` when named explicitly.
    """
    fw_list = _split(frameworks)
    mode_list = _split(modes)
    for fw in fw_list or []:
        if fw not in MODES:
            raise UsageError(f"unknown framework {fw!r} (known: {', '.join(FRAMEWORKS)})")
    known_modes = {m for ms in (*MODES.values(), *EXPLICIT_MODES.values()) for m in ms}
    for m in mode_list or []:
        if m not in known_modes:
            raise UsageError(f"unknown mode {m!r} (known: {', '.join(sorted(known_modes))})")
    chosen: list[tuple[str, str]] = []
    messages: list[str] = []
    for fw in fw_list or list(FRAMEWORKS):
        for mode in mode_list or list(MODES[fw]):
            why = not_applicable(spec, fw, mode)
            if why:
                if fw_list is not None or mode_list is not None:
                    messages.append(f"skipped {fw}-{mode}: {why}")
                continue
            chosen.append((fw, mode))
    installed: list[tuple[str, str]] = []
    for fw, mode in chosen:
        if fw in EXTRAS and not framework_installed(fw):
            if fw_list is not None:
                raise MissingExtraError(*EXTRAS[fw])
            msg = f"skipped {fw}: {EXTRAS[fw][0]} is not installed ({install_hint(EXTRAS[fw][1])})"
            if msg not in messages:
                messages.append(msg)
            continue
        installed.append((fw, mode))
    return installed, messages


def _prepare_folder(folder: Path, overwrite: bool) -> None:
    if folder.exists() and any(folder.iterdir()):
        if not overwrite:
            raise UsageError(f"{folder} already holds a capture; pass --overwrite or choose another --output")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)


def _capture_isolated(
    spec: WorkloadSpec, framework: str, mode: str, folder: Path, settings: CaptureSettings
) -> dict[str, Any]:
    """Run :func:`capture_pair` in a fresh interpreter (``python -m traceview.collectors.worker``)."""
    job = {
        "workload": spec.name,
        "framework": framework,
        "mode": mode,
        "folder": str(folder),
        "steps": settings.steps,
        "warmup": settings.warmup,
        "device": settings.device,
        "threads": settings.threads,
        "unprofiled": settings.unprofiled,
    }
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    proc = subprocess.run(
        [sys.executable, "-m", "traceview.collectors.worker", json.dumps(job)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        if proc.returncode == 3:
            raise ModeUnavailable(last)
        raise TraceviewError(f"{framework}-{mode} capture failed: {last}")
    return mf.read(folder)


def collect(
    workload: str | WorkloadSpec,
    output: Path,
    frameworks: str | None = None,
    modes: str | None = None,
    settings: CaptureSettings | None = None,
    *,
    isolate: bool = True,
    overwrite: bool = False,
    console: Any = None,
    leave_out: Collection[str] = (),
) -> list[PairOutcome]:
    """Capture every planned pair of one workload under ``output/<framework>-<mode>/``.

    Returns one outcome per planned pair; captures that fail are reported in their outcome and
    the others still run. Loss parity is checked at the end and written into each manifest.
    ``leave_out`` names pairs (``"torch-compile"``) to drop from the plan without a message.
    """
    spec = workload if isinstance(workload, WorkloadSpec) else _get_spec(workload)
    settings = settings or CaptureSettings()
    settings.validate()
    say = _Say(console)
    chosen, messages = plan(spec, frameworks, modes)
    chosen = [(fw, m) for fw, m in chosen if parity.label(fw, m) not in leave_out]
    for msg in messages:
        say.note(msg)
    if not chosen:
        raise UsageError(f"nothing to capture for {spec.name} with --framework {frameworks} --mode {modes}")
    output = Path(output)
    outcomes: list[PairOutcome] = []
    for fw, mode in chosen:
        folder = output / parity.label(fw, mode)
        _prepare_folder(folder, overwrite)
        outcome = PairOutcome(fw, mode, folder)
        n_cold = cold_step_count(fw, mode)
        warmup = spec.warmup if settings.warmup is None else settings.warmup
        steady = spec.steps if settings.steps is None else settings.steps
        say.progress(f"{spec.name} {outcome.label}: {n_cold} cold + {warmup} warm-up + {steady} steady steps")
        try:
            if isolate:
                outcome.manifest = _capture_isolated(spec, fw, mode, folder, settings)
            else:
                outcome.manifest = capture_pair(spec, fw, mode, folder, settings)
        except ModeUnavailable as err:
            outcome.skipped = str(err)
            say.note(f"skipped {err}")
            shutil.rmtree(folder, ignore_errors=True)
            outcomes.append(outcome)
            continue
        except MissingExtraError:
            raise
        except Exception as err:  # keep going: one broken mode should not lose the others
            outcome.error = f"{type(err).__name__}: {err}" if not isinstance(err, TraceviewError) else str(err)
            say.error(f"{outcome.label} failed: {outcome.error}")
            outcomes.append(outcome)
            continue
        say.done(_summary(outcome))
        outcomes.append(outcome)
    apply_parity(spec, outcomes, settings, say)
    return outcomes


def _get_spec(name: str) -> WorkloadSpec:
    try:
        return get(name)
    except KeyError as err:
        raise UsageError(str(err.args[0])) from None


def apply_parity(spec: WorkloadSpec, outcomes: list[PairOutcome], settings: CaptureSettings, say: Any = None) -> None:
    """Compare every capture's losses with each framework's reference run; update the manifests on disk."""
    say = say if isinstance(say, _Say) else _Say(say)
    captured = [o for o in outcomes if o.manifest is not None]
    if not captured:
        return
    references: dict[str, list[float]] = {}
    missing: list[str] = []
    for o in captured:
        assert o.manifest is not None
        if o.mode == parity.REFERENCE_MODES[o.framework]:
            references[o.label] = o.manifest["parity"]["losses"][o.label]
    for fw in FRAMEWORKS:
        ref_mode = parity.REFERENCE_MODES[fw]
        ref = parity.label(fw, ref_mode)
        if ref in references or not_applicable(spec, fw, ref_mode):
            continue
        if fw in EXTRAS and not framework_installed(fw):
            missing.append(f"{ref}: {EXTRAS[fw][0]} is not installed")
            continue
        try:
            references[ref] = reference_losses(spec, fw, settings)
        except Exception as err:  # a reference that cannot run leaves the others standing
            missing.append(f"{ref}: reference run failed ({type(err).__name__}: {err})")
    for o in captured:
        assert o.manifest is not None
        own = o.manifest["parity"]["losses"][o.label]
        result = parity.check(spec, o.label, own, references, missing)
        block = result.to_dict()
        block["source"] = o.manifest["parity"].get("source")
        o.manifest["parity"] = block
        mf.write(o.folder, o.manifest)
        if result.ok is False:
            for line in result.mismatches():
                say.warn(f"LOSS PARITY MISMATCH {spec.name}: {line}")
        elif result.ok is None:
            why = "; ".join(missing)
            say.warn(f"loss parity of {spec.name} {o.label} not checked: nothing to compare with ({why})")
    oks = [o.manifest["parity"]["ok"] for o in captured if o.manifest]
    if all(v is True for v in oks):
        worst = max(
            (d for o in captured if o.manifest for d in o.manifest["parity"]["max_rel_diff"].values()),
            default=0.0,
        )
        say.note(
            f"loss parity {spec.name}: ok over {len(captured)} capture(s) and {len(references)} reference(s), "
            f"max relative difference {worst:.1e}"
        )


def _summary(outcome: PairOutcome) -> str:
    m = outcome.manifest or {}
    timing = m.get("timing", {})
    trace = m.get("trace", {})

    def ms(v: float | None) -> str:
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v * 1e3:.3g} ms"

    fallbacks = (m.get("compile_report") or {}).get("fell_back_to_eager") or []
    fell_back = f"; dynamo fell back to eager ({'; '.join(fallbacks)})" if fallbacks else ""
    return (
        f"{outcome.label}: {trace.get('path')} ({trace.get('bytes', 0) / 1024:.0f} KiB); "
        f"cold {ms(timing.get('cold_profiled_s'))}, "
        f"steady median {ms(timing.get('steady_median_profiled_s'))} profiled / "
        f"{ms(timing.get('steady_median_unprofiled_s'))} unprofiled{fell_back}"
    )


class _Say:
    """Progress and warnings on stderr through rich (or nowhere when ``console`` is False)."""

    def __init__(self, console: Any) -> None:
        if console is None:
            from traceview.renderers.console import console as make_console

            console = make_console(stderr=True, highlight=False, soft_wrap=True)
        self.console = console or None

    def _print(self, text: str, style: str = "") -> None:
        if self.console is not None:
            self.console.print(text, style=style or None, markup=False)

    def progress(self, text: str) -> None:
        self._print(f"capturing {text}")

    def done(self, text: str) -> None:
        self._print(f"  wrote {text}", "green")

    def note(self, text: str) -> None:
        self._print(text, "dim")

    def warn(self, text: str) -> None:
        self._print(f"warning: {text}", "bold red")

    def error(self, text: str) -> None:
        self._print(f"error: {text}", "bold red")


def availability(framework: str, mode: str) -> str | None:
    """Why a pair cannot run here without importing the framework (for ``--list``); ``None`` if it can."""
    if framework in EXTRAS and not framework_installed(framework):
        return f"{EXTRAS[framework][0]} not installed"
    if framework == "torch" and mode == "compile":
        if not (os.environ.get("CXX") or any(shutil.which(c) for c in ("g++", "clang++", "c++"))):
            return "needs a C++ compiler"
    return None


def all_pairs() -> dict[str, list[tuple[str, str]]]:
    from traceview.collectors.workloads import WORKLOADS

    return {name: pairs(spec) for name, spec in WORKLOADS.items()}
