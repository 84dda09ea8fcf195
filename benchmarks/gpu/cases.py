"""GPU injected-cause cases: a clean twin and an injected twin of one small torch (or JAX) step
each, identical but for one added cost, whose size is measured without the profiler.

The table (:data:`CASES`) says, as data, what each case injects, where the analysis should put
it and which finding should lead, as ``benchmarks/truth/cases.py`` does for the CPU cases. A
builder ``build(variant, device)`` returns a :class:`GpuStep`: ``step(i)`` runs one training
step and returns when the host is done with it (the device may still be running), ``sync()``
waits for the device. torch and JAX are imported inside the builders only.

On ``--device cpu`` (the dry run of ``benchmarks/gpu/capture.py``) every case still runs: a
pinned buffer is a plain one, a sync waits for nothing, and the costs are whatever they are on
the CPU; the dry run proves the script, not the causes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The shared step: a 2-layer MLP, batch x features -> width -> classes, SGD.
BATCH, FEATURES, WIDTH, CLASSES = 512, 1024, 4096, 10
LR = 0.01
SEED = 0


class GpuStep:
    """One variant of a case."""

    framework = "torch"

    def step(self, i: int) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        """Wait for the device's work (torch.cuda.synchronize; JAX: block on the last result)."""


@dataclass(frozen=True)
class GpuCase:
    name: str
    framework: str  # "torch" or "jax"
    cause: str
    expected_bucket: str
    expected_finding: str
    build: Callable[[str, str], GpuStep]
    needs_cuda: bool = False  # the cause exists only on a GPU (on the CPU dry run: noted, still run)
    rounds: int = 8  # unprofiled rounds (one block per twin each)
    block: int = 10  # steps a block


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------

class TorchMlp(GpuStep):
    """The MLP step on ``device``; ``before(i)`` runs first in the step (input, copies), ``after(i)``
    last (a sync, tiny ops); ``compiled``: the step through torch.compile."""

    def __init__(self, device: str, before: Callable[[int], Any] | None = None,
                 after: Callable[[int, Any], None] | None = None, compiled: bool = False,
                 model: Any = None) -> None:
        import torch

        torch.manual_seed(SEED)
        self.torch = torch
        self.device = torch.device(device)
        self.model = model or torch.nn.Sequential(torch.nn.Linear(FEATURES, WIDTH), torch.nn.ReLU(),
                                                  torch.nn.Linear(WIDTH, CLASSES)).to(self.device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR)
        self.x = torch.randn(BATCH, FEATURES, device=self.device)
        self.y = torch.randint(0, CLASSES, (BATCH,), device=self.device)
        self.before, self.after = before, after
        self.loss_fn = torch.nn.functional.cross_entropy
        self.forward = torch.compile(self._forward) if compiled else self._forward

    def _forward(self, x: Any, y: Any) -> Any:
        return self.loss_fn(self.model(x), y)

    def step(self, i: int) -> None:
        x = self.x
        if self.before is not None:
            got = self.before(i)
            if got is not None:
                x = got
        self.opt.zero_grad(set_to_none=True)
        loss = self.forward(x, self.y)
        loss.backward()
        self.opt.step()
        if self.after is not None:
            self.after(i, loss)

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()


def _host_batch(device: str, pinned: bool) -> Callable[[int], Any]:
    """A fresh host batch copied to the device each step (pinned memory: asynchronous)."""
    import torch

    host = torch.randn(BATCH * 8, FEATURES)  # 8 batches' worth: 16 MB a step to copy
    if pinned and device == "cuda":
        host = host.pin_memory()

    def before(i: int) -> Any:
        return host.to(device, non_blocking=pinned)[:BATCH]

    return before


def _gemms(device: str, count: int) -> Callable[[int, Any], None]:
    """``count`` large matrix products after the step (GEMM_SIDE³ bf16 on a GPU): enough device work
    that the step is the device's, its host dispatch hidden behind it."""
    import torch

    side = GEMM_SIDE if device == "cuda" else 512
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    a = torch.randn(side, side, device=device, dtype=dtype)
    b = torch.randn(side, side, device=device, dtype=dtype)
    sink: list[Any] = []

    def after(i: int, loss: Any) -> None:
        sink[:] = [a @ b for _ in range(count)]

    return after


def pageable_copy(variant: str, device: str) -> GpuStep:
    # Clean: the same copy from pinned memory (asynchronous); injected: from pageable memory. Both
    # steps end with one large GEMM: the device sets the step's pace in both, so the pinned copy's
    # overlap with the host's dispatch is hidden in both and the cost is the copy's alone (without
    # it the fix also bought the dispatch the pinned copy hid: 0.49 of 1.70 ms on an H200).
    return TorchMlp(device, before=_host_batch(device, pinned=variant == "clean"), after=_gemms(device, 1))


def item_sync(variant: str, device: str) -> GpuStep:
    def after(i: int, loss: Any) -> None:
        if variant == "injected":
            loss.item()  # the host waits for the device every step

    return TorchMlp(device, after=after)


TINY_OPS = 400  # tiny elementwise ops added to the step: hundreds of launches of ~2 µs of work


def _tiny_op_chain(small: Any) -> None:
    """TINY_OPS tiny elementwise ops on ``small``, the result written back into it."""
    t = small
    for _ in range(TINY_OPS):
        t = t * 1.0001 + 0.0001
    small.copy_(t)


def _tiny_ops(device: str) -> Callable[[int, Any], None]:
    import torch

    small = torch.ones(16, device=device)
    return lambda i, loss: _tiny_op_chain(small)


def tiny_ops(variant: str, device: str) -> GpuStep:
    return TorchMlp(device, after=_tiny_ops(device) if variant == "injected" else None)


class GraphedTinyOps(GpuStep):
    """The tiny ops alone, eager (injected) or replayed as one CUDA graph (clean): the launch
    overhead is the gap between the two."""

    def __init__(self, variant: str, device: str) -> None:
        import torch

        self.torch, self.device = torch, device
        self.small = torch.ones(16, device=device)
        self.graph = None
        if variant == "clean" and device == "cuda":
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                _tiny_op_chain(self.small)  # warm-up before capture, as torch.cuda.graphs asks
            torch.cuda.current_stream().wait_stream(stream)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                _tiny_op_chain(self.small)

    def step(self, i: int) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            _tiny_op_chain(self.small)

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()


def cuda_graph(variant: str, device: str) -> GpuStep:
    return GraphedTinyOps(variant, device)


GEMM_SIDE = 8192  # one bf16 GEMM of 8192³: ~1.4 ms on an H100/H200, far more than the MLP step


def large_gemm(variant: str, device: str) -> GpuStep:
    # A second GEMM after the step; the clean twin runs one. Against a clean step with none, the
    # GEMM ran while the host dispatched the next step (it cost 0.66 of its 1.37 ms on an H200):
    # a bucket's growth then is no cost. With one in both twins the device sets the pace in both.
    return TorchMlp(device, after=_gemms(device, 2 if variant == "injected" else 1))


def large_d2h(variant: str, device: str) -> GpuStep:
    import torch

    big = torch.randn(64 * 1024 * 1024 // 4, device=device)  # 64 MB back to the host each step

    def after(i: int, loss: Any) -> None:
        if variant == "injected":
            big.cpu()

    return TorchMlp(device, after=after)


def dataloader_starves(variant: str, device: str) -> GpuStep:
    """A DataLoader (no workers) whose samples take host work: the device waits for input."""
    import torch

    class Slow(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 1 << 30

        def __getitem__(self, k: int) -> Any:
            if variant == "injected":
                s = 0
                for j in range(2000):  # pure-Python work per sample
                    s += j * j % 7
            return torch.zeros(FEATURES)

    it = iter(torch.utils.data.DataLoader(Slow(), batch_size=64, num_workers=0))

    def before(i: int) -> Any:
        return next(it).to(device)

    step = TorchMlp(device, before=before)
    step.y = step.y[:64]
    return step


def compile_recompile(variant: str, device: str) -> GpuStep:
    """torch.compile with a new batch size every step (injected: recompiles, dynamic=False)."""
    import torch
    import torch._dynamo

    # Past its recompile limit (8) dynamo runs the function eagerly and the cause would vanish.
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1 << 20)
    step = TorchMlp(device, compiled=False)
    compiled = torch.compile(step._forward, dynamic=False)
    sizes = iter(range(1, 1 << 30))

    def forward(x: Any, y: Any) -> Any:
        if variant == "injected":
            n = BATCH - next(sizes) % (BATCH - 1)  # 511 sizes before one comes back: each call a new one
            return compiled(x[:n], y[:n])
        return compiled(x, y)

    step.forward = forward
    return step


# ---------------------------------------------------------------------------------------------
# JAX
# ---------------------------------------------------------------------------------------------

class JaxMlp(GpuStep):
    framework = "jax"

    def __init__(self, device: str, retrace: bool = False, wait: bool = False) -> None:
        import jax
        import jax.numpy as jnp
        import numpy as np

        self.jax = jax
        dev = jax.devices("gpu" if device == "cuda" else "cpu")[0]
        rng = np.random.default_rng(SEED)
        params = {"w1": rng.standard_normal((FEATURES, WIDTH), dtype=np.float32) * 0.02,
                  "b1": np.zeros(WIDTH, np.float32),
                  "w2": rng.standard_normal((WIDTH, CLASSES), dtype=np.float32) * 0.02,
                  "b2": np.zeros(CLASSES, np.float32)}
        self.params = jax.device_put(params, dev)
        self.x = jax.device_put(rng.standard_normal((BATCH, FEATURES), dtype=np.float32), dev)
        self.y = jax.device_put(rng.integers(0, CLASSES, BATCH).astype(np.int32), dev)
        self.retrace, self.wait = retrace, wait
        self.loss = None

        def train_step(p: Any, x: Any, y: Any) -> Any:
            def objective(q: Any) -> Any:
                h = jax.nn.relu(x @ q["w1"] + q["b1"])
                logp = jax.nn.log_softmax(h @ q["w2"] + q["b2"])
                return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

            loss, grads = jax.value_and_grad(objective)(p)
            return {k: p[k] - LR * grads[k] for k in p}, loss

        self.fn = jax.jit(train_step)
        self.calls = 0

    def step(self, i: int) -> None:
        x, y = self.x, self.y
        if self.retrace:  # a batch of a new size each call: a new shape, traced and compiled anew
            self.calls += 1
            n = BATCH - self.calls % (BATCH - 1)
            x, y = x[:n], y[:n]
        self.params, self.loss = self.fn(self.params, x, y)
        if self.wait:
            self.jax.block_until_ready(self.loss)  # the host waits for the step's result every step

    def sync(self) -> None:
        if self.loss is not None:
            self.jax.block_until_ready(self.loss)


def jax_retrace(variant: str, device: str) -> GpuStep:
    return JaxMlp(device, retrace=variant == "injected")


def jax_sync(variant: str, device: str) -> GpuStep:
    return JaxMlp(device, wait=variant == "injected")


CASES: tuple[GpuCase, ...] = (
    GpuCase("gpu-pageable-copy", "torch", "16 MB host→device copy each step from pageable memory, against pinned "
            "memory with non_blocking, in a step the device sets the pace of (one 8192³ bf16 GEMM in both twins)",
            "memcpy", "memcpy", pageable_copy, needs_cuda=True),
    GpuCase("gpu-item-sync", "torch", "loss.item() after every step: the host waits for the device", "sync_wait",
            "sync_each_step", item_sync, needs_cuda=True),
    GpuCase("gpu-tiny-ops", "torch", f"{TINY_OPS} tiny elementwise ops on a 16-element tensor after the step",
            "launch_overhead", "launch_bound", tiny_ops),
    GpuCase("gpu-cuda-graph", "torch", f"the {TINY_OPS} tiny ops eager, against the same ops replayed as one CUDA "
            "graph (clean)", "launch_overhead", "launch_bound", cuda_graph, needs_cuda=True),
    GpuCase("gpu-large-gemm", "torch", f"a second {GEMM_SIDE}³ bf16 matrix product after the step (the clean "
            "twin runs one)", "kernel", "compute_bound", large_gemm),
    GpuCase("gpu-large-d2h", "torch", "64 MB device→host copy after each step", "memcpy", "memcpy", large_d2h),
    GpuCase("gpu-dataloader-starves", "torch", "DataLoader without workers whose samples run pure-Python work: the "
            "device waits for input", "input", "input_bound", dataloader_starves),
    GpuCase("gpu-compile-recompile", "torch", "torch.compile given a new batch size every step (dynamic=False)",
            "graph_build", "steady_graph_build", compile_recompile, rounds=3, block=2),  # (~1 s a compile)
    GpuCase("gpu-jax-retrace", "jax", "jax.jit given a batch of a new size every step (retraces and recompiles)",
            "graph_build", "steady_graph_build", jax_retrace, rounds=4, block=3),
    GpuCase("gpu-jax-sync", "jax", "jax.block_until_ready on the loss after every step, against asynchronous "
            "dispatch waited on once a block", "sync_wait", "sync_each_step", jax_sync, needs_cuda=True),
)

BY_NAME = {c.name: c for c in CASES}
