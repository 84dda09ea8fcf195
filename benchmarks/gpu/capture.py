"""The GPU ground truth in one run: ``python -m benchmarks.gpu.capture --device cuda --out DIR``.

GPU time is scarce (a short lease on a shared machine), so this one script does all of it, and is
dry-run on the CPU first (``--device cpu --quick``; tests/test_gpu_capture.py runs that dry run in
CI):

1. **injected-cause cases** (``benchmarks/gpu/cases.py``): per case, a clean and an injected
   twin, their steps timed **without** the profiler in interleaved blocks (CUDA events around
   each block on a GPU, the host clock after a synchronize on the CPU), then one profiled capture
   of each (torch.profiler with CPU and CUDA activities, ``ProfilerStep`` markers; JAX's profiler
   for the JAX cases), and a ``ground_truth.json`` with the measured cost; each framework's cases
   run in a process of their own (two profilers in one process cannot both subscribe to CUPTI);
2. **captures** with traceview's own collectors (``traceview collect``) of the paired workloads in
   torch eager, torch.compile, CUDA graphs (``cudagraphs``: ``mode="reduce-overhead"``, on a GPU
   only) and JAX ``jax.jit`` on the device, a few steps each, in the time left;
3. **packs** it all into at most four gzip'd tar parts of at most 15 MiB under ``--out``, no deeper
   than the folder itself (what a leased machine's output folder hands back: 8 files, 64 MiB),
   leaving out the largest collected workloads if it would not fit, with ``summary.json`` beside
   them, and prints a short table last.

``--budget-s`` stops starting new work once that much time has passed (what is done is packed);
run it with a time limit a minute or more above it.

On a GPU machine with torch and JAX but no network (and no TensorFlow, which the script does not
need), traceview runs from the repository (``PYTHONPATH=.``); its collectors need ``orjson``: where
the machine lacks it, bring it as a wheel (``pip download --no-deps --only-binary=:all:
--python-version 3.12 --platform manylinux_2_17_x86_64 -d .whl orjson``, then ``pip install
--no-index --target /tmp/site .whl/*.whl`` there and ``/tmp/site`` on ``PYTHONPATH``), or the
summary reports each collect as failed, with its output.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from benchmarks.gpu.cases import CASES, GpuCase, GpuStep

REPO = Path(__file__).resolve().parents[2]
# The transformer first: the torch-vs-JAX comparison the README shows is of it, and a workload the
# time budget leaves out is one of the last.
WORKLOADS = ("transformer", "mlp2", "cnn", "lstm", "mlp-adam")
QUICK_WORKLOADS = ("mlp2",)
QUICK_CASES = ("gpu-tiny-ops", "gpu-item-sync", "gpu-jax-sync")  # (both frameworks' processes)
PART_BYTES = 15 * 1024 * 1024  # each packed part under a leased machine's 16 MiB a file
# What such a machine hands back: at most 8 files and 64 MiB together. Four parts (60 MiB) leave room
# for summary.json and a log beside them.
MAX_PARTS = 4


def _now() -> float:
    return time.perf_counter()


class Budget:
    """Seconds since the start; whether there is time to start more work."""

    def __init__(self, seconds: float) -> None:
        self.start, self.seconds = _now(), seconds

    def left(self) -> float:
        return self.seconds - (_now() - self.start)


# ---------------------------------------------------------------------------------------------
# 1. the collectors
# ---------------------------------------------------------------------------------------------

def collect(device: str, out: Path, workloads: tuple[str, ...], steps: int, budget: Budget,
            frameworks: tuple[str, ...]) -> list[dict[str, Any]]:
    """``traceview collect`` per workload (its own processes), into ``out/collect/<workload>``."""
    done = []
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for workload in workloads:
        if budget.left() < 60:
            done.append({"workload": workload, "skipped": "out of time"})
            continue
        started = _now()
        modes = "eager,compile,cudagraphs,jit" if device == "cuda" else "eager,compile,jit"
        cmd = [sys.executable, "-m", "traceview", "collect", workload, "--framework", ",".join(frameworks),
               "-m", modes, "--device", device, "--steps", str(steps), "-o",
               str(out / "collect" / workload), "--overwrite"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO,
                                  timeout=max(30.0, budget.left() - 30))
        except subprocess.TimeoutExpired:  # (what it wrote before the limit is packed all the same)
            done.append({"workload": workload, "returncode": None, "seconds": round(_now() - started, 1),
                         "output": "stopped at the time budget"})
            continue
        done.append({"workload": workload, "returncode": proc.returncode, "seconds": round(_now() - started, 1),
                     "output": (proc.stdout + proc.stderr)[-1500:]})
    return done


# ---------------------------------------------------------------------------------------------
# 2. the cases
# ---------------------------------------------------------------------------------------------

def _block_ms(step: GpuStep, indices: range, device: str, framework: str) -> float:
    """Mean ms a step over ``indices``, timed without the profiler: CUDA events around the block
    on a torch GPU step, else the host clock after a sync (the device's work is in the block)."""
    if device == "cuda" and framework == "torch":
        import torch

        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        step.sync()
        begin.record()
        for i in indices:
            step.step(i)
        end.record()
        step.sync()
        return begin.elapsed_time(end) / len(indices)
    step.sync()
    started = _now()
    for i in indices:
        step.step(i)
    step.sync()
    return (_now() - started) * 1e3 / len(indices)


def measure(case: GpuCase, device: str, rounds: int, block: int) -> tuple[dict[str, Any], dict[str, GpuStep]]:
    """Both twins, built once, timed in interleaved blocks (order rotating each round): the
    measurement, and the twins (warm, for their profiled captures)."""
    steps = {v: case.build(v, device) for v in ("clean", "injected")}
    counter = 0
    for v, s in steps.items():  # warm-up: compilation, allocator, autotuning
        for _ in range(3):
            s.step(counter)
            counter += 1
        s.sync()
    samples: dict[str, list[float]] = {"clean": [], "injected": []}
    for r in range(rounds):
        for v in (("clean", "injected") if r % 2 == 0 else ("injected", "clean")):
            samples[v].append(_block_ms(steps[v], range(counter, counter + block), device, case.framework))
            counter += block
    clean, injected = statistics.median(samples["clean"]), statistics.median(samples["injected"])
    return {"clean_ms": clean, "injected_ms": injected, "cost_ms": injected - clean, "samples_ms": samples,
            "design": f"{rounds} rounds of one {block}-step block per twin, order alternating; mean per step "
                      "in a block, median of the blocks"}, steps


def profile(case: GpuCase, step: GpuStep, variant: str, device: str, folder: Path, steps: int) -> str:
    """One profiled capture of ``step``: a torch Kineto trace, or a JAX XPlane. The steps run as
    in the unprofiled blocks: the device is waited for once, after the last step (PROFILED_SYNC),
    so a cause that is a wait (a per-step ``.item()``) is the injected twin's alone; each step's
    window still ends with the device work it launched (traceview's step rule)."""
    folder.mkdir(parents=True, exist_ok=True)
    if case.framework == "jax":
        import jax

        with jax.profiler.trace(str(folder)):
            for i in range(steps):
                with jax.profiler.StepTraceAnnotation("train", step_num=i):
                    step.step(10_000 + i)
            step.sync()
        found = sorted(folder.glob("plugins/profile/*/*.xplane.pb"))
        return str(found[-1].relative_to(folder.parent)) if found else ""
    from torch.profiler import ProfilerActivity, profile as torch_profile, record_function

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    path = folder / f"{variant}.pt.trace.json"
    # Every step in the window, each under the marker prof.step() writes (ProfilerStep#N); no
    # schedule: a schedule's cycle clears its events when the next one starts.
    with torch_profile(activities=activities, record_shapes=False, with_stack=False) as prof:
        for i in range(steps):
            with record_function(f"ProfilerStep#{i}"):
                step.step(20_000 + i)
        step.sync()
    prof.export_chrome_trace(str(path))
    with path.open("rb") as raw, gzip.open(f"{path}.gz", "wb") as packed:
        shutil.copyfileobj(raw, packed)
    path.unlink()
    return str(Path(f"{path}.gz").relative_to(folder.parent))


# How the profiled steps wait for the device; ground_truth.json records it. (Captures before
# 2026-11-28 17:00 synchronized inside every step's marker: in both twins, which hid a per-step
# sync's cost from the traces.)
PROFILED_SYNC = "once, after the last profiled step"


def run_case(case: GpuCase, device: str, out: Path, rounds: int, block: int, profiled: int) -> dict[str, Any]:
    folder = out / "cases" / case.name
    measured, steps = measure(case, device, rounds, block)
    traces = {v: profile(case, steps[v], v, device, folder / v, profiled) for v in ("clean", "injected")}
    truth = {"case": {"name": case.name, "framework": case.framework, "cause": case.cause,
                      "expected_bucket": case.expected_bucket, "expected_finding": case.expected_finding,
                      "device": device, "cause_needs_cuda": case.needs_cuda},
             "unprofiled": measured, "traces": traces, "profiled_sync": PROFILED_SYNC}
    (folder / "ground_truth.json").write_text(json.dumps(truth, indent=1))
    return {"case": case.name, "clean_ms": round(measured["clean_ms"], 4), "injected_ms": round(measured["injected_ms"], 4),
            "cost_ms": round(measured["cost_ms"], 4)}


# ---------------------------------------------------------------------------------------------
# 3. facts and packing
# ---------------------------------------------------------------------------------------------

def machine_facts(device: str) -> dict[str, Any]:
    facts: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(), "device": device}
    try:
        import torch

        facts["torch"] = torch.__version__
        facts["cuda"] = torch.version.cuda
        if device == "cuda" and torch.cuda.is_available():
            facts["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        facts["torch"] = None
    try:
        import jax

        facts["jax"] = jax.__version__
    except ImportError:
        facts["jax"] = None
    if shutil.which("nvidia-smi"):
        query = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                               capture_output=True, text=True, check=False)
        facts["nvidia_smi"] = query.stdout.strip()
    return facts


def _archive(work: Path) -> bytes:
    scratch = work.parent / "_capture.tar.gz"
    with tarfile.open(scratch, "w:gz") as tar:
        tar.add(work, arcname="gpu_capture")
    data = scratch.read_bytes()
    scratch.unlink()
    return data


def pack(work: Path, out: Path) -> tuple[list[str], list[str]]:
    """``work`` as gzip'd tar parts of at most PART_BYTES in ``out``, at most MAX_PARTS of them, and
    the collected workloads left out to fit (largest first: the cases, the ground truth, stay)."""
    data = _archive(work)
    left_out: list[str] = []
    collected = sorted((p for p in (work / "collect").glob("*") if p.is_dir()),
                       key=lambda p: -sum(f.stat().st_size for f in p.rglob("*") if f.is_file()))
    while len(data) > MAX_PARTS * PART_BYTES and collected:
        dropped = collected.pop(0)
        shutil.rmtree(dropped)
        left_out.append(f"collect/{dropped.name}")
        data = _archive(work)
    if len(data) > MAX_PARTS * PART_BYTES:
        raise SystemExit(f"the cases alone pack to {len(data) / 2**20:.1f} MiB: more than {MAX_PARTS} parts of "
                         f"{PART_BYTES / 2**20:.0f} MiB; profile fewer steps")
    names = []
    for k in range(0, max(len(data), 1), PART_BYTES):
        name = f"capture.tar.gz.part{k // PART_BYTES}"
        (out / name).write_bytes(data[k:k + PART_BYTES])
        names.append(name)
    return names, left_out


def run_cases(names: list[str], device: str, work: Path, quick: bool, budget: Budget) -> dict[str, Any]:
    """The cases ``names`` in this process, into ``work/cases``: their rows and errors."""
    done: dict[str, Any] = {"cases": [], "errors": []}
    profiled = 2 if quick else 5
    for case in CASES:
        if case.name not in names:
            continue
        if budget.left() < 30:
            done["cases"].append({"case": case.name, "skipped": "out of time"})
            continue
        started = _now()
        try:
            rounds, block = (2, 3) if quick else (case.rounds, case.block)
            row = run_case(case, device, work, rounds, block, profiled)
        except Exception as err:  # noqa: BLE001 - one case's failure must not cost the others' device time
            done["errors"].append(f"{case.name}: {type(err).__name__}: {err}")
            continue
        row["seconds"] = round(_now() - started, 1)
        done["cases"].append(row)
    return done


def cases_in_own_process(names: list[str], framework: str, args: argparse.Namespace, work: Path,
                         budget: Budget) -> dict[str, Any]:
    """One framework's cases in a process of its own: two profilers in one process cannot both
    subscribe to CUPTI (JAX's after torch's: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, and its
    traces held no device events), and a crash costs only that framework's cases."""
    result = work / f"cases_{framework}.json"
    cmd = [sys.executable, "-m", "benchmarks.gpu.capture", "--device", args.device, "--cases", ",".join(names),
           "--into", str(work), "--result", str(result), "--budget-s", str(max(budget.left(), 1.0))] + \
        (["--quick"] if args.quick else [])
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=budget.left() + 60)
    except subprocess.TimeoutExpired:
        return {"cases": [{"case": n, "skipped": "stopped at the time budget"} for n in names], "errors": []}
    if proc.returncode != 0 or not result.is_file():
        return {"cases": [], "errors": [f"{framework} cases: exit status {proc.returncode}: "
                                        f"{(proc.stdout + proc.stderr)[-800:]}"]}
    done = json.loads(result.read_text())
    result.unlink()
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu_capture_out")))
    ap.add_argument("--quick", action="store_true", help="one workload, three cases, few steps (the CPU dry run)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="start no new work after this (default 420)")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--no-collect", action="store_true", help="skip the collectors' captures")
    # (a framework's cases, run by the parent: the work folder, and the file their rows go to)
    ap.add_argument("--into", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    # JAX takes 75 % of the GPU's memory when it starts unless told not to; torch's cases share it.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    budget = Budget(args.budget_s)
    wanted = args.cases.split(",") if args.cases else (QUICK_CASES if args.quick else [c.name for c in CASES])
    if args.into is not None:
        args.result.write_text(json.dumps(run_cases(wanted, args.device, args.into, args.quick, budget)))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "_work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    summary: dict[str, Any] = {"machine": machine_facts(args.device), "collect": [], "cases": [], "errors": []}
    frameworks = tuple(f for f in ("torch", "jax") if summary["machine"].get(f))
    for framework in ("torch", "jax"):
        names = [c.name for c in CASES if c.name in wanted and c.framework == framework]
        if not names:
            continue
        if framework not in frameworks:
            summary["cases"] += [{"case": n, "skipped": f"{framework} is not installed"} for n in names]
            continue
        done = cases_in_own_process(names, framework, args, work, budget)
        summary["cases"] += done["cases"]
        summary["errors"] += done["errors"]
    # The cases first (the ground truth), then the collectors' captures in the time left.
    if not args.no_collect:
        try:
            summary["collect"] = collect(args.device, work, QUICK_WORKLOADS if args.quick else WORKLOADS,
                                         3 if args.quick else 8, budget, frameworks)
        except (OSError, subprocess.SubprocessError) as err:
            summary["errors"].append(f"collect: {err}")
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    summary["packed"], summary["left_out_to_fit"] = pack(work, args.out)
    shutil.rmtree(work)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"machine: {summary['machine']}")
    for item in summary["collect"]:
        print(f"collect {item['workload']}: " + (item.get("skipped") or f"rc {item['returncode']}, {item['seconds']} s"))
    for row in summary["cases"]:
        print(f"{row['case']:<26} " + (row.get("skipped") or f"clean {row['clean_ms']:.3f} ms  injected "
                                        f"{row['injected_ms']:.3f} ms  cost {row['cost_ms']:+.3f} ms  ({row['seconds']} s)"))
    for error in summary["errors"]:
        print(f"error: {error}")
    for left in summary["left_out_to_fit"]:
        print(f"left out to fit the files handed back: {left}")
    print(f"packed: {', '.join(summary['packed'])} in {args.out} ({budget.seconds - budget.left():.0f} s)")
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
