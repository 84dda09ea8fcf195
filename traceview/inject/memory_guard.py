"""Inside the profiled process: keep the profiler from taking the machine's memory.

A profiler holds every event of the window in the process until it stops, and stopping takes
more again: torch 2.13's ``profile.stop()`` + ``export_chrome_trace`` peaked at 5.3-5.5x the
memory the events had taken while collecting (200 MB of collected events, 1.1 GB more at the stop;
with and without Python events; CPU, 2 cores), and a whole ``traceview run`` of 300 k tiny ops a
step at ~7x. One LBFGS step over a 1,000-step LSTM loop is 8.9 M
events with Python events on, and took a 24 GB machine down. So the guard watches the process's
resident memory from the profiler's start and stops the capture while the stop still fits:

- at the end of each profiled step, when the steps so far, one more, would pass the collecting
  limit (the budget / :data:`STOP_EXPANSION`), the window ends after this step;
- inside a step, a watcher thread that sees the limit passed signals the main thread, whose
  handler stops the profiler there (torch's profiler can only be stopped from the thread that
  started it); the step it was in is dropped from the trace.

The budget is ``--profiler-memory`` or :data:`AUTOMATIC_SHARE` of the memory available when the
profiler starts (the smaller of the kernel's ``MemAvailable`` and what the process's cgroup has
left). Standard library only.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable

# Peak memory of stopping the profiler and writing its trace, over the memory its events took
# while collecting (measured as above; rounded up).
STOP_EXPANSION = 8.0
# The share of the memory available at the profiler's start that the capture may take, its stop
# included, when --profiler-memory is not given.
AUTOMATIC_SHARE = 0.8
SAMPLE_SECONDS = 0.05
# The signal the watcher sends the main thread: a real-time one, which scripts seldom handle.
# It is taken only while nothing else handles it; where there are none (not Linux), 0: no stop
# inside a step, only the step-end check.
_STOP_SIGNAL = signal.SIGRTMIN + 6 if hasattr(signal, "SIGRTMIN") else 0


def resident_bytes() -> int | None:
    """The process's resident memory (Linux ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def available_bytes() -> int | None:
    """Memory the process can still take: ``MemAvailable``, or less where its cgroup allows less."""
    available: int | None = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    left = _cgroup_left()
    if left is not None:
        available = left if available is None else min(available, left)
    return available


def _cgroup_left() -> int | None:
    """``memory.max`` − ``memory.current`` of the process's cgroup (v2), None without a limit."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            path = next((line.strip().split("::", 1)[1] for line in fh if line.startswith("0::")), None)
        if path is None:
            return None
        folder = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(folder, "memory.max"), encoding="ascii") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(folder, "memory.current"), encoding="ascii") as fh:
            return max(0, int(limit) - int(fh.read().strip()))
    except (OSError, ValueError, IndexError):
        return None


def size_text(n: float) -> str:
    """Bytes in binary units, as ``--profiler-memory`` takes them (8G = 8 GiB)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 2**10:.0f} KiB"


class MemoryGuard:
    """Watches the growth of the process's memory since the profiler started."""

    def __init__(self, budget_bytes: int, stop_inside_step: Callable[[], None]) -> None:
        self.budget = budget_bytes
        self.limit = int(budget_bytes / STOP_EXPANSION)  # what the events may take while collecting
        self._stop_inside_step = stop_inside_step
        self._baseline = resident_bytes() or 0
        self._done = threading.Event()
        self._signalled = False
        self._main = threading.main_thread().ident
        self._handles_signal = False
        if threading.get_ident() == self._main and _STOP_SIGNAL and \
                signal.getsignal(_STOP_SIGNAL) in (signal.SIG_DFL, None):
            signal.signal(_STOP_SIGNAL, self._on_signal)
            self._handles_signal = True
        self._watcher = threading.Thread(target=self._watch, name="traceview-memory-guard", daemon=True)
        self._watcher.start()

    @classmethod
    def for_budget(cls, budget_bytes: int, stop_inside_step: Callable[[], None]) -> "MemoryGuard | None":
        """A guard for ``budget_bytes`` (0: the automatic share of what is available), or None
        where this system says nothing of its memory."""
        if resident_bytes() is None:
            return None
        if budget_bytes <= 0:
            available = available_bytes()
            if available is None:
                return None
            budget_bytes = int(available * AUTOMATIC_SHARE)
        return cls(budget_bytes, stop_inside_step)

    def growth(self) -> int:
        now = resident_bytes()
        return 0 if now is None else max(0, now - self._baseline)

    def next_step_would_pass(self, steps_profiled: int) -> bool:
        """Whether one more step like the ``steps_profiled`` so far would pass the limit."""
        growth = self.growth()
        return steps_profiled > 0 and growth + growth / steps_profiled > self.limit

    def close(self) -> None:
        self._done.set()
        if self._handles_signal:
            try:
                signal.signal(_STOP_SIGNAL, signal.SIG_DFL)
            except (ValueError, OSError):  # not on the main thread: the handler stays, idle
                pass

    def _watch(self) -> None:
        while not self._done.wait(SAMPLE_SECONDS):
            if self.growth() > self.limit and self._handles_signal and not self._signalled:
                self._signalled = True
                signal.pthread_kill(self._main, _STOP_SIGNAL)
                return

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self._done.is_set():
            self._stop_inside_step()
