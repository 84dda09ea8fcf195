"""How the torch profiles beside this file were captured (torch 2.13 CPU, 2 cores, no Python
tracer): an MLP's training step (3 Linear layers, SGD), ``prof.step()`` per step, with the
user's Python (a 0.6 ms busy loop per call, 1.8 ms a step) run by the framework:

- ``function``: a custom ``torch.autograd.Function`` on the logits whose backward runs it 3×;
- ``tensor_hooks``: ``weight.register_hook`` on each Linear layer's weight (the autograd engine
  runs it inside the node range of the weight's ``AccumulateGrad``);
- ``module_hooks``: ``register_full_backward_hook`` on each Linear layer;
- ``optimizer_hook``: ``optimizer.register_step_post_hook`` running it 3× (inside torch.optim's
  ``Optimizer.step#SGD.step`` range).

Unprofiled, each added 1.8-2.2 ms to a 1.8 ms step.

    python tests/data/torch_cpu_hooks/capture.py tests/data/torch_cpu_hooks [function|tensor_hooks|...]
"""

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py

CALL_S = 0.0006  # the user's Python per call


def python_work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits):  # noqa: ANN001, ANN205
        return logits.clone()

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001, ANN205
        python_work(3 * CALL_S)
        return grad


def main(out: Path, variant: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, labels = torch.randn(64, 256), torch.randint(0, 10, (64,))
    linears = [m for m in model if isinstance(m, nn.Linear)]
    if variant == "tensor_hooks":
        for layer in linears:
            layer.weight.register_hook(lambda grad: python_work(CALL_S))
    elif variant == "module_hooks":
        for layer in linears:
            layer.register_full_backward_hook(lambda module, grad_in, grad_out: python_work(CALL_S))
    elif variant == "optimizer_hook":
        optimizer.register_step_post_hook(lambda opt, args, kwargs: python_work(3 * CALL_S))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=2, active=5, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(str(out / variant))) as prof:
        for _ in range(8):
            optimizer.zero_grad(set_to_none=True)
            logits = model(inputs)
            if variant == "function":
                logits = ScaleGrad.apply(logits)
            nn.functional.cross_entropy(logits, labels).backward()
            optimizer.step()
            prof.step()
    gzip_in_place(out / variant, "*.json")


VARIANTS = ("function", "tensor_hooks", "module_hooks", "optimizer_hook")

if __name__ == "__main__":
    for name in sys.argv[2:] or VARIANTS:
        main(Path(sys.argv[1]), name)
