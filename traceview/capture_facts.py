"""Facts a capture's manifest records and the trace does not: which steps were cold or warm-up,
the same steps' time without the profiler, the intra-op thread count and the machine's cores.

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
            entry = _entry_naming(manifest, folder, trace) if isinstance(manifest, dict) else None
            return _facts(manifest, entry) if entry is not None else {}
        if folder.parent == folder:
            break
        folder = folder.parent
    return {}


def _entry_naming(manifest: dict[str, Any], folder: Path, trace: Path) -> dict[str, Any] | None:
    """The manifest's entry for ``trace``: ``trace``, or one of ``traces`` (a capture with a
    schedule writes a trace per cycle); None when neither names it."""
    entries = [manifest.get("trace")]
    if isinstance(manifest.get("traces"), list):
        entries += manifest["traces"]
    for entry in entries:
        rel = entry.get("path") if isinstance(entry, dict) else None
        if isinstance(rel, str) and (folder / rel).resolve() == trace:
            return entry
    return None


def _leading_unsteady(manifest: dict[str, Any]) -> int:
    """How many of a manifest's per-step timings come before its steady steps (its cold and
    warm-up steps' counts)."""
    counts = manifest.get("steps") if isinstance(manifest.get("steps"), dict) else {}
    return sum(v for v in (counts.get("cold"), counts.get("warmup")) if isinstance(v, int) and v > 0)


def _seconds(value: Any) -> bool:
    """A step time in seconds a manifest may hold: a positive number below a million."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e6


def _int_list(value: Any) -> list[int]:
    return [int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)] if isinstance(value, list) else []


def _facts(manifest: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    timing = manifest.get("timing") if isinstance(manifest.get("timing"), dict) else {}
    threads = manifest.get("threads") if isinstance(manifest.get("threads"), dict) else {}
    # A trace's own entry says which of its steps are cold (step markers count each trace from 0).
    steps_of = entry if "cold_steps" in entry else manifest
    # "cold_steps" only where the manifest lists them (an empty list too: steps.py then knows the
    # window began after the warm-up), so that a manifest silent on them says nothing.
    facts: dict[str, Any] = {
        **({"cold_steps": _int_list(steps_of.get("cold_steps"))} if "cold_steps" in steps_of else {}),
        "warmup_steps": _int_list(steps_of.get("warmup_steps")),
    }
    for key, out in (("steady_median_unprofiled_s", "unprofiled_step_ns"),
                     ("steady_median_profiled_s", "profiled_step_ns")):
        value = timing.get(key)
        if _seconds(value):
            facts[out] = int(round(value * 1e9))
    waits = timing.get("cpu_wait_s")
    if isinstance(waits, list) and waits and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                                                 for v in waits):
        # (traceview run: each profiled step's wait for a CPU; the steady ones follow the cold)
        steady = waits[_leading_unsteady(manifest):] or waits
        facts["cpu_wait_ns_per_step"] = int(round(sum(steady) / len(steady) * 1e9))
    unprofiled = timing.get("unprofiled_s")
    if isinstance(unprofiled, list) and "unprofiled_step_ns" in facts:
        # Each unprofiled step, in the captured steps' order: the steady ones follow the cold and
        # warm-up steps the manifest counts (the calibration's spread: Diagnosis.calibration_doubt).
        steady = [int(round(v * 1e9)) for v in unprofiled[_leading_unsteady(manifest):] if _seconds(v)]
        if steady:
            facts["unprofiled_steps_ns"] = steady
    workload = manifest.get("workload")
    name = workload.get("name") if isinstance(workload, dict) else workload
    if isinstance(name, str) and name:
        facts["workload"] = name  # (traceview collect: which workload the capture ran)
    for key in ("torch_intra_op", "tf_intra_op", "requested"):
        value = threads.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            facts["intra_op_threads"] = value
            break
    host = manifest.get("host") if isinstance(manifest.get("host"), dict) else {}
    cores = host.get("cpu_count")
    if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0:
        facts["cores"] = cores  # (the capturing machine's os.cpu_count())
    return facts


def declared_cold_steps(capture: dict[str, Any]) -> set[int]:
    """The step numbers a capture's facts (``meta.extra["capture"]``) list as cold or warm-up."""
    return set(capture.get("cold_steps", [])) | set(capture.get("warmup_steps", []))
