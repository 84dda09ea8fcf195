"""Framework-neutral pieces every collector shares: step timing, step markers, the run contract.

A collector turns a workload into a :class:`Program` whose ``run(steps, recorder)`` drives its
own loop (a Python loop, or Keras ``fit`` with a callback) and calls ``recorder.begin(i)`` /
``recorder.end(i, loss)`` around every step. The recorder times the step with
``perf_counter_ns`` and, when given a :class:`StepMarkers` (a profiler session), opens and
closes the framework's step marker around it, so the same program runs with and without the
profiler and the two timings differ only by the profiler.

The marker is opened before the clock starts and closed after it stops, so the recorded wall
time excludes the marker's own cost while the marker span encloses the whole step.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any, Protocol


class StepMarkers(Protocol):
    """Opens and closes the profiler's step marker around one step."""

    def begin_step(self, step: int) -> None: ...

    def end_step(self, step: int) -> None: ...


class ProfilerSession(StepMarkers, Protocol):
    """A profiler set up the traceview way: one session, one trace file, one marker per step."""

    framework: str
    trace_format: str

    def start(self) -> None: ...

    def stop(self) -> Path:
        """Stop profiling, write the trace and return the path of the file written."""
        ...

    def describe(self) -> dict[str, Any]:
        """Profiler settings worth recording in the manifest (activities, marker names …)."""
        ...


@dataclass
class StepRecorder:
    """Per-step wall-clock times (seconds) and losses of one run."""

    markers: StepMarkers | None = None
    times_s: list[float] = field(default_factory=list)
    losses: list[float | None] = field(default_factory=list)
    starts_ns: list[int] = field(default_factory=list)  # perf_counter_ns at each step start
    _t0: int = 0
    _open: int = -1

    def begin(self, step: int) -> None:
        if self._open >= 0:
            raise RuntimeError(f"step {step} began while step {self._open} is still open")
        if step != len(self.times_s):
            raise RuntimeError(f"steps must be recorded in order: expected {len(self.times_s)}, got {step}")
        if self.markers is not None:
            self.markers.begin_step(step)
        self._open = step
        self._t0 = time.perf_counter_ns()

    def end(self, step: int, loss: float | None) -> None:
        t1 = time.perf_counter_ns()
        if step != self._open:
            raise RuntimeError(f"step {step} ended but step {self._open} is the open one")
        self.times_s.append((t1 - self._t0) / 1e9)
        self.starts_ns.append(self._t0)
        self.losses.append(None if loss is None else float(loss))
        self._open = -1
        if self.markers is not None:
            self.markers.end_step(step)

    @property
    def steps(self) -> int:
        return len(self.times_s)


class Program(Protocol):
    """One workload in one framework and mode, from fresh initial weights."""

    def run(self, steps: int, recorder: StepRecorder) -> None:
        """Run ``steps`` steps, reporting each to ``recorder`` (loss as a Python float)."""
        ...


class ContextStepMarkers:
    """Step markers that are context managers (TensorFlow's ``Trace``, JAX's ``StepTraceAnnotation``):
    one is entered when a step begins and left when it ends; a session stopping after a step that
    failed leaves that step's marker first (``close_open_marker``), so the profiler records it."""

    def __init__(self, make_marker: Callable[[int], Any]) -> None:
        self._make_marker = make_marker
        self._marker: Any = None

    def begin_step(self, step: int) -> None:
        self._marker = self._make_marker(step)
        self._marker.__enter__()

    def end_step(self, step: int) -> None:
        if self._marker is not None:
            self._marker.__exit__(None, None, None)
            self._marker = None

    def close_open_marker(self) -> None:
        self.end_step(-1)


class ProfileRuns:
    """The ``<logdir>/plugins/profile/<run>/<host>.xplane.pb`` layout TensorFlow's and JAX's profilers save.

    Both name the run folder after the second the session stops, so two captures stopped within
    one second would share a folder and the second would overwrite the first: :meth:`wait_for_fresh_run`
    waits for the next second before such a stop, and :meth:`new_trace` refuses an overwrite.
    """

    GLOB = "plugins/profile/*/*.xplane.pb"

    def __init__(self, folder: Path, profiler: str) -> None:
        self.folder = Path(folder)
        self.profiler = profiler  # named in errors
        self._before: dict[Path, float] = {}

    @staticmethod
    def run_folder_name(now: _dt.datetime) -> str:
        # The name both profilers give the run folder when a session is saved.
        return now.strftime("%Y_%m_%d_%H_%M_%S")

    def snapshot(self) -> None:
        """Remember the traces already there; call before the session starts."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._before = {p: p.stat().st_mtime for p in self.folder.glob(self.GLOB)}

    def wait_for_fresh_run(self) -> None:
        """Call right before the session stops: never save into a run folder that already exists."""
        runs = self.folder / "plugins" / "profile"
        while runs.is_dir() and (runs / self.run_folder_name(_dt.datetime.now())).exists():
            time.sleep(0.05)

    def new_trace(self) -> Path:
        """The trace the stopped session wrote (the newest new one)."""
        new = [
            p for p in self.folder.glob(self.GLOB) if p not in self._before or p.stat().st_mtime != self._before[p]
        ]
        if not new:
            raise RuntimeError(f"the {self.profiler} profiler wrote no {self.GLOB} under {self.folder}")
        if any(p in self._before for p in new):
            raise RuntimeError(f"the {self.profiler} profiler overwrote an earlier capture under {self.folder}")
        return max(new, key=lambda p: p.stat().st_mtime)


def run_steps(step: Callable[[int], float], steps: int, recorder: StepRecorder) -> None:
    """The plain training loop every per-step program shares: time and report each step."""
    for i in range(steps):
        recorder.begin(i)
        loss = step(i)
        recorder.end(i, loss)


def median(values: list[float]) -> float | None:
    """Median without numpy's warnings on empty input."""
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
