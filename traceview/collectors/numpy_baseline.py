"""numpy baseline for the gradient-descent workloads, timed the same way as the frameworks.

The question "why is TensorFlow gradient descent slower than numpy?" needs the numpy loop next
to the framework loops: same initial weights, same data, same step boundaries, same per-step
wall clock. The gradient is written by hand (``d/dw mean((Xw+b-y)^2) = 2/n X^T (Xw+b-y)``), as
in the numpy code such questions start from.

numpy has no profiler, so the "profiled" run is recorded by :class:`StepTimerSession`: each step
becomes a ``ProfilerStep#N`` span (from ``perf_counter_ns``) in a Chrome-trace JSON shaped like
torch's Kineto output, so the same readers and step analyses apply. The file holds step spans
only; there are no op-level events to attribute time to, and the manifest says so.
"""

from __future__ import annotations

import gzip
import os
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from traceview.collectors.harness import StepRecorder, run_steps
from traceview.collectors.manifest import cpu_name
from traceview.collectors.workloads import WorkloadSpec, WorkloadState

FRAMEWORK = "numpy"
TRACE_FORMAT = "kineto-json"
TRACE_NAME = "numpy.steps.pt.trace.json.gz"


def configure(threads: int, device: str) -> dict[str, Any]:
    if device != "cpu":
        raise RuntimeError("the numpy baseline runs on the CPU only")
    return {"numpy_blas": "not pinned (BLAS picks its own thread count)"}


def device_name(device: str) -> str:
    return cpu_name()


def versions() -> dict[str, str]:
    return {}


def mode_unavailable(mode: str) -> str | None:
    return None


def reset() -> None:
    return None


def environment(mode: str) -> dict[str, Any]:
    """Process state that changes what the cold step holds (none worth recording here)."""
    return {}


def compile_report(mode: str) -> dict[str, Any]:
    """Facts about compilation gathered after the profiled run (none recorded for this framework)."""
    return {}


def mode_notes(mode: str) -> list[str]:
    return [
        "numpy has no profiler: the trace holds ProfilerStep#N spans timed with perf_counter_ns, no op events"
    ]


class LinregNumpyProgram:
    """Full-batch gradient descent on ``y ~ X w + b`` with a hand-written MSE gradient."""

    def __init__(self, spec: WorkloadSpec, state: WorkloadState, mode: str = "eager", device: str = "cpu") -> None:
        if spec.kind != "linreg" or spec.optimizer != "sgd" or spec.loss != "mse":
            raise ValueError(f"the numpy baseline implements plain gradient descent on MSE, not {spec.name}")
        if mode != "eager":
            raise ValueError(f"numpy has no mode {mode!r}")
        self.spec = spec
        self.w = state.params["dense0/kernel"].copy()
        self.b = state.params["dense0/bias"].copy()
        self.batches = state.batches()
        self.lr = np.float32(spec.lr)

    def step(self, i: int) -> float:
        x, y = self.batches[i % len(self.batches)]
        err = x @ self.w + self.b - y
        loss = np.mean(err * err)
        g = err * np.float32(2.0 / err.size)
        self.w -= self.lr * (x.T @ g)
        self.b -= self.lr * g.sum(axis=0)
        return float(loss)

    def run(self, steps: int, recorder: StepRecorder) -> None:
        run_steps(self.step, steps, recorder)


def build_program(spec: WorkloadSpec, state: WorkloadState, mode: str, device: str) -> LinregNumpyProgram:
    return LinregNumpyProgram(spec, state, mode, device)


class StepTimerSession:
    """Records step spans with ``perf_counter_ns`` and writes them as a Kineto-shaped Chrome trace."""

    framework = FRAMEWORK
    trace_format = TRACE_FORMAT

    def __init__(self, folder: Path, device: str = "cpu") -> None:
        self.folder = Path(folder)
        self._epoch_ns = 0
        self._perf0 = 0
        self._open: dict[int, int] = {}
        self._spans: list[tuple[int, int, int]] = []  # (step, start_ns, end_ns) relative to start

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._epoch_ns = time.time_ns()
        self._perf0 = time.perf_counter_ns()

    def begin_step(self, step: int) -> None:
        self._open[step] = time.perf_counter_ns() - self._perf0

    def end_step(self, step: int) -> None:
        start = self._open.pop(step)
        self._spans.append((step, start, time.perf_counter_ns() - self._perf0))

    def stop(self) -> Path:
        pid = os.getpid()
        events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python (numpy baseline)"}},
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": pid, "args": {"name": "main"}},
        ]
        for step, start, end in self._spans:
            events.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{step}",
                    "pid": pid,
                    "tid": pid,
                    "ts": start / 1000.0,
                    "dur": (end - start) / 1000.0,
                    "args": {"source": "perf_counter_ns step timer"},
                }
            )
        doc = {
            "schemaVersion": 1,
            "traceName": "numpy baseline step timer (no profiler exists for numpy; step spans only)",
            "host_name": socket.gethostname(),
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": self._epoch_ns,
            "traceEvents": events,
        }
        path = self.folder / TRACE_NAME
        with gzip.open(path, "wb") as fh:
            fh.write(orjson.dumps(doc))
        return path

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "none (numpy has none): step spans timed with time.perf_counter_ns",
            "step_marker": "user_annotation ProfilerStep#N, N = step index",
            "step_marker_offset": 0,
            "op_events": False,
        }


def python_events_default(mode: str) -> bool:
    """The numpy baseline writes only step spans: there are no Python events to record."""
    return False


def profiler_session(
    folder: Path, device: str, python_events: bool = False, memory: bool = False
) -> StepTimerSession:
    return StepTimerSession(folder, device)
