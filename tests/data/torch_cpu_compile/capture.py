"""How the torch profiles beside this file were captured (torch 2.13 CPU, inductor): an MLP's
training step under ``torch.compile``, ``prof.step()`` per step, compiled before the capture.

- ``whole/``: the forward compiles into one graph: one ``Torch-Compiled Region`` a step.
- ``graph_break/``: the same forward with a graph break in the middle (``torch._dynamo.graph_break()``,
  as a ``print`` or ``.item()`` in a forward makes one): dynamo compiles the rest of the function
  as a second frame, two regions a step ("0/0", and "1/0" nested in it).
- ``whole_python_events/``: as ``whole/``, profiled with Python events (``with_stack=True``): the
  runtime's Python (dynamo's guard check, AOT autograd's runtime forward, inductor's generated
  module and the C++ kernels it calls) inside each step, no compilation.

    python tests/data/torch_cpu_compile/capture.py tests/data/torch_cpu_compile [NAME ...]
"""

import sys
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py


class Net(nn.Module):
    def __init__(self, breaks: bool) -> None:
        super().__init__()
        self.first = nn.Sequential(nn.Linear(64, 128), nn.ReLU())
        self.second = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
        self.breaks = breaks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.first(x)
        if self.breaks:
            torch._dynamo.graph_break()
        return self.second(h)


CAPTURES = {"whole": (False, False), "graph_break": (True, False), "whole_python_events": (False, True)}


def main(out: Path, names: list[str]) -> None:
    torch.set_num_threads(2)
    for name in names or CAPTURES:
        breaks, python_events = CAPTURES[name]
        torch.manual_seed(0)
        model = torch.compile(Net(breaks))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        batch = torch.randn(32, 64), torch.randint(0, 10, (32,))
        for _ in range(3):
            train_step(model, optimizer, batch)  # (compiled before the capture)
        folder = out / name
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=4),
                     with_stack=python_events, on_trace_ready=tensorboard_trace_handler(str(folder))) as prof:
            for _ in range(5):
                train_step(model, optimizer, batch)
                prof.step()
        gzip_in_place(folder, "*.json")


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: tuple[torch.Tensor, torch.Tensor]) -> None:
    optimizer.zero_grad()
    inputs, labels = batch
    nn.functional.cross_entropy(model(inputs), labels).backward()
    optimizer.step()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
