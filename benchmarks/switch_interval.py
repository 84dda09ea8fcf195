"""What a shorter switch interval does to a step beside a thread that runs Python.

``gil_contention``'s advice says that, until the other thread's work moves out of the process,
a shorter switch interval (``sys.setswitchinterval(0.0005)``) shortens each wait for the
interpreter lock. This measures it: for the truth cases' torch eager, TF eager and jax.jit steps
(benchmarks/truth/cases.py: an MLP 512 → 1024 → 10, batch 128, SGD; one intra-op thread for torch
and TF), each framework in its own process, the median step time alone, then beside a thread
running a pure-Python loop at intervals of 5 ms (CPython's default), 1 ms and 0.5 ms — each twice,
in turn — and that thread's loop rate (what the shorter interval costs it).

    python -m benchmarks.switch_interval [--frameworks torch,tf,jax] [--steps 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTERVALS_S = (0.005, 0.001, 0.0005)  # CPython's default, then shorter
ROUNDS = 2
WARMUP_STEPS = 10


def step_of(framework: str) -> Callable[[], object]:
    """The truth cases' clean step (benchmarks/truth/cases.py) of ``framework``, one intra-op
    thread for torch and TF (as the lock-wait truth cases run; XLA keeps its own pools)."""
    if framework == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from benchmarks.truth import cases

    if framework == "torch":
        import torch

        torch.set_num_threads(1)
        program: cases.StepProgram = cases.TorchStep()
    elif framework == "tf":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        program = cases.TFStep(mode="eager")
    else:
        program = cases.JaxStep()
    counter = iter(range(10**9))
    return lambda: program.step(next(counter))


def median_step_ms(step: Callable[[], object], n: int) -> float:
    """The median of ``n`` steps' wall clock, in ms."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def measure(framework: str, n: int) -> dict:
    """One framework, in this process: the step alone, then beside a busy thread at each interval."""
    step = step_of(framework)
    for _ in range(WARMUP_STEPS):
        step()
    alone = median_step_ms(step, n)
    stop, loops = threading.Event(), [0]

    def busy() -> None:  # pure Python: nothing in it lets go of the lock
        while not stop.is_set():
            for _ in range(10_000):
                pass
            loops[0] += 1

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    beside: dict[str, list[tuple[float, float]]] = {}
    try:
        for _ in range(ROUNDS):
            for interval in INTERVALS_S:
                sys.setswitchinterval(interval)
                loops[0], started = 0, time.perf_counter()
                ms = median_step_ms(step, n)
                beside.setdefault(f"{interval * 1e3:g} ms", []).append((ms, loops[0] / (time.perf_counter() - started)))
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(INTERVALS_S[0])
    return {"framework": framework, "alone_ms": alone,
            "beside": {k: {"step_ms": statistics.median(m for m, _ in v), "busy_loops_per_s": statistics.median(r for _, r in v)}
                       for k, v in beside.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default="torch,tf,jax")
    parser.add_argument("--steps", type=int, default=40, help="steps per median")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # (a child process: one framework)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.steps)))
        return
    rows = []
    for framework in args.frameworks.split(","):
        out = subprocess.run([sys.executable, "-m", "benchmarks.switch_interval", "--one", framework,
                              "--steps", str(args.steps)], capture_output=True, text=True, check=True, cwd=ROOT)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    head = "| step | alone | " + " | ".join(f"beside a busy thread, interval {k}" for k in rows[0]["beside"]) + " |"
    print(head)
    print("|---|---|" + "---|" * len(rows[0]["beside"]))
    for r in rows:
        cells = [f"{v['step_ms']:.1f} ms ({v['busy_loops_per_s']:,.0f} loops/s)" for v in r["beside"].values()]
        print(f"| {r['framework']} | {r['alone_ms']:.1f} ms | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
