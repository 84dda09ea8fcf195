"""How the traces beside this file were captured (torch 2.13 CPU): two ranks of a data-parallel
training step on torch.distributed's Gloo backend, one process each, on one machine.

Each step: forward of a two-layer MLP wrapped in DistributedDataParallel, backward (DDP
all-reduces the gradients), the SGD update. Rank 1 also sleeps 4 ms between its forward and
backward (a slow rank: its own host work), so rank 0 waits for it inside the collectives (its
threads block while ``gloo:all_reduce`` runs on the process group's work thread). ``profile()`` with a schedule
(one warm-up step, six active), ``prof.step()`` after each step.

    python tests/data/torch_cpu_gloo/capture.py tests/data/torch_cpu_gloo
"""

import gzip
import os
import shutil
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

SLOW_RANK_SLEEP_S = 0.004


def run(rank: int, out: str) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29561")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, labels = torch.randn(128, 256), torch.randint(0, 10, (128,))
    slow = rank == 1

    def step() -> None:
        loss = nn.functional.cross_entropy(model(inputs), labels)
        if slow:
            time.sleep(SLOW_RANK_SLEEP_S)
        optimizer.zero_grad()
        loss.backward()  # (DDP all-reduces the gradients as backward produces them)
        optimizer.step()

    for _ in range(3):
        step()
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=6, repeat=1)) as prof:
        for _ in range(7):
            step()
            prof.step()
    plain = Path(out) / f"rank-{rank}.pt.trace.json"
    prof.export_chrome_trace(str(plain))
    with plain.open("rb") as src, gzip.open(f"{plain}.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1],), nprocs=2)
