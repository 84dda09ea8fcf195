"""Adopt an unpacked GPU capture into the repository: ``python -m benchmarks.gpu.adopt CAPTURE [CAPTURE …]``.

``CAPTURE`` is a ``gpu_capture`` folder unpacked from ``benchmarks/gpu/capture.py``'s parts (a later
capture's case replaces an earlier one's of the same name, so a rerun of a few cases goes last).
For each case it writes ``benchmarks/truth/cases/<case>/`` in the scorer's format
(``benchmarks/truth/score.py``: ``case``, ``profiled.<variant>.trace``, ``score``), so that
``python -m benchmarks.truth.score`` and ``tests/test_truth.py`` score the GPU cases with the CPU
ones:

- the traces: torch's ``.pt.trace.json.gz`` as captured, JAX's ``.xplane.pb`` gzip'd (JAX's own
  ``.trace.json.gz`` beside it, the same events again, is left out); a trace over
  ``--max-trace-mib`` keeps only its first ``--keep-steps`` profiled steps (every event that starts
  before the next step's marker: each step's device work is inside its window where the profiled
  steps synchronized, ``profiled_sync``), and ``ground_truth.json`` says so with the original's size and SHA-256;
- the cost: measured without the profiler (``unprofiled``, CUDA events around interleaved blocks),
  unless the profiler changed the injected cost by more than the scorer's tolerance, as
  ``benchmarks/truth/generate.py`` decides for the CPU cases (``score_fields``): the in-trace cost
  is the difference of the two traces' median steady step.

``--collect`` also copies the collectors' captures named there (``workload/framework-mode``) into
``benchmarks/gpu/captures/``, with the machine's facts (``machine.json``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import orjson

from benchmarks.gpu.cases import BY_NAME
from benchmarks.truth.generate import score_fields
from benchmarks.truth.score import CASES_DIR

HERE = Path(__file__).resolve().parent
CAPTURES_DIR = HERE / "captures"
STEP_MARKER_PREFIX = "ProfilerStep#"  # what capture.profile() writes around each torch step
# Kineto's categories of the runtime calls that launch device work, and of that work.
HOST_LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def trim_kineto(src: Path, dst: Path, keep_steps: int) -> int:
    """``src`` (a gzip'd Kineto trace) with the events from its ``keep_steps + 1``-th step marker on
    left out, written to ``dst``; the number of events left out."""
    doc = orjson.loads(gzip.decompress(src.read_bytes()))
    events = doc["traceEvents"]
    starts = sorted(e["ts"] for e in events
                    if e.get("ph") == "X" and str(e.get("name", "")).startswith(STEP_MARKER_PREFIX)
                    and e.get("cat") == "user_annotation")
    if len(starts) <= keep_steps:
        shutil.copyfile(src, dst)
        return 0
    cut = starts[keep_steps]
    kept = [e for e in events if e.get("ph") == "M" or "ts" not in e or float(e["ts"]) < cut]
    # Device work launched before the cut runs after it where the steps did not wait for the
    # device: it stays with its launch (the same correlation id).
    launched = {e["args"]["correlation"] for e in kept if e.get("cat") in HOST_LAUNCH_CATEGORIES
                and "correlation" in e.get("args", {})}
    kept += [e for e in events if "ts" in e and float(e["ts"]) >= cut and e.get("cat") in DEVICE_CATEGORIES
             and e.get("args", {}).get("correlation") in launched]
    doc["traceEvents"] = kept
    dst.write_bytes(gzip.compress(orjson.dumps(doc), compresslevel=9, mtime=0))
    return len(events) - len(kept)


def _copy_trace(src: Path, dst_dir: Path, max_bytes: int, keep_steps: int) -> tuple[str, dict[str, Any]]:
    """The trace into ``dst_dir``; its path there (relative to the case folder) and what was done."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    facts: dict[str, Any] = {"source_bytes": src.stat().st_size, "source_sha256": _sha256(src)}
    if src.name.endswith(".xplane.pb"):
        run = src.parent.name
        out = dst_dir / "plugins" / "profile" / run / (src.name + ".gz")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(gzip.compress(src.read_bytes(), compresslevel=9, mtime=0))
    else:
        out = dst_dir / src.name
        if src.stat().st_size > max_bytes:
            facts["trimmed"] = {"kept_steps": keep_steps, "events_left_out": trim_kineto(src, out, keep_steps),
                                "why": "the repository's size budget for GPU traces; the steps kept are the "
                                       "capture's first, with the device work they launched"}
        else:
            shutil.copyfile(src, out)
    return str(out.relative_to(dst_dir.parent)), facts


def _steady_step_ns(trace: Path) -> tuple[float, int]:
    """The median steady step of a trace (traceview's step windows: the profiler's step markers) and
    how many steps it holds."""
    import traceview

    diag = traceview.diagnose(trace)
    table = diag.steps.table
    lengths = (table["end"] - table["start"]).astype(np.int64)
    steady = [int(lengths[i]) for i in diag.steady_positions] or [int(x) for x in lengths]
    return float(np.median(steady)), len(lengths)


def adopt_case(folder: Path, machine: dict[str, Any], max_bytes: int, keep_steps: int) -> dict[str, Any]:
    """One captured case into ``CASES_DIR/<case>``; its ground_truth.json."""
    captured = json.loads((folder / "ground_truth.json").read_text())
    name = captured["case"]["name"]
    spec = BY_NAME[name]
    dest = CASES_DIR / name
    staging = CASES_DIR / f".{name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    profiled: dict[str, Any] = {}
    for variant in ("clean", "injected"):
        src = folder / captured["traces"][variant]  # (relative to the case folder)
        rel, facts = _copy_trace(src, staging / variant, max_bytes, keep_steps)
        step_ns, steps = _steady_step_ns(staging / rel)
        profiled[variant] = {"trace": rel, "compared_ns": step_ns, "steps": steps, **facts}
    unprofiled = captured["unprofiled"]
    cost_unprofiled = unprofiled["cost_ms"] * 1e6
    cost_in_trace = profiled["injected"]["compared_ns"] - profiled["clean"]["compared_ns"]
    rule = SimpleNamespace(kind="cause", score_against="unprofiled", score_reason="")
    doc = {
        "case": {"name": name, "framework": spec.framework, "kind": "cause", "cause": spec.cause,
                 "expected_bucket": spec.expected_bucket, "expected_finding": spec.expected_finding,
                 "window": "steady", "device": "cuda", "gpu": machine.get("gpu"),
                 "cause_needs_cuda": spec.needs_cuda},
        "machine": machine,
        "unprofiled": {"clean_ns": unprofiled["clean_ms"] * 1e6, "injected_ns": unprofiled["injected_ms"] * 1e6,
                       "samples_ms": unprofiled["samples_ms"], "design": unprofiled["design"],
                       "timer": "CUDA events around each block" if spec.framework == "torch"
                                else "the host clock around each block, after a block_until_ready"},
        "cost_unprofiled_ns": cost_unprofiled,
        "profiled": profiled,
        "cost_in_trace_ns": cost_in_trace,
        "inflation": {v: profiled[v]["compared_ns"] / (unprofiled[f"{v}_ms"] * 1e6) for v in profiled},
        "inflation_note": "profiled (median steady step of the trace) / unprofiled (mean step of a block, median of "
                          "the blocks)",
        # (capture.py's first captures waited for the device inside every profiled step's marker)
        "profiled_sync": captured.get("profiled_sync", "inside every profiled step's marker"),
        "score": score_fields(rule, cost_unprofiled, cost_in_trace),  # type: ignore[arg-type]
    }
    (staging / "ground_truth.json").write_text(json.dumps(doc, indent=1) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return doc


def _name_gzipped_traces(manifest_path: Path) -> None:
    """The manifest's trace entries that name an XPlane now gzip'd name the .gz (traceview finds a
    trace's manifest by the path it names), and say so."""
    if not manifest_path.is_file():
        return
    manifest = json.loads(manifest_path.read_text())
    entries = [e for e in (manifest.get("trace"), *(manifest.get("traces") or []))
               if isinstance(e, dict) and str(e.get("path", "")).endswith(".xplane.pb")]
    for entry in entries:
        entry["path"] += ".gz"
        entry["repository_copy"] = "gzip'd (level 9) to fit the repository; the bytes above are the original's"
    if entries:
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


def adopt_collected(capture: Path, wanted: list[str]) -> list[str]:
    """The collectors' captures ``workload/framework-mode`` into ``CAPTURES_DIR`` (JAX's xplane
    gzip'd, its trace.json.gz left out); the folders written."""
    written = []
    for item in wanted:
        src = capture / "collect" / item
        if not src.is_dir():
            continue
        dest = CAPTURES_DIR / item
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for path in sorted(src.rglob("*")):
            if not path.is_file() or (path.name.endswith(".trace.json.gz") and "plugins" in path.parts):
                continue
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.name.endswith(".xplane.pb"):
                target.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), compresslevel=9,
                                                                             mtime=0))
            else:
                shutil.copyfile(path, target)
        _name_gzipped_traces(dest / "manifest.json")
        written.append(item)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("captures", nargs="+", type=Path, help="unpacked gpu_capture folders (later ones win)")
    ap.add_argument("--cases", help="comma-separated case names (default: every case captured)")
    ap.add_argument("--collect", default="", help="comma-separated workload/framework-mode captures to copy")
    ap.add_argument("--max-trace-mib", type=float, default=4.0)
    ap.add_argument("--keep-steps", type=int, default=3)
    args = ap.parse_args(argv)
    found: dict[str, tuple[Path, dict[str, Any]]] = {}
    machine: dict[str, Any] = {}
    for capture in args.captures:
        summary = json.loads((capture / "summary.json").read_text())
        machine = summary["machine"]
        for truth in sorted((capture / "cases").glob("*/ground_truth.json")):
            found[truth.parent.name] = (truth.parent, summary["machine"])
    wanted = set(args.cases.split(",")) if args.cases else set(found)
    for name in sorted(wanted & set(found)):
        folder, facts = found[name]
        doc = adopt_case(folder, facts, int(args.max_trace_mib * 2**20), args.keep_steps)
        print(f"{name}: cost {doc['cost_unprofiled_ns'] / 1e6:.3f} ms unprofiled, {doc['cost_in_trace_ns'] / 1e6:.3f} ms "
              f"in the traces; scored against {doc['score']['against']}")
    if args.collect:
        written = []
        for capture in args.captures:
            written += adopt_collected(capture, [c for c in args.collect.split(",") if c])
        CAPTURES_DIR.mkdir(exist_ok=True)
        (CAPTURES_DIR / "machine.json").write_text(json.dumps(machine, indent=1) + "\n")
        print(f"captures: {', '.join(sorted(set(written)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
