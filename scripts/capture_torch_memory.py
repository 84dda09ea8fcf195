"""Capture a small torch CPU trace with allocator samples — the fixture in tests/data/torch_cpu_memory
was written by:

    python scripts/capture_torch_memory.py tests/data/torch_cpu_memory

A 2-layer MLP trained with Adam for 6 steps through ``traceview.capture(memory=True)``
(torch.profiler ``profile_memory=True``); step 3 also builds a 64 MiB scratch tensor
(``torch.ones``) so one step's peak and one op's allocations stand out by construction.
"""

from __future__ import annotations

import sys

import torch

import traceview

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(10, 50), torch.nn.ReLU(), torch.nn.Linear(50, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x, y = torch.randn(1000, 10), torch.randn(1000, 1)
SCRATCH_ELEMENTS = 16 * 2**20  # float32: 64 MiB

with traceview.capture(sys.argv[1], "torch", memory=True, python_events=False, overwrite=True,
                       description="mlp2 Adam with allocator samples; a 64 MiB scratch tensor in step 3") as cap:
    for i in range(6):
        with cap.step():
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            if i == 3:
                scratch = torch.ones(SCRATCH_ELEMENTS)
                del scratch
