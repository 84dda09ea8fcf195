"""Shared by the torch capture scripts beside it: an SGD training step, its unprofiled time, and
its profile."""

import statistics
import time
from collections.abc import Callable
from typing import Any


def sgd_step(model: Any, x: Any, y: Any) -> Callable[[], float]:
    """One training step of ``model`` on the fixed batch ``(x, y)``: zero_grad, forward,
    cross-entropy, backward, SGD (lr 0.01) update; returns the loss's value."""
    import torch
    import torch.nn.functional as F

    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def median_step_ms(step: Callable[[], Any], warmup: int, runs: int) -> float:
    """The median time of ``runs`` calls of ``step`` after ``warmup`` ones, in ms, unprofiled."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


def profile_steps(step: Callable[[], Any], out: str, warmup: int, active: int, **options: Any) -> None:
    """Profile ``step`` with torch.profiler (CPU activity, the schedule's ``warmup`` then ``active``
    steps, each ended by ``prof.step()``: ProfilerStep#N) into the Chrome trace ``out``;
    ``options``: the profiler's own (record_shapes, with_stack)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=warmup, active=active),
                 on_trace_ready=lambda p: p.export_chrome_trace(out), **options) as prof:
        for _ in range(warmup + active):
            step()
            prof.step()
