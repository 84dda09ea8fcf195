"""How the traces beside this file were captured (torch 2.13 CPU): torch.profiler runs a user
would write without traceview's collectors, whose steps carry no ProfilerStep markers (or, in
the last one, markers a schedule cut short).

- ``one_step.json.gz``: one training step of a two-layer MLP under ``profile()``: no loop at all,
  so the whole trace is the step (its two ``aten::linear`` repeat, and are not steps).
- ``numbered_steps.json.gz``: eight steps, each in ``record_function(f"train_step_{i}")``.
- ``plain_loop.json.gz``: eight steps in a plain loop, nothing marking them (no ``prof.step()``,
  no ``record_function``), then one more forward pass with no update (an unfinished iteration).
- ``wrapped_optimizer.json.gz``: four steps of a plain loop whose optimizer wraps another and
  steps it (both updates are torch.optim ranges, the inner one nested in the outer).
- ``partial_cycle.json.gz``: ``schedule(wait=1, warmup=1, active=3)`` (repeating) over eight
  steps, ``prof.step()`` after each. The first cycle's trace is discarded; the second cycle is
  active from step 7 when the loop ends, so its trace, written when the profiler stops, holds
  ``ProfilerStep#7`` (the step) and ``ProfilerStep#8``: the stretch from the last ``step()``
  call to the stop, with nothing in it.
- ``inference_loop.json.gz``: a plain ``with profile(): for ...`` inference loop — twelve
  ``model(x)`` calls under ``torch.no_grad()``, no marker, no optimizer: the same top-level ops
  repeat in the same order (unprofiled, on the capturing machine: 39 µs a call).

    python tests/data/torch_cpu_unmarked/capture.py tests/data/torch_cpu_unmarked
"""

import gzip
import shutil
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def main(out: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    step()  # (warm: the captures hold no first-call work)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    _export(prof, out / "one_step.json.gz")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(8):
            with record_function(f"train_step_{i}"):
                step()
    _export(prof, out / "numbered_steps.json.gz")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(8):
            step()
        model(x)
    _export(prof, out / "plain_loop.json.gz")

    wrapper = _Wrapper(optimizer)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(4):
            wrapper.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            wrapper.step()
    _export(prof, out / "wrapped_optimizer.json.gz")

    cycles: list[profile] = []
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=cycles.append) as prof:
        for _ in range(8):
            step()
            prof.step()
    _export(cycles[-1], out / "partial_cycle.json.gz")
    inference_loop(out)


def inference_loop(out: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10))
    model.eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        for _ in range(5):
            model(x)
        times = []
        for _ in range(40):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
        print(f"unprofiled: {statistics.median(times) * 1e6:.0f} µs a call (median of 40)")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(12):
                model(x)
    _export(prof, out / "inference_loop.json.gz")


class _Wrapper(torch.optim.Optimizer):
    """An optimizer that steps another (as Lookahead-style wrappers do)."""

    def __init__(self, inner: torch.optim.Optimizer) -> None:
        super().__init__([p for group in inner.param_groups for p in group["params"]], {})
        self.inner = inner

    def step(self, closure: object = None) -> None:  # noqa: ARG002 - the Optimizer signature
        self.inner.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.inner.zero_grad(set_to_none)


def _export(prof: profile, path: Path) -> None:
    plain = path.with_suffix("")
    prof.export_chrome_trace(str(plain))
    with plain.open("rb") as src, gzip.open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
