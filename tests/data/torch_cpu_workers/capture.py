"""How the torch profiles beside this file were captured (torch 2.13 CPU, 2 cores): an MLP's
training step fed by a DataLoader whose collate does Python work (~3 ms a batch), ``prof.step()``
per step: ``two_workers`` with two worker processes, which on two cores run beside the step;
``no_workers`` (num_workers=0) with the collate in the step's own thread.

    python tests/data/torch_cpu_workers/capture.py tests/data/torch_cpu_workers [two_workers|no_workers]
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


VARIANTS = {"two_workers": 2, "no_workers": 0}  # folder: DataLoader num_workers


def main(out: Path, variant: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    data = TensorDataset(torch.randn(64 * 16, 64), torch.randint(0, 10, (64 * 16,)))
    loader = DataLoader(data, batch_size=64, num_workers=VARIANTS[variant], collate_fn=collate)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=2, active=6, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(out / variant))) as prof:
        for inputs, labels in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
            prof.step()
    gzip_in_place(out / variant, "*.json")


if __name__ == "__main__":
    for name in sys.argv[2:] or VARIANTS:
        main(Path(sys.argv[1]), name)
