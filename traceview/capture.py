"""Profile your own training loop the way ``traceview collect`` does.

::

    with traceview.capture("runs/mine", framework="torch") as cap:
        for batch in data:
            with cap.step() as step:
                loss = train_step(batch)
                step.loss = float(loss)   # optional: recorded in the manifest

The profiler starts when the first step begins (so setup code before the loop stays out of
the trace) and every step gets the framework's step marker: ``ProfilerStep#N`` for torch,
``Trace('train', step_num=N, _r=1)`` for TensorFlow, with ``N`` the step index from 0. The
first step is marked cold in the manifest, since that is where tracing and compilation land.
With ``max_steps`` only the first steps are profiled; later steps are still timed, without the
profiler, which gives the profiler's overhead for free.

Output layout (the same as one ``traceview collect`` folder): torch writes
``<path>/<host>_<pid>.<ms>.pt.trace.json.gz``; TensorFlow writes the TensorBoard layout
``<path>/plugins/profile/<run>/<host>.xplane.pb``; both write ``<path>/manifest.json``.

torch and TensorFlow are imported only when a capture for them starts.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from traceview.errors import UsageError

_FRAMEWORK_ALIASES = {"torch": "torch", "pytorch": "torch", "tf": "tf", "tensorflow": "tf"}


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


class Capture:
    """A profiling session around a user's loop; use :func:`capture` to make one."""

    def __init__(
        self,
        path: str | Path,
        framework: str,
        *,
        device: str = "cpu",
        max_steps: int | None = None,
        overwrite: bool = False,
        description: str = "",
        python_events: bool = True,
        memory: bool = False,
    ) -> None:
        fw = _FRAMEWORK_ALIASES.get(framework.lower())
        if fw is None:
            raise UsageError(f"capture(framework={framework!r}): use 'torch' or 'tf'")
        if max_steps is not None and max_steps < 1:
            raise UsageError(f"capture(max_steps={max_steps}): must be at least 1")
        self.path = Path(path)
        self.python_events = python_events
        self.memory = memory
        self.framework = fw
        self.device = device
        self.max_steps = max_steps
        self.overwrite = overwrite
        self.description = description
        self.manifest: dict[str, Any] | None = None
        self.trace_file: Path | None = None
        self._backend: Any = None
        self._session: Any = None
        self._profiled: Any = None  # StepRecorder with markers
        self._after: Any = None  # StepRecorder without markers (steps past max_steps)
        self._started = False
        self._stopped = False
        self._next = 0

    # -- context manager ------------------------------------------------------------------------
    def __enter__(self) -> Capture:
        from traceview.collectors.harness import StepRecorder
        from traceview.collectors.manifest import MANIFEST_NAME
        from traceview.collectors.runner import load_backend

        if (self.path / MANIFEST_NAME).exists():
            if not self.overwrite:
                raise UsageError(f"{self.path} already holds a capture; pass overwrite=True or choose another path")
            _remove_capture(self.path)
        self._backend = load_backend(self.framework)  # MissingExtraError when not installed
        check_device = self._backend.torch_device if self.framework == "torch" else self._backend.tf_device
        try:
            check_device(self.device)
        except RuntimeError as err:
            raise UsageError(f"capture(device={self.device!r}): {err}") from err
        self.path.mkdir(parents=True, exist_ok=True)
        self._session = self._backend.profiler_session(self.path, self.device, python_events=self.python_events,
                                                       memory=self.memory)
        self._profiled = StepRecorder(markers=self._session)
        self._after = StepRecorder()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        error = None
        if exc_type is not None:
            error = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        self._stop_profiler()
        if self._profiled is not None and self._profiled.steps:
            self._write_manifest(error)

    # -- steps ----------------------------------------------------------------------------------
    def step(self) -> _StepContext:
        """Context manager around one training step."""
        if self._session is None:
            raise UsageError("cap.step() used outside `with traceview.capture(...) as cap:`")
        return _StepContext(self)

    @property
    def steps(self) -> int:
        return self._next

    def _begin_step(self) -> StepHandle:
        index = self._next
        if self._profiling(index):
            if not self._started:
                try:
                    self._session.start()
                except RuntimeError as err:  # e.g. another TensorFlow profiler session is running
                    raise UsageError(f"traceview.capture: {err}") from err
                self._started = True
            self._profiled.begin(index)
        else:
            self._after.begin(index - self._profiled.steps)
        return StepHandle(index)

    def _end_step(self, handle: StepHandle) -> None:
        index = handle.index
        if self._profiling(index):
            self._profiled.end(index, handle.loss)
            if self.max_steps is not None and index + 1 >= self.max_steps:
                self._stop_profiler()
        else:
            self._after.end(index - self._profiled.steps, handle.loss)
        self._next += 1

    def _profiling(self, index: int) -> bool:
        return self.max_steps is None or index < self.max_steps

    def _stop_profiler(self) -> None:
        if self._started and not self._stopped:
            self._stopped = True
            self.trace_file = self._session.stop()

    # -- manifest -------------------------------------------------------------------------------
    def _write_manifest(self, error: str | None) -> None:
        from traceview.collectors import manifest as mf
        from traceview.collectors.harness import median

        profiled = self._profiled
        after = self._after
        n = profiled.steps
        cold = [0]
        steady = list(range(1, n))
        med_p = median([profiled.times_s[i] for i in steady])
        med_u = median(after.times_s[1:] if after.steps > 1 else after.times_s)
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
            "steps": {"total": n, "cold": 1, "warmup": 0, "steady": len(steady)},
            "cold_steps": cold,
            "warmup_steps": [],
            "steady_steps": steady,
            "trace": None,
            "timing": {
                "unit": "s",
                "profiled_s": profiled.times_s,
                "unprofiled_s": after.times_s or None,
                "cold_profiled_s": profiled.times_s[0] if n else None,
                "cold_unprofiled_s": None,
                "steady_median_profiled_s": med_p,
                "steady_median_unprofiled_s": med_u,
                "profiler_overhead": (med_p / med_u - 1.0) if med_p and med_u else None,
                "clock": "time.perf_counter_ns around each step; step markers open before and close after",
                "unprofiled_note": (
                    f"steps after max_steps={self.max_steps}, timed without the profiler (first one excluded "
                    f"from the median)"
                    if after.steps
                    else "no unprofiled steps (max_steps not set or not reached)"
                ),
            },
            "losses": {"profiled": profiled.losses, "unprofiled": after.losses or None},
            "parity": {"ok": None, "note": "not applicable: a user loop has no paired run"},
            "notes": ["the first step is marked cold: tracing and compilation, if any, happen there"],
        }
        if self.trace_file is not None:
            manifest["trace"] = {
                "path": self.trace_file.relative_to(self.path).as_posix(),
                "format": self._session.trace_format,
                "bytes": self.trace_file.stat().st_size,
                **self._session.describe(),
            }
        if error:
            manifest["error"] = error
        mf.write(self.path, manifest)
        self.manifest = manifest


def _remove_capture(path: Path) -> None:
    """Delete what an earlier capture wrote into ``path`` (and nothing else)."""
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
    overwrite: bool = False,
    description: str = "",
    python_events: bool = True,
    memory: bool = False,
) -> Capture:
    """Profile a user's training loop into ``path`` (use as a context manager).

    ``framework`` is ``"torch"`` or ``"tf"``; ``device`` ``"cpu"`` or ``"cuda"`` (torch adds CUDA
    activity; TensorFlow records GPUs on its own). ``max_steps`` bounds the profiled window; the
    remaining steps are timed without the profiler. Raises :class:`~traceview.errors.MissingExtraError`
    when the framework is not installed and :class:`~traceview.errors.UsageError` when ``path``
    already holds a capture (unless ``overwrite``). ``python_events`` (torch: ``with_stack=True``)
    records Python frames, so the user's own code between framework ops is told apart from the
    framework's; it slows Python-heavy steps ~1.3–1.6× (benchmarks/truth/README.md) — pass False
    for a torch.compile loop, whose compiler's Python would fill the trace. ``memory`` (torch:
    ``profile_memory=True``) records every allocation and free; the report then shows peak memory
    per step and the ops that allocate most. TensorFlow records allocations by itself on GPUs (its
    CPU allocator records none), so the option changes nothing there.
    """
    return Capture(path, framework, device=device, max_steps=max_steps, overwrite=overwrite,
                   description=description, python_events=python_events, memory=memory)
