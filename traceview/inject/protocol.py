"""The contract between ``traceview run`` and the process it profiles (standard library only).

The parent passes :class:`Settings` as JSON in ``TRACEVIEW_RUN_CONFIG``. In the child, every
Python process of the command loads the hook (a script's own subprocesses too); the first one to
reach a training step claims the run (:func:`claim`: an exclusive file, so one process of a
multi-process job is profiled) and writes ``status.json`` into the status folder:

``pid``, ``framework`` (torch, tf, jax), ``source`` (what counted the steps) and
``source_detail``, ``first`` / ``last`` (the window it aimed at), ``steps_seen`` (steps the
script completed), ``times_s`` (step number → wall seconds, for the window's steps),
``cpu_wait_s`` (the same steps: seconds the process's threads waited, runnable, for a CPU),
``profiled`` (whether the profiler ran), ``trace`` (absolute path of the trace written, or
null), ``trace_format``, ``profiler`` (its settings), ``facts`` (versions, threads, device),
``notes`` (what the user should know), ``python_events`` (whether they were asked for) and
``memory_stop`` (null, or where the memory guard ended the window: ``inside_step`` or
``after_step``, with the bytes it measured).

A process that imported a framework but never reached a step writes ``imported-<pid>.json``
(``{"pid", "imported": [...]}``), so the parent can say what the script did use.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any, Mapping

CONFIG_ENV = "TRACEVIEW_RUN_CONFIG"
STATUS_NAME = "status.json"
CLAIM_NAME = "claimed"
LOADED_NAME = "loaded"
IMPORTED_PREFIX = "imported-"
FRAMEWORKS = ("torch", "tf", "jax")


@dataclass(frozen=True)
class Settings:
    trace_dir: str  # where the profiler writes (absolute)
    status_dir: str  # where the child writes status.json (absolute)
    first: int  # first step to capture, 1-based
    last: int  # last step to capture
    framework: str = "auto"  # auto, torch, tf, jax: which framework's steps count
    profile: bool = True  # False: time the window's steps without the profiler (calibration run)
    python_events: bool = True  # record the script's Python calls (torch's with_stack)
    profiler_memory: int = 0  # bytes the capture may take, its stop included; 0: memory_guard's share

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> "Settings | None":
        raw = environ.get(CONFIG_ENV)
        if not raw:
            return None
        data = json.loads(raw)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def claim(status_dir: str) -> bool:
    """True for the first process of the run to call this (an exclusively created file); False
    for the others, and once the run is over (its status folder removed)."""
    try:
        fd = os.open(os.path.join(status_dir, CLAIM_NAME), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(str(os.getpid()))
    return True


def write_json(path: str, data: Any) -> None:
    """Write ``data`` as JSON through a temporary file, so a reader never sees half of it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, default=str)
    os.replace(tmp, path)


def read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
