"""Facts a capture's manifest records and the trace does not: which steps were cold or warm-up,
the same steps' time without the profiler, and the intra-op thread count.

``traceview collect`` (and :mod:`traceview.capture`) write ``manifest.json`` beside the trace
(TF: at the logdir root, three folders up). It is used only when its ``trace.path`` names the
very file being read, so a stray manifest never describes another trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

MANIFEST_NAME = "manifest.json"
_SEARCH_LEVELS = 4  # trace file → its folder → … → a TF logdir root (plugins/profile/<run>/<host>.xplane.pb)


def capture_facts(trace: Path) -> dict[str, Any]:
    """The manifest's facts about ``trace`` ({} when no manifest names it, or it is unreadable)."""
    trace = Path(trace).resolve()
    folder = trace.parent
    for _ in range(_SEARCH_LEVELS):
        candidate = folder / MANIFEST_NAME
        if candidate.is_file():
            try:
                manifest = orjson.loads(candidate.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                return {}
            if isinstance(manifest, dict) and _names(manifest, folder, trace):
                return _facts(manifest)
            return {}
        if folder.parent == folder:
            break
        folder = folder.parent
    return {}


def _names(manifest: dict[str, Any], folder: Path, trace: Path) -> bool:
    rel = (manifest.get("trace") or {}).get("path") if isinstance(manifest.get("trace"), dict) else None
    return isinstance(rel, str) and (folder / rel).resolve() == trace


def _int_list(value: Any) -> list[int]:
    return [int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)] if isinstance(value, list) else []


def _facts(manifest: dict[str, Any]) -> dict[str, Any]:
    timing = manifest.get("timing") if isinstance(manifest.get("timing"), dict) else {}
    threads = manifest.get("threads") if isinstance(manifest.get("threads"), dict) else {}
    facts: dict[str, Any] = {
        "cold_steps": _int_list(manifest.get("cold_steps")),
        "warmup_steps": _int_list(manifest.get("warmup_steps")),
    }
    for key, out in (("steady_median_unprofiled_s", "unprofiled_step_ns"),
                     ("steady_median_profiled_s", "profiled_step_ns")):
        value = timing.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e6:
            facts[out] = int(round(value * 1e9))
    for key in ("torch_intra_op", "tf_intra_op", "requested"):
        value = threads.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            facts["intra_op_threads"] = value
            break
    return facts
