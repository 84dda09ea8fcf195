"""How the torch profile beside this file was captured (torch 2.13 CPU, 2 cores): an MLP's
training step fed by a DataLoader with two worker processes whose collate does Python work
(~3 ms a batch), ``prof.step()`` per step. On two cores the workers run beside the step.

    python tests/data/torch_cpu_workers/capture.py tests/data/torch_cpu_workers
"""

import sys
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py


def collate(samples: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    total = 0
    for i in range(30_000):  # (per-batch Python work in the workers)
        total += i % 7
    return torch.stack([s[0] for s in samples]), torch.stack([s[1] for s in samples])


def main(out: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    data = TensorDataset(torch.randn(64 * 16, 64), torch.randint(0, 10, (64 * 16,)))
    loader = DataLoader(data, batch_size=64, num_workers=2, collate_fn=collate)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=2, active=6, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(out / "two_workers"))) as prof:
        for inputs, labels in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
            prof.step()
    gzip_in_place(out / "two_workers", "*.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
