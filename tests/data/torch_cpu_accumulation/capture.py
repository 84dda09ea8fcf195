"""How the torch profile beside this file was captured (torch 2.13 CPU): gradient accumulation
over four micro-batches, ``prof.step()`` after every micro-batch, as a loop that marks its
micro-batches writes it. Every fourth ProfilerStep holds the optimizer's update (Adam over a
256-256-256-10 MLP), which the others do not.

    python tests/data/torch_cpu_accumulation/capture.py tests/data/torch_cpu_accumulation
"""

import sys
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py

ACCUMULATE = 4


def main(out: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 256), torch.randint(0, 10, (16,))
    folder = out / "per_micro_batch"
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=2, active=12),
                 on_trace_ready=tensorboard_trace_handler(str(folder))) as prof:
        for i in range(15):
            loss = nn.functional.cross_entropy(model(x), y) / ACCUMULATE
            loss.backward()
            if i % ACCUMULATE == ACCUMULATE - 1:
                optimizer.step()
                optimizer.zero_grad()
            prof.step()
    gzip_in_place(folder, "*.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
