"""Record Holistic Trace Analysis (HTA) numbers for torch GPU traces.

Two sets of traces, each with a reference file of its own (its provenance fields: the command, the
HTA version, each trace's sha256):

- ``shared``: the public traces in ``../shared/traces/torch_gpu`` (not part of the repository),
  recorded into ``tests/data/hta_reference.json``, keyed by file name;
- ``repo``: the repository's own torch traces from an H200 (:data:`REPO_TRACE_GLOBS`: the collector's
  captures and the GPU ground-truth cases; the JAX case is XPlane, which HTA does not read),
  recorded into ``tests/data/hta_reference_repo.json``, keyed by path relative to the repository.

``tests/test_hta_differential.py`` compares traceview against these numbers (and, when HTA is
importable there, against a live HTA run that calls :func:`hta_numbers` from this file).

Run it with an interpreter that has HTA; HTA pulls jupyterlab, plotly and networkx, so keep it out
of the project's environment::

    python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install holistictraceanalysis==0.5.0
    /tmp/htavenv/bin/python benchmarks/hta_reference.py               # writes tests/data/hta_reference.json
    /tmp/htavenv/bin/python benchmarks/hta_reference.py --set repo    # writes tests/data/hta_reference_repo.json

What HTA 0.5.0 counts (read from its source; file names relative to the installed ``hta`` package):

- Parsing (``common/trace_parser.py``): rows without ``dur`` or ``cat`` are dropped (flows, instants,
  metadata) and so is the ``Trace`` span. ``stream`` comes from ``args.stream`` (-1 when absent, so
  ``gpu_user_annotation`` rows count as host rows). Traces with float timestamps are rounded
  *inward* to whole µs (``round_down_time_stamps``: ts = ceil(ts), end = floor(ts + dur)), unless
  the environment variable ``HTA_DISABLE_NS_ROUNDING=1`` is set. Float timestamps stay doubles
  of the file's µs: absolute epoch µs in older traces (0.25 µs resolution around 1.7e15 µs), µs
  since ``baseTimeNanoseconds`` in newer ones (about 1 ns resolution around 5e12 µs). The inward
  rounding gives an event that covers no whole µs (most sub-µs kernels) a negative duration.
  Any row with an ``args.stream`` has a stream, host rows included: torch inductor records each
  Triton kernel launch as a ``cpu_op`` named after the kernel with the CUDA stream's handle in
  ``args.stream``, so HTA takes those host rows for device work.
- Filtering (``common/trace.py`` ``_filter_irrelevant_gpu_kernels``), applied only when at least two
  distinct names containing ``ProfilerStep`` exist: host rows (every row that is not a GPU row, where a
  GPU row has ``stream >= 0 and correlation >= 0`` or is named ``Event Sync`` / ``Context Sync``) are
  kept when they start before the start of the last ``ProfilerStep`` (``include_last_profiler_step=
  True``: start no later than its end); GPU rows are kept when a kept host row has the same
  correlation id. So the last step's device work is dropped by default, device work launched before
  the first step is kept, and a trace without ``ProfilerStep`` (alexnet) is used whole (HTA logs
  "ProfilerStep not found").
- Temporal breakdown (``analyzers/breakdown_analysis.py``), one row per rank (trace file, all devices
  pooled): over the kept rows with ``stream != -1``, ``kernel_time`` = last end - first start (the
  span), ``idle`` = span - union of intervals, ``compute`` = union of the rows whose name is a
  computation kernel by ``utils.get_kernel_type`` (not ``^nccl.*Kernel``, not ``^Memcpy|^Memset|^dma``,
  not matching ``.*Memcpy|Memset|.*Sync``; so a ``Stream Wait Event`` sync record counts as
  compute), ``non_compute`` = span - compute - idle. Columns are µs (the docstring says ns). It then
  asserts ``idle <= span``, ``compute <= span`` and ``non_compute >= 0``; with the inward rounding
  the negative durations can break these, and HTA raises ``AssertionError`` instead of answering.
  The script then records the assertion and the numbers HTA computed before it
  (``temporal_breakdown_unchecked_us``, HTA's own functions in HTA's order).
- Launch stats (``analyzers/cuda_kernel_analysis.py`` ``cuda_kernel_launch_stats``): host rows named
  ``cudaLaunchKernel`` / ``cudaLaunchKernelExC`` (plus ``cudaMemcpyAsync`` / ``cudaMemsetAsync`` with
  ``include_memory_events``) joined on correlation with rows that have ``stream != -1``;
  ``launch_delay`` = gpu.ts - (cpu.ts + cpu.dur) clipped at 0. HTA's plot of short kernels uses
  ``cpu_duration <= runtime_cutoff (50 µs) and gpu_duration < cpu_duration``; outliers are
  ``cpu_duration > 50`` and ``launch_delay > 100`` (µs).

Each trace is recorded under three settings: ``default`` (what a user of HTA gets), ``exact``
(``HTA_DISABLE_NS_ROUNDING=1``) and ``exact_include_last`` (also ``include_last_profiler_step=True``).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "torch_gpu"
OUTPUT = REPO / "tests" / "data" / "hta_reference.json"
REPO_OUTPUT = REPO / "tests" / "data" / "hta_reference_repo.json"
# The repository's torch traces (Kineto JSON) from an H200, relative to REPO: the collector's torch
# captures (eager and CUDA graphs) and the torch GPU ground-truth cases (gpu-jax-retrace is XPlane).
REPO_TRACE_GLOBS = (
    "benchmarks/gpu/captures/*/torch-*/*.pt.trace.json.gz",
    "benchmarks/truth/cases/gpu-*/*/*.pt.trace.json.gz",
)
HTA_PACKAGE = "holistictraceanalysis"
ROUNDING_ENV = "HTA_DISABLE_NS_ROUNDING"
RUNTIME_CUTOFF_US = 50
LAUNCH_DELAY_CUTOFF_US = 100

# name -> (disable ns rounding, include_last_profiler_step)
SETTINGS: dict[str, tuple[bool, bool]] = {
    "default": (False, False),
    "exact": (True, False),
    "exact_include_last": (True, True),
}


def hta_version() -> str:
    from importlib.metadata import version

    return version(HTA_PACKAGE)


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _quiet_hta() -> None:
    from hta.configs.config import logger

    logger.setLevel(logging.ERROR)


def _launch_summary(frame: Any) -> dict[str, Any]:
    """Summary of HTA's per-launch table (columns cpu_duration, gpu_duration, launch_delay; µs)."""
    cpu = frame["cpu_duration"].to_numpy(dtype=np.float64)
    gpu = frame["gpu_duration"].to_numpy(dtype=np.float64)
    delay = frame["launch_delay"].to_numpy(dtype=np.float64)
    if not len(cpu):
        return {"launches": 0}
    return {
        "launches": int(len(cpu)),
        "short_kernels": int((gpu < cpu).sum()),  # gpu_duration < cpu_duration
        "short_kernels_plotted": int(((cpu <= RUNTIME_CUTOFF_US) & (gpu < cpu)).sum()),  # HTA's plot
        "launch_call_median_us": float(np.median(cpu)),
        "launch_call_p95_us": float(np.percentile(cpu, 95)),
        "launch_delay_median_us": float(np.median(delay)),
        "launch_delay_p95_us": float(np.percentile(delay, 95)),
        "launch_delay_mean_us": float(delay.mean()),
        "gpu_duration_mean_us": float(gpu.mean()),
        "launch_call_outliers": int((cpu > RUNTIME_CUTOFF_US).sum()),
        "launch_delay_outliers": int((delay > LAUNCH_DELAY_CUTOFF_US).sum()),
    }


def _breakdown_us(idle: float, compute: float, non_compute: float, span: float) -> dict[str, float]:
    return {"idle": float(idle), "compute": float(compute), "non_compute": float(non_compute), "span": float(span)}


def _unchecked_breakdown(analysis: Any, rank: int) -> dict[str, float]:
    """What ``get_temporal_breakdown`` computes for ``rank`` before its assertions: the body of
    HTA 0.5.0's ``idle_time_per_rank`` (``analyzers/breakdown_analysis.py``), with HTA's functions."""
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.utils.utils import KernelType, get_kernel_type, merge_kernel_intervals

    symbols = analysis.t.symbol_table.get_sym_table()
    trace_df = analysis.t.get_trace(rank)
    gpu_kernels = trace_df[trace_df["stream"].ne(-1)].copy()
    idle_time, kernel_time = BreakdownAnalysis._get_idle_time_for_kernels(gpu_kernels)
    gpu_kernels["kernel_type"] = gpu_kernels[["name"]].apply(lambda x: get_kernel_type(symbols[x["name"]]), axis=1)
    comp_kernels = merge_kernel_intervals(
        gpu_kernels[gpu_kernels["kernel_type"].eq(KernelType.COMPUTATION.name)].copy()
    )
    compute_time = comp_kernels.end.sum() - comp_kernels.ts.sum()
    return _breakdown_us(idle_time, compute_time, kernel_time - compute_time - idle_time, kernel_time)


def _failed_assertion(error: AssertionError) -> str:
    """The source line of the assertion that failed (``assert non_compute_time >= 0``)."""
    return (traceback.extract_tb(error.__traceback__)[-1].line or "").strip()


def hta_numbers(trace: Path, *, exact: bool = False, include_last_profiler_step: bool = False) -> dict[str, Any]:
    """Run HTA on one trace file (copied alone into a temporary folder) and return its numbers.

    ``temporal_breakdown_us`` is None where HTA's breakdown fails its own assertions; then
    ``temporal_breakdown_error`` names the assertion and ``temporal_breakdown_unchecked_us`` holds
    the numbers it checked."""
    from hta.trace_analysis import TraceAnalysis

    _quiet_hta()
    with tempfile.TemporaryDirectory(prefix="hta_") as tmp, _env(ROUNDING_ENV, "1" if exact else None):
        shutil.copy(trace, Path(tmp) / trace.name)
        started = time.perf_counter()
        analysis = TraceAnalysis(trace_dir=tmp, include_last_profiler_step=include_last_profiler_step)
        load_s = time.perf_counter() - started
        ranks = analysis.t.get_ranks()
        if len(ranks) != 1:
            raise RuntimeError(f"{trace.name}: expected one rank, HTA found {ranks}")
        rank = ranks[0]
        frame = analysis.t.get_trace(rank)
        gpu_rows = frame[frame["stream"].ne(-1)]
        symbols = analysis.t.symbol_table.get_sym_table()
        by_category = gpu_rows["cat"].map(lambda code: symbols[code]).value_counts()
        breakdown: dict[str, Any] = {}
        try:
            row = analysis.get_temporal_breakdown(visualize=False).set_index("rank").loc[rank]
            breakdown["temporal_breakdown_us"] = _breakdown_us(
                row["idle_time(us)"], row["compute_time(us)"], row["non_compute_time(us)"], row["kernel_time(us)"]
            )
        except AssertionError as error:
            breakdown["temporal_breakdown_us"] = None
            breakdown["temporal_breakdown_error"] = f"AssertionError: {_failed_assertion(error)}"
            breakdown["temporal_breakdown_unchecked_us"] = _unchecked_breakdown(analysis, rank)
        kernels_only = analysis.get_cuda_kernel_launch_stats(
            ranks=[rank], include_memory_events=False, visualize=False
        )[rank]
        with_memory = analysis.get_cuda_kernel_launch_stats(
            ranks=[rank], include_memory_events=True, visualize=False
        )[rank]
        return {
            "settings": {"ns_rounding": not exact, "include_last_profiler_step": include_last_profiler_step},
            "rank": int(rank),
            "load_s": round(load_s, 3),
            "iterations": [int(i) for i in analysis.t.get_iterations(rank)],
            "gpu_rows": int(len(gpu_rows)),
            # rows with a stream by Kineto category: a host category here is host work HTA counts as device work
            "gpu_rows_by_category": {str(k): int(v) for k, v in sorted(by_category.items())},
            "gpu_start_us": float(gpu_rows["ts"].min()),
            "gpu_end_us": float((gpu_rows["ts"] + gpu_rows["dur"]).max()),
            **breakdown,
            "launch_stats": {
                "kernels": _launch_summary(kernels_only),
                "with_memory_events": _launch_summary(with_memory),
            },
        }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def float_timestamps(trace: Path) -> bool:
    """True when some event's ``ts`` is a JSON float (HTA rounds such traces to whole µs)."""
    opener = gzip.open if trace.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(trace, "rb") as handle:
        doc = json.load(handle)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return any(isinstance(e, dict) and isinstance(e.get("ts"), float) for e in events)


def record(traces: list[Path], root: Path = TRACES) -> dict[str, Any]:
    """HTA's numbers for ``traces``, keyed by their paths relative to ``root``."""
    import pandas as pd

    out: dict[str, Any] = {
        "hta_version": hta_version(),
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "cwd": os.getcwd(),
        "trace_root": os.path.relpath(root, REPO),  # what the trace keys are relative to, from the repository
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "units": "µs (HTA's own units: timestamps relative to the earliest event of the trace)",
        "settings": {
            name: {"ns_rounding": not exact, "include_last_profiler_step": last}
            for name, (exact, last) in SETTINGS.items()
        },
        "traces": {},
    }
    for trace in traces:
        entry: dict[str, Any] = {
            "sha256": sha256(trace),
            "float_timestamps": float_timestamps(trace),  # HTA's inward rounding applies only then
            "results": {},
        }
        key = trace.resolve().relative_to(root.resolve()).as_posix()
        for name, (exact, last) in SETTINGS.items():
            print(f"{key}: {name}", file=sys.stderr)
            entry["results"][name] = hta_numbers(trace, exact=exact, include_last_profiler_step=last)
        out["traces"][key] = entry
    return out


def repo_traces() -> list[Path]:
    """The repository's traces that the ``repo`` reference covers: the committed files matching
    :data:`REPO_TRACE_GLOBS` (a case still being prepared is recorded once it is committed; outside
    a git checkout, every matching file)."""
    found = {path for pattern in REPO_TRACE_GLOBS for path in REPO.glob(pattern)}
    folders = sorted({pattern.split("*", 1)[0].rsplit("/", 1)[0] for pattern in REPO_TRACE_GLOBS})
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", *folders], cwd=REPO, capture_output=True,
                                check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return sorted(found)
    return sorted(found & {REPO / name for name in listed.split("\0") if name})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path,
                        help=f"trace files (default: every *.json.gz in {TRACES}, or with --set repo every "
                             f"trace of {', '.join(REPO_TRACE_GLOBS)})")
    parser.add_argument("--set", choices=("shared", "repo"), default="shared", dest="trace_set",
                        help="shared: ../shared/traces/torch_gpu into tests/data/hta_reference.json; "
                             "repo: the repository's traces into tests/data/hta_reference_repo.json")
    parser.add_argument("-o", "--output", type=Path, help="the reference file (default: the set's)")
    args = parser.parse_args(argv)
    root, output = (REPO, REPO_OUTPUT) if args.trace_set == "repo" else (TRACES, OUTPUT)
    traces = args.traces or (repo_traces() if args.trace_set == "repo" else sorted(TRACES.glob("*.json.gz")))
    if not traces:
        print(f"no traces found in {root}", file=sys.stderr)
        return 1
    outside = [t for t in traces if not t.resolve().is_relative_to(root.resolve())]
    if outside:
        print(f"traces outside {root}: {', '.join(map(str, outside))}", file=sys.stderr)
        return 1
    args.output = args.output or output
    data = record(traces, root)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
