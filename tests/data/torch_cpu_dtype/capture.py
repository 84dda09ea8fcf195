"""How the torch profiles beside this file were captured (torch 2.13 CPU, a shared 2-core VM): one
training step of a 6-layer MLP (512 -> 256 x 6 -> 10, ReLU, batch 128, SGD, cross-entropy) run
twice, each in its own process, by ``torch.profiler`` with ``record_shapes=True`` (8 active steps
after 3 warm-up ones):

- ``float32.pt.trace.json.gz``: the model and data in float32 (torch's default);
- ``float64.pt.trace.json.gz``: the same model and data made float64 (``model.double()``,
  ``x.double()``): the same ops at the same counts, each on float64 inputs (``Input type``
  "double" where the other trace records "float").

Unprofiled, on the machine that captured them (median of 300 steps after 30 warm-up ones):
float32 2.78 ms a step, float64 4.15 ms (1.49x).

    python tests/data/torch_cpu_dtype/capture.py float32 tests/data/torch_cpu_dtype/float32.pt.trace.json
    python tests/data/torch_cpu_dtype/capture.py float64 tests/data/torch_cpu_dtype/float64.pt.trace.json
    gzip -9 tests/data/torch_cpu_dtype/*.pt.trace.json
"""

import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

DEPTH, WIDTH, FEATURES, CLASSES, BATCH = 6, 256, 512, 10, 128


def main(dtype: str, out: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    layers: list[nn.Module] = []
    width_in = FEATURES
    for _ in range(DEPTH):
        layers += [nn.Linear(width_in, WIDTH), nn.ReLU()]
        width_in = WIDTH
    model = nn.Sequential(*layers, nn.Linear(width_in, CLASSES))
    x, y = torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))
    if dtype == "float64":
        model, x = model.double(), x.double()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(30):
        step()
    times = []
    for _ in range(300):
        start = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - start)
    print(f"{dtype}: unprofiled median {statistics.median(times) / 1e6:.2f} ms a step")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=3, active=8),
                 record_shapes=True, on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(12):
            step()
            prof.step()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
