"""How the torch profiles beside this file were captured (torch 2.13 CPU, a shared 2-core VM): one
training step of a 6-layer MLP (512 -> 256 x 6 -> 10, ReLU, batch 128, SGD, cross-entropy) run
twice, each in its own process, by ``torch.profiler`` with ``record_shapes=True`` (8 active steps
after 3 warm-up ones):

- ``float32.pt.trace.json.gz``: the model and data in float32 (torch's default);
- ``float64.pt.trace.json.gz``: the same model and data made float64 (``model.double()``,
  ``x.double()``): the same ops at the same counts, each on float64 inputs (``Input type``
  "double" where the other trace records "float").

Unprofiled, on the machine that captured them (median of 300 steps after 30 warm-up ones):
float32 2.22 ms a step, float64 4.51 ms (2.03x).

    python tests/data/torch_cpu_dtype/capture.py float32 tests/data/torch_cpu_dtype/float32.pt.trace.json
    python tests/data/torch_cpu_dtype/capture.py float64 tests/data/torch_cpu_dtype/float64.pt.trace.json
    gzip -9 tests/data/torch_cpu_dtype/*.pt.trace.json
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from torch_cpu_step import median_step_ms, profile_steps, sgd_step  # noqa: E402 - tests/data/torch_cpu_step.py

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
    step = sgd_step(model, x, y)

    print(f"{dtype}: unprofiled median {median_step_ms(step, 30, 300):.2f} ms a step")
    # (the first profiled step after one the schedule skips: ProfilerStep#1 onwards)
    step()
    profile_steps(step, out, warmup=3, active=8, record_shapes=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
