"""Profile your own training loop the way ``traceview collect`` does.

::

    with traceview.capture("runs/mine", framework="torch") as cap:
        for batch in data:
            with cap.step() as step:
                loss = train_step(batch)
                step.loss = float(loss)   # optional: recorded in the manifest

The profiler starts when the first profiled step begins (so setup code before the loop stays out
of the trace) and every profiled step gets the framework's step marker: ``ProfilerStep#N`` for
torch, ``Trace('train', step_num=N, _r=1)`` for TensorFlow, ``StepTraceAnnotation('train',
step_num=N)`` for JAX, with ``N`` counting the trace's steps
from 0 (the manifest's ``trace.loop_steps`` names the loop step of each). Loop step 0 is marked
cold in the manifest, since that is where tracing and compilation land. With ``max_steps`` only
the first steps are profiled; with ``schedule`` the active steps of each cycle, one trace per cycle
(:mod:`traceview.profile_schedule`). The other steps are still timed, without the profiler, which
gives the profiler's overhead for free. JAX dispatches asynchronously: end each step on something
that waits for its result (``float(loss)``, ``block_until_ready()``), as a JAX loop reading its
loss does, or the step's time lands in a later step.

Output layout (the same as one ``traceview collect`` folder): torch writes
``<path>/<host>_<pid>.<ms>.pt.trace.json.gz``; TensorFlow and JAX write the TensorBoard layout
``<path>/plugins/profile/<run>/<host>.xplane.pb`` (a run per trace: ``traceview diagnose <path>``
reads the newest, ``--run NAME`` another); both write ``<path>/manifest.json``, whose ``traces``
list every trace.

torch, TensorFlow and JAX are imported only when a capture for them starts. This module is the
collectors' (it drives their profiler sessions and writes their manifest); the package's
``traceview.capture`` loads it on first use.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from traceview.errors import UsageError
from traceview.profile_schedule import PROFILED, Action, Schedule, actions_of, first_steps

_FRAMEWORK_ALIASES = {"torch": "torch", "pytorch": "torch", "tf": "tf", "tensorflow": "tf", "jax": "jax"}
# Each collector module's check of the device name (it raises RuntimeError for one it cannot use).
_DEVICE_CHECKS = {"torch": "torch_device", "tf": "tf_device", "jax": "jax_device"}


class StepHandle:
    """What ``with cap.step() as step`` gives: set ``step.loss`` to have it recorded."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.loss: float | None = None


class _StepContext:
    def __init__(self, cap: Capture) -> None:
        self._cap = cap
        self._handle: StepHandle | None = None

    def __enter__(self) -> StepHandle:
        self._handle = self._cap._begin_step()
        return self._handle

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._handle is not None
        self._cap._end_step(self._handle)


@dataclass
class _Window:
    """One profiler session over consecutive active steps: one trace."""

    session: Any
    recorder: Any  # StepRecorder with the session's step markers (numbered from 0 in the trace)
    loop_steps: list[int] = field(default_factory=list)  # the loop's step index of each marker
    trace_file: Path | None = None


# TensorFlow's CPU allocator records allocations only when it is the BFC allocator: TF reads this
# variable when it creates its CPU device (tensorflow/core/common_runtime/process_state.cc).
TF_CPU_BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
_TF_TRUE = ("1", "true")  # what TF's ReadBoolFromEnvVar takes as true (case-insensitive)


class Capture:
    """A profiling session around a user's loop; use :func:`capture` to make one."""

    def __init__(
        self,
        path: str | Path,
        framework: str,
        *,
        device: str = "cpu",
        max_steps: int | None = None,
        schedule: Any = None,
        overwrite: bool = False,
        description: str = "",
        python_events: bool | None = None,
        memory: bool = False,
    ) -> None:
        fw = _FRAMEWORK_ALIASES.get(framework.lower())
        if fw is None:
            raise UsageError(f"capture(framework={framework!r}): use 'torch', 'tf' or 'jax'")
        if memory and fw == "jax":
            raise UsageError("capture(memory=True): JAX's profiler records no allocation events that traceview "
                             "reads; capture without memory=True")
        if max_steps is not None and max_steps < 1:
            raise UsageError(f"capture(max_steps={max_steps}): must be at least 1")
        if max_steps is not None and schedule is not None:
            raise UsageError("capture: pass max_steps or schedule, not both "
                             "(max_steps=N is schedule=traceview.schedule(wait=0, warmup=0, active=N, repeat=1))")
        if memory and fw == "tf" and device == "cpu" \
                and os.environ.get(TF_CPU_BFC_VARIABLE, "").lower() not in _TF_TRUE:
            raise UsageError(f"capture(memory=True): TensorFlow records CPU allocations only with its BFC allocator; "
                             f"set {TF_CPU_BFC_VARIABLE}=true in the environment before TensorFlow creates its "
                             f"CPU device (before the first op runs; in a notebook, restart the kernel)")
        self.path = Path(path)
        self.python_events = python_events  # None: the framework's default (resolved on entry)
        self.memory = memory
        self.framework = fw
        self.device = device
        self.max_steps = max_steps
        if schedule is None:
            self._action, self.schedule = first_steps(max_steps), None
        else:
            self._action, self.schedule = actions_of(schedule)
        self.overwrite = overwrite
        self.description = description
        self.manifest: dict[str, Any] | None = None
        self.trace_file: Path | None = None  # the first trace (the only one without a repeating schedule)
        self.trace_files: list[Path] = []  # every trace, one per profiled window
        self._backend: Any = None
        self._entered = False
        self._window: _Window | None = None  # the profiler session running now
        self._windows: list[_Window] = []  # the finished ones
        self._after: Any = None  # StepRecorder without markers (the steps run without the profiler)
        self._after_steps: list[int] = []  # the loop's step index of each of them
        self._after_stop: set[int] = set()  # loop steps that follow a profiler stop
        self._next = 0

    # -- context manager ------------------------------------------------------------------------
    def __enter__(self) -> Capture:
        from traceview.collectors.harness import StepRecorder
        from traceview.collectors.manifest import MANIFEST_NAME
        from traceview.collectors.runner import load_backend

        if (self.path / MANIFEST_NAME).exists():
            if not self.overwrite:
                raise UsageError(f"{self.path} already holds a capture; pass overwrite=True or choose another path")
            remove_capture(self.path)
        self._backend = load_backend(self.framework)  # MissingExtraError when not installed
        check_device = getattr(self._backend, _DEVICE_CHECKS[self.framework])
        if self.python_events is None:
            self.python_events = bool(self._backend.python_events_default("user"))
        try:
            check_device(self.device)
        except RuntimeError as err:
            raise UsageError(f"capture(device={self.device!r}): {err}") from err
        self.path.mkdir(parents=True, exist_ok=True)
        self._after = StepRecorder()
        self._entered = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        error = None
        if exc_type is not None:
            error = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        self._stop_profiler()
        if self._windows and self._windows[0].recorder.steps:
            self._write_manifest(error)

    # -- steps ----------------------------------------------------------------------------------
    def step(self) -> _StepContext:
        """Context manager around one training step."""
        if not self._entered:
            raise UsageError("cap.step() used outside `with traceview.capture(...) as cap:`")
        return _StepContext(self)

    @property
    def steps(self) -> int:
        return self._next

    def _begin_step(self) -> StepHandle:
        index = self._next
        if self._action(index) in PROFILED:
            if self._window is None:
                self._window = self._start_window()
            window = self._window
            window.recorder.begin(len(window.loop_steps))
            window.loop_steps.append(index)
        else:
            if self._window is not None:  # a schedule function that ended a window without saving it
                self._stop_profiler()
                self._after_stop.add(index)
            self._after.begin(len(self._after_steps))
            self._after_steps.append(index)
        return StepHandle(index)

    def _end_step(self, handle: StepHandle) -> None:
        index = handle.index
        window = self._window
        if window is not None and window.loop_steps and window.loop_steps[-1] == index:
            window.recorder.end(len(window.loop_steps) - 1, handle.loss)
            if self._action(index) == Action.SAVE:
                self._stop_profiler()
                self._after_stop.add(index + 1)
        else:
            self._after.end(len(self._after_steps) - 1, handle.loss)
        self._next += 1

    def _start_window(self) -> _Window:
        from traceview.collectors.harness import StepRecorder

        session = self._backend.profiler_session(self.path, self.device, python_events=self.python_events,
                                                 memory=self.memory)
        try:
            session.start()
        except RuntimeError as err:  # e.g. another TensorFlow profiler session is running
            raise UsageError(f"traceview.capture: {err}") from err
        return _Window(session=session, recorder=StepRecorder(markers=session))

    def _stop_profiler(self) -> None:
        window, self._window = self._window, None
        if window is None:
            return
        window.trace_file = window.session.stop()
        self._windows.append(window)
        self.trace_files.append(window.trace_file)
        if self.trace_file is None:
            self.trace_file = window.trace_file

    # -- manifest -------------------------------------------------------------------------------
    def _write_manifest(self, error: str | None) -> None:
        from traceview.collectors import manifest as mf
        from traceview.collectors.harness import median

        windows = self._windows
        first = windows[0]
        after = self._after
        # Loop step 0 is cold (tracing and compilation happen there): a trace holding it marks it.
        traces = [self._trace_entry(w) for w in windows if w.trace_file is not None]
        cold = traces[0]["cold_steps"] if traces else ([0] if first.loop_steps[0] == 0 else [])
        n = first.recorder.steps
        steady = [i for i in range(n) if i not in cold]
        profiled_s = [t for w in windows for t in w.recorder.times_s]
        profiled_steps = [i for w in windows for i in w.loop_steps]
        med_p = median([t for t, i in zip(profiled_s, profiled_steps) if i != 0])
        # Unprofiled steps for the overhead: not loop step 0 (cold), not the first after a profiler stop.
        med_u = median([t for t, i in zip(after.times_s, self._after_steps) if i != 0 and i not in self._after_stop])
        unprofiled_note = ("steps run without the profiler, timed (loop step 0 and the first step after each "
                           "profiler stop excluded from the median)" if after.steps
                           else "no unprofiled steps (max_steps / schedule not set, or every step profiled)")
        manifest: dict[str, Any] = {
            "manifest_version": mf.MANIFEST_VERSION,
            "created": mf.now_iso(),
            "workload": {"name": "user", "description": self.description or "user training loop (traceview.capture)"},
            "framework": self.framework,
            "mode": "user",
            "mode_help": "the user's own loop under traceview.capture",
            "device": {"kind": self.device, "name": self._backend.device_name(self.device)},
            "host": mf.host_info(),
            "versions": {**mf.base_versions(), **self._backend.versions()},
            "threads": _current_threads(self.framework),
            "batch": None,
            "steps": {"total": n, "cold": len(cold), "warmup": 0, "steady": len(steady)},
            "cold_steps": cold,
            "warmup_steps": [],
            "steady_steps": steady,
            "trace": traces[0] if traces else None,
            "traces": traces,
            "schedule": self._schedule_entry(),
            "timing": {
                "unit": "s",
                "profiled_s": profiled_s,
                "profiled_loop_steps": profiled_steps,
                "unprofiled_s": after.times_s or None,
                "unprofiled_loop_steps": self._after_steps or None,
                "cold_profiled_s": first.recorder.times_s[0] if cold else None,
                "cold_unprofiled_s": None,
                "steady_median_profiled_s": med_p,
                "steady_median_unprofiled_s": med_u,
                "profiler_overhead": (med_p / med_u - 1.0) if med_p and med_u else None,
                "clock": "time.perf_counter_ns around each step; step markers open before and close after",
                "unprofiled_note": unprofiled_note,
            },
            "losses": {"profiled": [x for w in windows for x in w.recorder.losses], "unprofiled": after.losses or None},
            "parity": {"ok": None, "note": "not applicable: a user loop has no paired run"},
            "notes": ["loop step 0 is marked cold where a trace holds it: tracing and compilation, if any, happen there",
                      "step markers count each trace's steps from 0; trace.loop_steps names the loop's step of each"],
        }
        if error:
            manifest["error"] = error
        mf.write(self.path, manifest)
        self.manifest = manifest

    def _trace_entry(self, window: _Window) -> dict[str, Any]:
        assert window.trace_file is not None
        return {
            "path": window.trace_file.relative_to(self.path).as_posix(),
            "format": window.session.trace_format,
            "bytes": window.trace_file.stat().st_size,
            "loop_steps": window.loop_steps,
            "cold_steps": [0] if window.loop_steps and window.loop_steps[0] == 0 else [],
            **window.session.describe(),
        }

    def _schedule_entry(self) -> dict[str, Any] | None:
        if self.schedule is None:
            return None if self.max_steps is None else {"max_steps": self.max_steps}
        return {**self.schedule, "note": "waiting and warm-up steps run without the profiler; each cycle's "
                                         "active steps are one trace"}


def remove_capture(path: Path) -> None:
    """Delete what an earlier capture wrote into ``path``, and nothing else: its manifest.json,
    torch's ``*.pt.trace.json*`` files and the TensorBoard ``plugins/profile`` runs (what
    ``capture(..., overwrite=True)`` and ``traceview run --overwrite`` replace)."""
    import shutil

    from traceview.collectors.manifest import MANIFEST_NAME

    (path / MANIFEST_NAME).unlink(missing_ok=True)
    for old in path.glob("*.pt.trace.json*"):
        old.unlink()
    shutil.rmtree(path / "plugins" / "profile", ignore_errors=True)


def _current_threads(framework: str) -> dict[str, Any]:
    """Thread settings as the user's process has them (capture does not change them)."""
    if framework == "torch":
        import torch

        return {"torch_intra_op": torch.get_num_threads(), "torch_inter_op": torch.get_num_interop_threads()}
    if framework == "jax":
        return {"xla_flags": os.environ.get("XLA_FLAGS", ""),
                "xla_threads_note": "XLA's CPU backend sizes its own thread pools (one per core) unless XLA_FLAGS "
                                    "say otherwise"}
    import tensorflow as tf

    return {
        "tf_intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        "tf_threads_note": "0 means TensorFlow's default (one per core)",
    }


def capture(
    path: str | Path,
    framework: str = "torch",
    *,
    device: str = "cpu",
    max_steps: int | None = None,
    schedule: Schedule | Mapping[str, int] | Callable[[int], Any] | None = None,
    overwrite: bool = False,
    description: str = "",
    python_events: bool | None = None,
    memory: bool = False,
) -> Capture:
    """Profile a user's training loop into ``path`` (use as a context manager).

    ``framework`` is ``"torch"``, ``"tf"`` or ``"jax"``; ``device`` ``"cpu"`` or ``"cuda"`` (torch
    adds CUDA activity; TensorFlow and JAX record GPUs on their own). ``max_steps`` bounds the profiled window; the
    remaining steps are timed without the profiler. ``schedule`` picks the profiled steps instead,
    as torch.profiler.schedule does: ``traceview.schedule(wait=1, warmup=1, active=3, repeat=2)``
    (or a dict of those, or ``torch.profiler.schedule(...)`` itself) profiles each cycle's active
    steps into a trace of their own, in every framework alike; waiting and warm-up steps run
    without the profiler (``traceview/profile_schedule.py``). Raises
    :class:`~traceview.errors.MissingExtraError` when the framework is not installed and
    :class:`~traceview.errors.UsageError` when ``path`` already holds a capture (unless
    ``overwrite``: re-running a notebook cell). ``python_events`` (torch: ``with_stack=True``;
    on by default for torch) records Python frames, so the user's own code between framework ops
    is told apart from the framework's; it slows Python-heavy steps ~1.3–1.6×
    (benchmarks/truth/README.md) — pass False for a torch.compile loop, whose compiler's Python
    would fill the trace. JAX's Python tracer (off by default) records every call JAX's tracing
    makes, under base file names only; TensorFlow records no Python events. ``memory`` records every
    allocation and free; the report then shows peak memory per step and the ops that allocate
    most. torch: ``profile_memory=True``. TensorFlow records allocations by itself through its BFC
    allocators — on GPUs always, on the CPU only when ``TF_CPU_ALLOCATOR_USE_BFC=true`` was set
    before TensorFlow created its CPU device (its default CPU allocator records none), which
    ``memory=True`` on the CPU requires; JAX records none that traceview reads.
    """
    return Capture(path, framework, device=device, max_steps=max_steps, schedule=schedule, overwrite=overwrite,
                   description=description, python_events=python_events, memory=memory)
