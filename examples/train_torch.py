"""A small PyTorch training script with no profiler in it, for ``traceview run``.

    python examples/train_torch.py [--steps 30] [--batch 256]
    traceview run -- python examples/train_torch.py

A 3-layer MLP on random regression data, Adam, one optimizer step per batch, on CPU; it takes a
few seconds.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps (batches)")
    parser.add_argument("--batch", type=int, default=256, help="rows per batch")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (one: steadier steps on a small VM)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.randn(args.steps * args.batch, 32)
    y = x[:, :1] * 2.0 - x[:, 1:2] + 0.1 * torch.randn(len(x), 1)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    for step, start in enumerate(range(0, len(x), args.batch), start=1):
        xb, yb = x[start:start + args.batch], y[start:start + args.batch]
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}", flush=True)
    print(f"trained {args.steps} steps", flush=True)


if __name__ == "__main__":
    main()
