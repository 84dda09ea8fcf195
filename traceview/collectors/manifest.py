"""The run manifest: what was captured, how, on what, and whether the frameworks agreed.

Every capture folder holds one ``manifest.json`` next to its trace. It is the record a later
analysis needs and the trace does not carry: the workload spec, library versions, thread
settings, which steps are cold / warm-up / steady, the per-step wall clock with and without the
profiler, the losses, and the loss-parity verdict. Paths inside are relative to the folder.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
from pathlib import Path
from typing import Any

import numpy as np
import orjson

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
    }


def base_versions() -> dict[str, str]:
    return {"python": platform.python_version(), "numpy": np.__version__}


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write(folder: Path, manifest: dict[str, Any]) -> Path:
    """Write ``manifest.json`` (indented, keys in insertion order) and return its path."""
    path = Path(folder) / MANIFEST_NAME
    path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    return path


def read(folder_or_file: Path) -> dict[str, Any]:
    path = Path(folder_or_file)
    if path.is_dir():
        path = path / MANIFEST_NAME
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def trace_path(folder: Path, manifest: dict[str, Any]) -> Path | None:
    """Absolute path of the manifest's trace file, or ``None`` when the capture has none."""
    trace = manifest.get("trace") or {}
    rel = trace.get("path")
    return Path(folder) / rel if rel else None
