"""How the torch profile beside this file was captured (torch 2.13 CPU): an MLP's SGD step with
a gradient penalty — the gradients taken with ``torch.autograd.grad(create_graph=True)``, their
squared norms added to the loss, and that differentiated again — profiled with ``prof.step()``
per step (schedule wait=1, warmup=2, active=3). The second backward runs autograd nodes of a
backward's backward (``TanhBackwardBackward0``, ``MseLossBackwardBackward0``), which
torch.compile cannot compile ("torch.compile with aot_autograd does not currently support double
backward").

    python tests/data/torch_cpu_gradient_penalty/capture.py tests/data/torch_cpu_gradient_penalty
"""

import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py


def main(out: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.Tanh(), torch.nn.Linear(512, 10))
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.01)
    x, y = torch.randn(128, 256), torch.randn(128, 10)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        grads = torch.autograd.grad(loss, params, create_graph=True)
        (loss + sum((g ** 2).sum() for g in grads)).backward()
        optimizer.step()

    for _ in range(5):
        step()
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=2, active=3),
                 on_trace_ready=tensorboard_trace_handler(str(out / "penalty"))) as prof:
        for _ in range(7):
            step()
            prof.step()
    gzip_in_place(out / "penalty", "*.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
