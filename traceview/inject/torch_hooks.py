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
framework ops is seen, unless ``--no-python-events``); each step is a ``record_function("ProfilerStep#N")`` range, N the step
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

    def __init__(self, trace_dir: str, python_events: bool = True) -> None:
        super().__init__(trace_dir, python_events)
        self._prof: Any = None
        self._activities: list[Any] = []

    def start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        self._activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            self._activities.append(ProfilerActivity.CUDA)
        self._prof = profile(activities=self._activities, record_shapes=True, with_stack=self.python_events)
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
            "python_events": self.python_events,
            "step_marker": "user_annotation ProfilerStep#N, N = the script's step number from 1",
            "step_marker_offset": 1,
        }


def _drop_marker(path: str, name: str) -> None:
    """Remove the step marker ``name`` from a gzip Kineto trace: torch closes a range still open
    when the profiler stops, which would make the step the script never finished look like one.

    The events are decoded one at a time and their text copied through, so the memory this takes
    stays small however large the trace (the memory guard may have stopped the profiler because
    the trace is large; loading it whole as Python objects took several times its size)."""
    import gzip
    import json

    decoder = json.JSONDecoder()
    tmp = f"{path}.{os.getpid()}.tmp"
    with gzip.open(path, "rt", encoding="utf-8") as src, gzip.open(tmp, "wt", encoding="utf-8") as dst:
        reader = _TextWindow(src)
        array = reader.find('"traceEvents"')
        array = reader.find("[", array) + 1
        dst.write(reader.take(array))
        separator = ""
        while True:
            at = reader.skip(" \t\r\n,")
            if reader.char(at) in ("]", ""):
                break
            event, end = reader.decode(decoder, at)
            if not (isinstance(event, dict) and event.get("name") == name):
                dst.write(separator + reader.text(at, end))
                separator = ",\n"
            reader.take(end)
        while True:  # the array's end and what follows it
            rest = reader.take(reader.end())
            if not rest and not reader.more():
                break
            dst.write(rest)
    os.replace(tmp, path)


class _TextWindow:
    """A window onto a text stream, read in blocks. Positions count from the first character not
    yet taken; ``take(n)`` hands back the next n characters and moves past them (the text before
    is let go a block at a time, so taking one event after another costs no copy of the window)."""

    BLOCK = 1 << 20

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._text = ""
        self._pos = 0  # where position 0 is in self._text
        self._eof = False

    def more(self) -> bool:
        if self._eof:
            return False
        block = self._stream.read(self.BLOCK)
        self._eof = not block
        self._text += block
        return bool(block)

    def end(self) -> int:
        return len(self._text) - self._pos

    def find(self, needle: str, start: int = 0) -> int:
        while (at := self._text.find(needle, self._pos + start)) < 0:
            if not self.more():
                raise ValueError(f"no {needle} in the trace")
        return at - self._pos

    def skip(self, characters: str) -> int:
        at = self._pos
        while True:
            while at < len(self._text) and self._text[at] in characters:
                at += 1
            if at < len(self._text) or not self.more():
                return at - self._pos

    def char(self, at: int) -> str:
        while self._pos + at >= len(self._text) and self.more():
            pass
        return self._text[self._pos + at] if self._pos + at < len(self._text) else ""

    def decode(self, decoder: Any, at: int) -> tuple[Any, int]:
        import json

        while True:
            try:
                value, end = decoder.raw_decode(self._text, self._pos + at)
                return value, end - self._pos
            except json.JSONDecodeError:
                if not self.more():  # an event cut off by the window's end: read on, then decode again
                    raise

    def text(self, start: int, end: int) -> str:
        return self._text[self._pos + start:self._pos + end]

    def take(self, n: int) -> str:
        taken = self._text[self._pos:self._pos + n]
        self._pos += n
        if self._pos > self.BLOCK:
            self._text, self._pos = self._text[self._pos:], 0
        return taken


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
