"""torch inside the profiled process: optimizer steps are the step boundaries; torch.profiler records.

Loaded only once the script has imported torch. ``Optimizer.__init__`` is wrapped to give every
optimizer an instance ``step`` that calls the class's own; a step ends when the first optimizer
that steps returns from ``step()``, after torch's ``Optimizer.step#…`` range has closed (an
optimizer step post-hook would run inside it); other optimizers (a GAN's second one, the inner
optimizer of a wrapper) do not count. Step 1 begins when
the first optimizer is constructed, each later step where the previous one ended, so a step holds
the forward, backward, optimizer and whatever the loop does in between (data loading included).

The profiler is set up as ``traceview.capture`` sets it up (CPU activity, plus CUDA when the
script has initialised CUDA; ``record_shapes``; ``with_stack`` so the script's own Python between
framework ops is seen); each step is a ``record_function("ProfilerStep#N")`` range, N the step
number from 1, which is the marker torch's own ``profiler.step()`` writes.
"""

from __future__ import annotations

import functools
import os
import socket
import time
import types
from typing import Any

from .hook import ProfilerSession

SOURCE = "torch.optim"


def install(run: Any, torch: Any) -> None:
    from torch.optim import Optimizer

    primary: list[Any] = []
    original_init = Optimizer.__init__

    def counted_step(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not primary and run.owns(SOURCE):
            primary.append(self)
            run.source_detail = f"optimizer.step() of {type(self).__name__}"
        result = type(self).step(self, *args, **kwargs)
        if primary and self is primary[0] and run.current is not None:
            n = run.current
            run.end(n)
            run.begin(n + 1)
        return result

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # A bound method, as LR schedulers expect of optimizer.step (they wrap step.__func__).
        self.step = types.MethodType(counted_step, self)
        if run.owner is None and run.claim(SOURCE, "torch", "optimizer.step()"):
            run.begin(1)

    Optimizer.__init__ = __init__  # type: ignore[method-assign]


class Session(ProfilerSession):
    """One torch.profiler session over the window; one gzip Kineto trace."""

    trace_format = "kineto-json"

    def __init__(self, trace_dir: str) -> None:
        super().__init__(trace_dir)
        self._prof: Any = None
        self._activities: list[Any] = []

    def start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        self._activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            self._activities.append(ProfilerActivity.CUDA)
        self._prof = profile(activities=self._activities, record_shapes=True, with_stack=True)
        self._prof.start()

    def marker(self, n: int) -> Any:
        from torch.profiler import record_function

        return record_function(f"ProfilerStep#{n}")

    def stop(self, open_step: int | None = None) -> str:
        self._prof.stop()
        os.makedirs(self.trace_dir, exist_ok=True)
        # The name torch's tensorboard_trace_handler gives: <host>_<pid>.<ms>.pt.trace.json.gz
        name = f"{socket.gethostname()}_{os.getpid()}.{time.time_ns() // 1_000_000}.pt.trace.json.gz"
        path = os.path.join(self.trace_dir, name)
        self._prof.export_chrome_trace(path)
        if open_step is not None:
            _drop_marker(path, f"ProfilerStep#{open_step}")
        return path

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "torch.profiler.profile",
            "activities": [a.name for a in self._activities],
            "record_shapes": True,
            "python_events": True,
            "step_marker": "user_annotation ProfilerStep#N, N = the script's step number from 1",
            "step_marker_offset": 1,
        }


def _drop_marker(path: str, name: str) -> None:
    """Remove the step marker ``name`` from a gzip Kineto trace: torch closes a range still open
    when the profiler stops, which would make the step the script never finished look like one."""
    import gzip
    import json

    with gzip.open(path, "rt", encoding="utf-8") as fh:
        trace = json.load(fh)
    trace["traceEvents"] = [e for e in trace.get("traceEvents", []) if e.get("name") != name]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(trace, fh)


def facts() -> dict[str, Any]:
    import torch

    versions = {"torch": torch.__version__}
    device = {"kind": "cpu", "name": None}
    if torch.version.cuda:
        versions["cuda"] = str(torch.version.cuda)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        device = {"kind": "cuda", "name": torch.cuda.get_device_name(torch.cuda.current_device())}
    threads = {"torch_intra_op": torch.get_num_threads(), "torch_inter_op": torch.get_num_interop_threads()}
    return {"versions": versions, "threads": threads, "device": device}
