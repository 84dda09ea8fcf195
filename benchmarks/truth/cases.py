"""The ground-truth cases: a table of injected causes and the small training steps they run.

Every case is a small real training step (a 2-layer MLP, SGD, fixed random data; the same
network in torch, TensorFlow and JAX) built twice: a *clean* twin and an *injected* twin that is
identical except for one added cost. The table (:data:`CASES`) says, as data, what the cost is,
where the analysis should put it (``expected_bucket``), which finding should lead
(``expected_finding``), which steps to compare (``window``) and which measured cost the scorer
holds the attribution against (``score_against``).

Sizes are not fixed: a case with a :class:`Knob` is calibrated at run time (by ``generate``) so
its injected cost reaches a target *time* on the machine at hand; the clean twin of most cases
is the same program with the knob at zero.

A *two-cause* case (``second``) adds a second cost on top of the first in the same step: its
variants are ``clean``, ``first`` (the first cost only) and ``injected`` (both), so each cost is
measured on its own — the first as first − clean, the second as injected − first — and the
analysis must find both in the injected trace. Its knob, when it has one, sizes the second cost.

A *hidden* case (``kind="hidden"``) adds work that runs beside the step — an input pipeline
prefetching on another thread, DataLoader worker processes — so that the step waits for little or
none of it: the work is there, and removing it saves little. Its variants are ``clean`` and
``injected``, profiled, and ``exposed``, measured only: the same work where nothing overlaps it
(no prefetch; the per-sample work in the step's thread), whose cost over ``clean`` is the work's
own size. The knob sizes the work on that exposed cost: injected − clean is the saving of removing
it, ~0 by construction, and nothing to calibrate on.

Program contract (``worker`` relies on it): a builder ``build(variant, knob)`` returns a
:class:`StepProgram` whose ``loop`` runs the given step indices, calling ``begin(i)`` /
``end(i, loss)`` around each step and ``after(i)`` once the work between steps is done.
Negative indices are warm-up steps (never recorded). torch, TensorFlow and JAX are imported only
inside the builders, so this module loads without any of them.
"""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.truth.measure import spin

BUCKETS = ("kernel", "memcpy", "graph_build", "sync_wait", "launch_overhead", "input", "host_compute", "idle")
BETWEEN_STEPS = "between_steps"
# The finding each bucket's growth should raise first (rule names of traceview's findings).
FINDING_FOR = {
    "kernel": "compute_bound",
    "launch_overhead": "launch_bound",
    "input": "input_bound",
    "sync_wait": "sync_each_step",
    "host_compute": "host_compute",
    BETWEEN_STEPS: "host_between_steps",
    "idle": "unrecorded",
}
STEADY_GRAPH_BUILD = "steady_graph_build"
COLD_COMPILE = "cold_compile"

# The shared network and data: batch x features -> width -> classes, SGD.
FEATURES = 512
WIDTH = 1024
CLASSES = 10
BATCH = 128
LR = 0.01
SEED = 0

Begin = Callable[[int], None]
End = Callable[[int, "float | None"], None]
After = Callable[[int], None]


@dataclass(frozen=True)
class Knob:
    """The size of the injected work, calibrated so the cost reaches a target time.

    ``power``: how the cost grows with the knob (1 for a count of ops or loop iterations, 2 for
    the width of a dense layer, 3 for the side of a square matmul); calibration starts from it.
    Target = max(``target_ms``, ``share`` × the clean step time). A hidden case's cost here is its
    exposed twin's (the work's own size), not the injected twin's (what removing it saves).
    """

    start: int
    power: float = 1.0
    lo: int = 1
    hi: int = 10_000_000
    target_ms: float = 10.0
    share: float = 0.5


@dataclass(frozen=True)
class SecondCause:
    """The second cost of a two-cause case: what it is, where the analysis should put it, and
    which measured cost the scorer holds that bucket's growth against."""

    cause: str
    expected_bucket: str
    expected_finding: str
    score_against: str = "unprofiled"  # or "in_trace"
    score_reason: str = ""

    def spec(self) -> dict[str, Any]:
        return {"cause": self.cause, "expected_bucket": self.expected_bucket,
                "expected_finding": self.expected_finding, "score_against": self.score_against,
                "score_reason": self.score_reason}


SINGLE_VARIANTS = ("clean", "injected")
# A two-cause case: no cost, the first cost only, both costs.
PAIR_VARIANTS = ("clean", "first", "injected")
# A hidden case's exposed twin: its work with nothing overlapping it (measured, never profiled).
EXPOSED = "exposed"


@dataclass(frozen=True)
class Case:
    name: str
    framework: str  # "torch", "tensorflow" or "jax"
    cause: str
    expected_bucket: str  # a bucket name, or "between_steps"
    expected_finding: str
    window: str  # "steady" or "cold"
    build: Callable[[str, int], "StepProgram"]
    score_against: str = "unprofiled"  # or "in_trace"
    score_reason: str = ""
    knob: Knob | None = None
    kind: str = "cause"  # or "control": two ways to run the same math; "same": one program captured twice;
    # "hidden": work beside the step that it waits for little or none of (a variant "exposed" sizes it)
    isolate: bool = False  # each variant in its own processes (process-wide settings differ)
    threads: tuple[int, int] = (2, 2)  # intra-op threads of (clean, injected)
    env: dict[str, str] = field(default_factory=dict)  # "{fresh_dir}" = a new empty folder per process
    python_events: bool = True  # torch: record Python calls (with_stack)
    python_events_reason: str = ""
    record_shapes: bool = True  # torch: input shapes on every op (off where thousands of ops would bloat the trace)
    python_tracer: bool = False  # JAX: its Python tracer on (jax.profiler.trace's default; traceview's collector turns it off)
    warmup: int = 3  # unprofiled warm-up steps before measuring / profiling (steady window)
    rounds: int = 10  # measurement rounds (each: one block per variant, order rotating)
    block: int = 6  # steps per variant per round; the first of each block is dropped
    cold_reps: int = 3  # fresh processes per variant for a cold window
    profiled_steady: int = 5  # steady steps in the profiled capture
    # Unprofiled steps right before the capture, after the calm gate: a producer that runs ahead
    # (DataLoader workers, a prefetch buffer) fills its buffer while the gate waits, and the first
    # captured steps would take ready batches that the steady ones wait for.
    refill_warmup: int = 0
    notes: str = ""
    second: SecondCause | None = None  # a second cost in the same step (two-cause cases)

    def __post_init__(self) -> None:
        if self.second is not None and (self.window != "steady" or self.isolate or self.kind != "cause"):
            raise ValueError(f"{self.name}: a two-cause case is a steady-window cause case in one process")
        if self.kind == "hidden" and (self.window != "steady" or self.isolate or self.second is not None):
            raise ValueError(f"{self.name}: a hidden case is a steady-window single-cause case in one process")

    @property
    def variants(self) -> tuple[str, ...]:
        """The programs measured and profiled, in order of the costs they add."""
        return PAIR_VARIANTS if self.second is not None else SINGLE_VARIANTS

    @property
    def measured_variants(self) -> tuple[str, ...]:
        """The programs measured without the profiler: the profiled ones, and a hidden case's
        exposed twin (the size of its work)."""
        return ("clean", EXPOSED, "injected") if self.kind == "hidden" else self.variants

    @property
    def calibrated_variants(self) -> tuple[str, str]:
        """The two programs whose difference the knob sizes: the last cost (injected over clean, or
        over first in a two-cause case), or a hidden case's work on its own (exposed over clean)."""
        if self.kind == "hidden":
            return "clean", EXPOSED
        base, top = self.variants[-2:]
        return base, top

    def spec(self) -> dict[str, Any]:
        """The case as plain data (what ground_truth.json records)."""
        out = {
            "name": self.name,
            "framework": self.framework,
            "kind": self.kind,
            "cause": self.cause,
            "expected_bucket": self.expected_bucket,
            "expected_finding": self.expected_finding,
            "window": self.window,
            "score_against": self.score_against,
            "score_reason": self.score_reason,
            "threads": {"clean": self.threads[0], "injected": self.threads[1]},
            "isolated_processes": self.isolate,
            "env": dict(self.env),
            "notes": self.notes,
        }
        if self.second is not None:
            out["second"] = self.second.spec()
        if self.python_tracer:
            out["python_tracer"] = True
        if self.framework == "torch":
            out["python_events"] = self.python_events
            out["record_shapes"] = self.record_shapes
            if self.python_events_reason:
                out["python_events_reason"] = self.python_events_reason
        return out


# ---------------------------------------------------------------------------------------------
# Injected work that needs no framework
# ---------------------------------------------------------------------------------------------


python_work = spin  # the injected pure-Python work is the calm probe's loop, n times

def make_cycles(n: int) -> None:
    """``n`` two-list reference cycles, dropped at once: garbage only the cycle collector frees."""
    j = 0
    while j < n:
        a: list[Any] = [None]
        b = [a]
        a[0] = b
        j += 1


class StepProgram:
    """One variant of a case: ``step`` is the training step; ``between`` runs after each step.

    An ``asynchronous`` program's steps return before their work is done (a JAX loop that never
    blocks): its steps are timed as a block, from the first step's start to the end of
    ``drain()`` after the last, each step given an equal share (worker.run_indices); a profiled
    capture drains inside the profiler's window."""

    asynchronous = False

    def drain(self) -> None:
        """Wait for the work the steps queued (asynchronous programs)."""

    def enter(self) -> None:
        """Called before each block of this variant's steps (process-wide switches go here)."""

    def step(self, i: int) -> float | None:
        raise NotImplementedError

    def between(self, i: int) -> None:
        """Work between steps (outside the step marker); nothing by default."""

    def loop(self, indices: Sequence[int], begin: Begin, end: End, after: After) -> None:
        for i in indices:
            begin(i)
            loss = self.step(i)
            end(i, loss)
            self.between(i)
            after(i)


def _noop(i: int) -> None:
    return None


def _fixed_data(rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((rows, FEATURES), dtype=np.float32)
    y = rng.integers(0, CLASSES, rows).astype(np.int64)
    return x, y


def _initial_weights(width: int) -> list[np.ndarray]:
    """The MLP's weights as TF and JAX start them: uniform(±1/sqrt(fan_in)) kernels, zero biases."""
    rng = np.random.default_rng(SEED + 1)
    lim1, lim2 = 1 / np.sqrt(FEATURES), 1 / np.sqrt(width)
    return [
        rng.uniform(-lim1, lim1, (FEATURES, width)).astype(np.float32),
        np.zeros(width, np.float32),
        rng.uniform(-lim2, lim2, (width, CLASSES)).astype(np.float32),
        np.zeros(CLASSES, np.float32),
    ]


def _square_pair(side: int) -> tuple[np.ndarray, np.ndarray]:
    """Two fixed random ``side`` x ``side`` matrices (the large-matmul cases' operands)."""
    rng = np.random.default_rng(SEED + 3)
    n = max(side, 1)
    return rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)


def _fresh_floats() -> Callable[[int], float]:
    """A Python float never passed before, on every call (the retrace cases' step argument)."""
    values = itertools.count(1)
    return lambda i: 1.0 + next(values) * 1e-9


def _gc_switch(enabled: bool) -> Callable[[], None]:
    def enter() -> None:
        if enabled:
            gc.enable()
        else:
            gc.disable()

    return enter


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------


class TorchStep(StepProgram):
    """zero_grad, forward, cross-entropy, backward, ``mid(i)``, SGD step, ``loss.item()``."""

    def __init__(
        self,
        width: int = WIDTH,
        mid: Callable[[int], None] = _noop,
        wrap: Callable[[Any], Any] | None = None,
        batches: Callable[[int], tuple[Any, Any]] | None = None,
        between: Callable[[int], None] = _noop,
        enter: Callable[[], None] | None = None,
    ) -> None:
        import torch
        from torch import nn

        torch.manual_seed(SEED)
        self.torch = torch
        self.model = nn.Sequential(nn.Linear(FEATURES, width), nn.ReLU(), nn.Linear(width, CLASSES))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR)
        x, y = _fixed_data(BATCH)
        self.x, self.y = torch.from_numpy(x), torch.from_numpy(y)
        self.forward = wrap(self.model) if wrap else self.model
        self.mid = mid
        self.batches = batches or (lambda i: (self.x, self.y))
        self._between = between
        self._enter = enter

    def enter(self) -> None:
        if self._enter is not None:
            self._enter()

    def step(self, i: int) -> float | None:
        import torch.nn.functional as F

        x, y = self.batches(i)
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.forward(x), y)
        loss.backward()
        self.mid(i)
        self.opt.step()
        return float(loss.item())

    def between(self, i: int) -> None:
        self._between(i)


def _amount(variant: str, knob: int) -> int:
    return knob if variant == "injected" else 0


def _die_with_parent(worker_id: int) -> None:
    """A DataLoader worker_init_fn: the worker dies with the process that started it. The case's
    process leaves through os._exit, without the DataLoader's shutdown, and a worker whose batch
    is still in the pipe waits for a reader that never comes (its queue's feeder thread)."""
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stack_numpy(samples: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """A DataLoader collate_fn that keeps a batch as numpy arrays."""
    return np.stack([s[0] for s in samples]), np.stack([s[1] for s in samples])


def _row_batches(work: int, workers: int, as_numpy: bool = False) -> Any:
    """An iterator over batches of fixed rows from a DataLoader whose ``__getitem__`` runs ``work``
    iterations of pure Python per sample, in ``workers`` worker processes (0: in the step's thread);
    ``as_numpy``: samples and batches as numpy arrays (collated by _stack_numpy), not tensors."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    from benchmarks.truth.measure import OWN_CHILDREN

    x, y = _fixed_data(BATCH * 8)
    xt, yt = (x, y) if as_numpy else (torch.from_numpy(x), torch.from_numpy(y))

    class Rows(Dataset):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return 1 << 40

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            python_work(work)  # decoding / augmentation stand-in (pure Python, per sample)
            r = i % len(xt)
            return xt[r], yt[r]

    loader = DataLoader(Rows(), batch_size=BATCH, num_workers=workers, shuffle=False,
                        collate_fn=_stack_numpy if as_numpy else None,
                        worker_init_fn=_die_with_parent if workers else None)
    it = iter(loader)
    # The workers' CPU time is the case's own, not a disturbance of the calm gate (measure.OWN_CHILDREN).
    OWN_CHILDREN.update(w.pid for w in getattr(it, "_workers", ()))
    return it


def torch_dataloader(variant: str, knob: int) -> StepProgram:
    it = _row_batches(_amount(variant, knob), workers=0)
    return TorchStep(batches=lambda i: next(it))


# Worker processes of the hidden DataLoader cases: one, so that with the step's one intra-op thread
# the two use the two cores (a second worker would take the step's core).
HIDDEN_WORKERS = 1
# The hidden cases' hidden layer, wider than the shared network's: the input time every batch
# keeps, with or without the injected work — the hand-over from the worker (~0.25 ms), a tf.data
# iterator's next() (~0.3 ms) —, and the profiler's cost per op are a few percent of the step
# (torch ~13 ms, TF ~15 ms on one thread on the reference VM), not 14–24 % as with width 1024.
HIDDEN_TORCH_WIDTH = 4096
HIDDEN_TF_WIDTH = 8192


def torch_dataloader_workers(variant: str, knob: int) -> StepProgram:
    """The DataLoader of torch_dataloader with its per-sample work in a worker process (injected),
    which prepares the next batches (DataLoader's default prefetch_factor, 2 a worker) while the
    step (width HIDDEN_TORCH_WIDTH) runs; clean: the same DataLoader and worker without the work;
    exposed: the clean DataLoader, and the same work (a batch's samples' worth) in the step's
    thread before it takes the batch — all of it on the step's path, on the clean twin's loading path.

    Batches stay numpy arrays until the step (torch.from_numpy): a batch of tensors is handed over
    through shared-memory file descriptors, ~1.1 ms a batch here against ~0.25 ms for one pickled
    buffer — input time on the step's thread that no fix of the per-sample work removes."""
    import torch

    work = knob if variant == "injected" else 0
    it = _row_batches(work, workers=HIDDEN_WORKERS, as_numpy=True)

    def batches(i: int) -> tuple[Any, Any]:
        if variant == EXPOSED:
            for _ in range(BATCH):
                python_work(knob)
        x, y = next(it)
        return torch.from_numpy(x), torch.from_numpy(y)

    return TorchStep(width=HIDDEN_TORCH_WIDTH, batches=batches)


def torch_recompile(variant: str, knob: int) -> StepProgram:
    import torch

    torch._dynamo.config.cache_size_limit = 100_000
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = 100_000
    if hasattr(torch._dynamo.config, "accumulated_recompile_limit"):
        torch._dynamo.config.accumulated_recompile_limit = 100_000
    x, y = _fixed_data(BATCH + 4096)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    sizes = itertools.count(BATCH + 1)

    def batches(i: int) -> tuple[Any, Any]:
        # Injected: a batch size never seen before on every recorded step -> forward and backward recompile.
        b = next(sizes) if variant == "injected" and i >= 0 else BATCH
        return xt[:b], yt[:b]

    return TorchStep(wrap=lambda m: torch.compile(m, dynamic=False), batches=batches)


def torch_compiled(variant: str, knob: int) -> StepProgram:
    import torch

    return TorchStep(wrap=lambda m: torch.compile(m, dynamic=False))


def torch_tiny_ops(variant: str, knob: int) -> StepProgram:
    import torch

    small = torch.ones(16)
    n = _amount(variant, knob)

    def mid(i: int) -> None:
        t = small
        for _ in range(n):
            t = t * 1.0001

    return TorchStep(mid=mid)


def torch_large_matmul(variant: str, knob: int) -> StepProgram:
    import torch

    g = torch.Generator().manual_seed(SEED)
    n = max(knob, 1)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    sink: list[Any] = [None]

    def mid(i: int) -> None:
        sink[0] = torch.mm(a, b)

    return TorchStep(mid=mid if variant == "injected" else _noop)


def torch_threads(variant: str, knob: int) -> StepProgram:
    # Thread count comes from the case's `threads` (set by the worker); the width makes the step compute-heavy.
    return TorchStep(width=knob)


def torch_float64(variant: str, knob: int) -> StepProgram:
    """The compute-heavy step (width ``knob``) with its model and data in float64 (``injected``)
    instead of float32: the same ops at the same counts, each on float64 inputs."""
    program = TorchStep(width=knob)
    if variant == "injected":
        program.model.double()  # (in place: the optimizer keeps the same parameters)
        program.x = program.x.double()
    return program


def torch_user_python(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return TorchStep(mid=lambda i: python_work(n) and None)


def torch_between(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return TorchStep(between=lambda i: python_work(n) and None)


def torch_python_function(variant: str, knob: int) -> StepProgram:
    import torch

    n = _amount(variant, knob)

    class ScaleGrad(torch.autograd.Function):  # a user's autograd.Function whose backward runs Python
        @staticmethod
        def forward(ctx: Any, logits: Any) -> Any:
            return logits.clone()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            python_work(n)  # a gradient statistic / clipping rule written in Python (stand-in)
            return grad

    return TorchStep(wrap=lambda model: (lambda x: ScaleGrad.apply(model(x))))


def torch_grad_hooks(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)

    def hook(grad: Any) -> None:
        python_work(n)  # a gradient statistic in Python (stand-in); the gradient is left as it is

    step = TorchStep()
    for layer in (step.model[0], step.model[2]):  # a hook on each weight's gradient (the clean twin's do nothing)
        layer.weight.register_hook(hook)
    return step


def torch_gc(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return TorchStep(mid=lambda i: make_cycles(n), enter=_gc_switch(variant == "injected"))


ANOMALY_WIDTH = 64  # the deep step's hidden width: small layers, so that each one's backward node counts


def torch_anomaly_nan_checks(variant: str, knob: int) -> StepProgram:
    """The step on a deep narrow MLP (``knob`` hidden layers of ANOMALY_WIDTH) with autograd anomaly
    detection on in both variants (process-wide: set before each block), checking each backward
    node's outputs for NaN in the ``injected`` one only (check_nan, its default): the same ops and
    the same stored stacks, plus the NaN checks."""
    import torch
    from torch import nn

    program = TorchStep(enter=lambda: torch.autograd.set_detect_anomaly(True, check_nan=variant == "injected"))
    torch.manual_seed(SEED)
    layers: list[Any] = [nn.Linear(FEATURES, ANOMALY_WIDTH), nn.ReLU()]
    for _ in range(knob):
        layers += [nn.Linear(ANOMALY_WIDTH, ANOMALY_WIDTH), nn.ReLU()]
    program.model = program.forward = nn.Sequential(*layers, nn.Linear(ANOMALY_WIDTH, CLASSES))
    program.opt = torch.optim.SGD(program.model.parameters(), lr=LR)
    return program


def torch_torchscript(variant: str, knob: int) -> StepProgram:
    import torch

    return TorchStep(wrap=torch.jit.script if variant == "injected" else None)


# ---------------------------------------------------------------------------------------------
# TensorFlow
# ---------------------------------------------------------------------------------------------


def _tf_variables(width: int) -> list[Any]:
    import tensorflow as tf

    return [tf.Variable(w) for w in _initial_weights(width)]


class TFStep(StepProgram):
    """Gradients (one call), ``mid(i)``, SGD update (a second call), ``float(loss)``.

    ``mode``: ``function`` (both calls are ``tf.function``s), ``eager`` (plain eager ops), ``fused``
    (one ``tf.function`` of the whole step; ``mid`` runs after it) or ``xla`` (the same with
    ``jit_compile=True``).
    ``scale(i)`` is a second argument of the gradient function (the loss is multiplied by it).
    ``in_graph(scale)``, when given, runs inside the gradient function and returns 1 (the loss is
    multiplied by it, out of the gradient's sight).
    """

    def __init__(
        self,
        mode: str = "function",
        width: int = WIDTH,
        mid: Callable[[int], None] = _noop,
        batches: Callable[[int], tuple[Any, Any]] | None = None,
        between: Callable[[int], None] = _noop,
        enter: Callable[[], None] | None = None,
        scale: Callable[[int], Any] | None = None,
        in_graph: Callable[[Any], Any] | None = None,
        wrap_each_call: bool = False,
    ) -> None:
        import tensorflow as tf

        x, y = _fixed_data(BATCH)
        self.x, self.y = tf.constant(x), tf.constant(y)
        self.vars = _tf_variables(width)
        one = tf.constant(1.0)
        self.scale = scale or (lambda i: one)
        variables = self.vars

        def grads(x: Any, y: Any, scale: Any) -> Any:
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(x, variables[0]) + variables[1])
                logits = tf.matmul(h, variables[2]) + variables[3]
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
                scaled = loss * scale
                if in_graph is not None:  # (a factor of 1 the gradient does not see)
                    scaled = scaled * tf.stop_gradient(in_graph(scale))
            return loss, tape.gradient(scaled, variables)

        def apply(gs: Any) -> None:
            for v, g in zip(variables, gs):
                v.assign_sub(LR * g)

        def fused(x: Any, y: Any, scale: Any) -> Any:
            loss, gs = grads(x, y, scale)
            apply(gs)
            return loss

        self.mode = mode
        # wrap_each_call: a new tf.function of the same Python functions at every call (a loop that
        # writes tf.function(f)(x)), which traces on its first and only call.
        self.wrap_each_call = (grads, apply, tf.function) if wrap_each_call else None
        if mode == "function":
            self.grads, self.apply = tf.function(grads), tf.function(apply)
        elif mode == "eager":
            self.grads, self.apply = grads, apply
        elif mode in ("fused", "xla"):
            self.fused = tf.function(fused, jit_compile=mode == "xla")
        else:
            raise ValueError(f"unknown TF step mode {mode!r}")
        self.mid = mid
        self.batches = batches or (lambda i: (self.x, self.y))
        self._between = between
        self._enter = enter

    def enter(self) -> None:
        if self._enter is not None:
            self._enter()

    def step(self, i: int) -> float | None:
        x, y = self.batches(i)
        if self.mode in ("fused", "xla"):
            loss = self.fused(x, y, self.scale(i))
            self.mid(i)
            return float(loss)
        if self.wrap_each_call is not None:
            grads, apply, wrap = self.wrap_each_call
            self.grads, self.apply = wrap(grads), wrap(apply)
        loss, gs = self.grads(x, y, self.scale(i))
        self.mid(i)
        self.apply(gs)
        return float(loss)

    def between(self, i: int) -> None:
        self._between(i)


def _tf_pipeline(map_fn: Callable[[Any, Any], Any]) -> Any:
    """Batches from fixed rows through ``map_fn``, with no prefetch and no autotuning.

    TF >= 2.13 injects a prefetch (``inject_prefetch``) and autotunes parallelism, which would
    move the map off the step's critical path; both are switched off so the step waits for it.
    """
    import tensorflow as tf

    x, y = _fixed_data(BATCH * 8)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(BATCH, drop_remainder=True).map(map_fn)
    opts = tf.data.Options()
    opts.autotune.enabled = False
    opts.experimental_optimization.inject_prefetch = False
    opts.experimental_optimization.map_parallelization = False
    opts.experimental_optimization.apply_default_optimizations = False
    return iter(ds.with_options(opts))


def _dense_transforms(n: int) -> Callable[[Any, Any], Any]:
    """A map function of ``n`` dense transforms (matmul + tanh) of the batch (augmentation stand-in)."""
    import tensorflow as tf

    m = tf.constant(np.random.default_rng(SEED + 2).uniform(-0.05, 0.05, (FEATURES, FEATURES)).astype(np.float32))

    def heavy(x: Any, y: Any) -> Any:
        h = x
        for _ in range(n):  # augmentation stand-in: n dense transforms of the batch
            h = tf.tanh(tf.matmul(h, m))
        return x + 1e-12 * tf.reduce_mean(h), y

    return heavy


def _elementwise_transforms(n: int) -> Callable[[Any, Any], Any]:
    """A map function of ``n`` elementwise transforms (tanh) of the batch (per-value augmentation stand-in)."""
    import tensorflow as tf

    def light(x: Any, y: Any) -> Any:
        h = x
        for _ in range(n):
            h = tf.tanh(h)
        return x + 1e-12 * tf.reduce_mean(h), y

    return light


def tf_input_map(variant: str, knob: int) -> StepProgram:
    it = _tf_pipeline(_dense_transforms(_amount(variant, knob)))
    return TFStep(batches=lambda i: next(it))


def tf_input_prefetch(variant: str, knob: int) -> StepProgram:
    """A tf.data ``.map`` of ``knob`` elementwise transforms followed by ``.prefetch(1)``
    (injected): the pipeline maps the next batch on its own thread while the step (width
    HIDDEN_TF_WIDTH) runs. The pipeline's functions get one thread (a private pool of 1, ops inside
    them on 1 thread) and the step one intra-op thread (the case's threads), one core each. Clean:
    the same prefetching pipeline without the transforms; exposed: the transforms without the
    prefetch, mapped in the step's next() as in tf-input-map.

    Elementwise, not tf-input-map's dense transforms: matmuls in the map beside the step's own
    matmuls made the step slower by 16–25 % of the map's time on the reference VM (the two GEMM
    threads contend for the two vCPUs), tanh by 2–3 %."""
    import tensorflow as tf

    n = knob if variant in (EXPOSED, "injected") else 0
    x, y = _fixed_data(BATCH * 8)
    # Whole batches as the dataset's elements: batching rows one by one is producer work of its own
    # (~0.2 ms a batch), which the clean twin would keep.
    ds = tf.data.Dataset.from_tensor_slices((x.reshape(8, BATCH, FEATURES), y.reshape(8, BATCH))).repeat()
    ds = ds.map(_elementwise_transforms(n))
    if variant != EXPOSED:
        ds = ds.prefetch(1)
    opts = tf.data.Options()
    # As _tf_pipeline: no autotuned parallelism and no injected prefetch, so the pipeline is the
    # one written here (one map call at a time, one batch ahead at most).
    opts.autotune.enabled = False
    opts.experimental_optimization.inject_prefetch = False
    opts.experimental_optimization.map_parallelization = False
    opts.experimental_optimization.apply_default_optimizations = False
    opts.threading.private_threadpool_size = 1
    opts.threading.max_intra_op_parallelism = 1
    it = iter(ds.with_options(opts))
    return TFStep(width=HIDDEN_TF_WIDTH, batches=lambda i: next(it))


def tf_input_pyfunc(variant: str, knob: int) -> StepProgram:
    import tensorflow as tf

    n = _amount(variant, knob)

    def slow(x: Any) -> Any:
        python_work(n)  # Python-side decoding stand-in
        return x

    def mapped(x: Any, y: Any) -> Any:
        out = tf.py_function(slow, [x], tf.float32)
        out.set_shape(x.shape)
        return out, y

    it = _tf_pipeline(mapped)
    return TFStep(batches=lambda i: next(it))


def tf_retrace(variant: str, knob: int) -> StepProgram:
    # tf.function specializes on Python values: a new float on every call retraces it.
    return TFStep(scale=_fresh_floats()) if variant == "injected" else TFStep()


def tf_function_per_call(variant: str, knob: int) -> StepProgram:
    # A new tf.function of the step's functions at every call traces every call.
    return TFStep(wrap_each_call=variant == "injected")


def tf_xla(variant: str, knob: int) -> StepProgram:
    return TFStep(mode="xla")


def tf_tiny_ops(variant: str, knob: int) -> StepProgram:
    import tensorflow as tf

    small = tf.ones(16)
    n = _amount(variant, knob)

    def mid(i: int) -> None:
        t = small
        for _ in range(n):
            t = t * 1.0001

    return TFStep(mode="eager", mid=mid)


def tf_large_matmul(variant: str, knob: int) -> StepProgram:
    import tensorflow as tf

    a, b = (tf.constant(m) for m in _square_pair(knob))
    sink: list[Any] = [None]

    def mid(i: int) -> None:
        sink[0] = tf.linalg.matmul(a, b)

    return TFStep(mid=mid if variant == "injected" else _noop)



def tf_user_python(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return TFStep(mid=lambda i: python_work(n) and None)


def tf_pyfunc_in_step(variant: str, knob: int) -> StepProgram:
    import tensorflow as tf

    if variant == "clean":
        return TFStep()
    n = _amount(variant, knob)

    def work(scale: Any) -> Any:
        python_work(n)  # the user's Python, called back by the EagerPyFunc op kernel
        return tf.ones_like(scale)

    return TFStep(in_graph=lambda scale: tf.py_function(work, [scale], tf.float32))


def tf_between(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return TFStep(between=lambda i: python_work(n) and None)


def tf_gc(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return TFStep(mid=lambda i: make_cycles(n), enter=_gc_switch(variant == "injected"))


class CompetingProcess:
    """Another process that keeps one CPU busy, running only while the steps run (stopped with
    SIGSTOP in between, so that the calm probe and the other variant never meet it), pinned to
    the CPU the step's thread is pinned to. It dies with the worker (PR_SET_PDEATHSIG, and it
    checks its parent): the worker leaves through os._exit, without exit handlers."""

    SPIN = ("import os\np = os.getppid()\nwhile os.getppid() == p:\n    for _ in range(200_000):\n        pass\n")

    def __init__(self, cpu: int) -> None:
        import signal
        import subprocess
        import sys

        from benchmarks.truth.measure import OWN_CHILDREN

        def die_with_parent() -> None:
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            os.sched_setaffinity(0, {cpu})

        self.signal = signal
        self.proc = subprocess.Popen([sys.executable, "-c", self.SPIN], preexec_fn=die_with_parent)
        self.proc.send_signal(signal.SIGSTOP)
        OWN_CHILDREN.add(self.proc.pid)

    def run(self) -> None:
        self.proc.send_signal(self.signal.SIGCONT)

    def stop(self) -> None:
        self.proc.send_signal(self.signal.SIGSTOP)


class WrappedStep(StepProgram):
    """A step program that runs another's steps and loop (Keras fit drives its own), changing what
    runs around the loop."""

    def __init__(self, inner: StepProgram) -> None:
        self.inner = inner
        self.asynchronous = inner.asynchronous

    def drain(self) -> None:
        self.inner.drain()

    def enter(self) -> None:
        self.inner.enter()

    def step(self, i: int) -> float | None:
        return self.inner.step(i)

    def between(self, i: int) -> None:
        self.inner.between(i)

    def loop(self, indices: Sequence[int], begin: Begin, end: End, after: After) -> None:
        self.inner.loop(indices, begin, end, after)


class ContendedStep(WrappedStep):
    """A step program whose step's thread is pinned to one CPU; in the injected variant another
    process competes for that CPU while the steps run."""

    def __init__(self, inner: StepProgram, compete: bool) -> None:
        super().__init__(inner)
        self.cpu = min(os.sched_getaffinity(0))
        self.competitor = CompetingProcess(self.cpu) if compete else None

    def enter(self) -> None:
        os.sched_setaffinity(0, {self.cpu})  # this thread only (Linux): the step's thread
        self.inner.enter()

    def loop(self, indices: Sequence[int], begin: Begin, end: End, after: After) -> None:
        if self.competitor is None:
            return super().loop(indices, begin, end, after)
        self.competitor.run()
        try:
            return super().loop(indices, begin, end, after)
        finally:
            self.competitor.stop()


CONTENTION_TINY_OPS = 1000


def tf_contention(variant: str, knob: int) -> StepProgram:
    """A TF eager step plus ``CONTENTION_TINY_OPS`` small ops (tf_tiny_ops' 16-element ops) whose
    thread shares its CPU with another process in the injected variant. The cost is the other
    process's share of the CPU: no knob sizes it."""
    import tensorflow as tf

    small = tf.ones(16)

    def mid(i: int) -> None:
        t = small
        for _ in range(CONTENTION_TINY_OPS):
            t = t * 1.0001

    return ContendedStep(TFStep(mode="eager", mid=mid), compete=variant == "injected")


class BusyThreadStep(WrappedStep):
    """A step program beside which, in the injected variant, another thread of the same process runs
    a pure-Python loop while the steps run (started before the loop, stopped after it: the calm
    probe and the other variant never meet it). Each framework call lets go of the interpreter
    lock and waits a switch interval to take it back."""

    def __init__(self, inner: StepProgram, busy: bool) -> None:
        super().__init__(inner)
        self.busy = busy

    def loop(self, indices: Sequence[int], begin: Begin, end: End, after: After) -> None:
        if not self.busy:
            return super().loop(indices, begin, end, after)
        import threading

        stop = threading.Event()
        thread = threading.Thread(target=_python_loop_until, args=(stop,), name="busy-python", daemon=True)
        thread.start()
        try:
            return super().loop(indices, begin, end, after)
        finally:
            stop.set()
            thread.join()


def _python_loop_until(stop: Any) -> None:
    """Pure Python (no call that lets go of the interpreter lock) until ``stop`` is set."""
    while not stop.is_set():
        for _ in range(10_000):
            pass


def torch_gil_contention(variant: str, knob: int) -> StepProgram:
    return BusyThreadStep(TorchStep(), busy=variant == "injected")


def tf_gil_contention(variant: str, knob: int) -> StepProgram:
    return BusyThreadStep(TFStep(mode="eager"), busy=variant == "injected")


def tf_function_gil_contention(variant: str, knob: int) -> StepProgram:
    # One tf.function call a step: one wait a step, when the call returns.
    return BusyThreadStep(TFStep(mode="fused"), busy=variant == "injected")


def keras_fit_gil_contention(variant: str, knob: int) -> StepProgram:
    return BusyThreadStep(KerasFitOrLoop(use_fit=True), busy=variant == "injected")


def jax_gil_contention(variant: str, knob: int) -> StepProgram:
    # One jitted call and one wait for its result a step: the lock is taken back after each.
    return BusyThreadStep(JaxStep(), busy=variant == "injected")


def tf_functions_eagerly(variant: str, knob: int) -> StepProgram:
    import tensorflow as tf

    # A process-wide debugging switch (each variant in its own processes: isolate=True).
    tf.config.run_functions_eagerly(variant == "injected")
    return TFStep(mode="function")


def tf_function_vs_eager(variant: str, knob: int) -> StepProgram:
    return TFStep(mode="eager" if variant == "injected" else "function")


class KerasFitOrLoop(StepProgram):
    """The same Keras model and data: a custom ``tf.function`` loop (clean) or ``model.fit`` (injected).

    ``fit`` drives its own loop; a callback opens and closes each step (``on_train_batch_begin``
    / ``on_train_batch_end``), the only per-step hook Keras offers.
    """

    def __init__(self, use_fit: bool) -> None:
        import keras
        import tensorflow as tf

        keras.utils.set_random_seed(SEED)
        self.model = keras.Sequential(
            [keras.Input((FEATURES,)), keras.layers.Dense(WIDTH, activation="relu"), keras.layers.Dense(CLASSES)]
        )
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.optimizer = keras.optimizers.SGD(LR)
        self.model.compile(optimizer=self.optimizer, loss=self.loss_fn, jit_compile=False)
        self.use_fit = use_fit
        self.x_np, self.y_np = _fixed_data(BATCH * 8)
        self.batches = [
            (tf.constant(self.x_np[k * BATCH : (k + 1) * BATCH]), tf.constant(self.y_np[k * BATCH : (k + 1) * BATCH]))
            for k in range(8)
        ]
        model, loss_fn, optimizer = self.model, self.loss_fn, self.optimizer

        @tf.function
        def train_step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        self.train_step = train_step

    def step(self, i: int) -> float | None:
        x, y = self.batches[i % len(self.batches)]
        return float(self.train_step(x, y))

    def loop(self, indices: Sequence[int], begin: Begin, end: End, after: After) -> None:
        if not self.use_fit:
            super().loop(indices, begin, end, after)
            return
        import keras

        order = list(indices)

        class Marker(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                begin(order[batch])

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                end(order[batch], None)
                after(order[batch])

        rows = np.arange(len(order) * BATCH) % len(self.x_np)
        self.model.fit(
            self.x_np[rows], self.y_np[rows], batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[Marker()]
        )


def tf_fit_vs_loop(variant: str, knob: int) -> StepProgram:
    return KerasFitOrLoop(use_fit=variant == "injected")


# ---------------------------------------------------------------------------------------------
# JAX
# ---------------------------------------------------------------------------------------------


class JaxStep(StepProgram):
    """One ``jax.jit`` call (forward, cross-entropy, ``jax.value_and_grad``, SGD written by hand), then
    ``float(loss)``, then ``mid(i)``; ``ahead(i)``, where given, runs between the call's return and
    ``float(loss)``, beside the dispatched program.

    The whole step is one jitted call, as a JAX training loop is written. JAX dispatches
    asynchronously, so ``float(loss)`` is where the host waits for the step's result; ``mid`` runs
    after it, still inside the step. ``extra(*extra_args)`` is computed inside the jitted step and
    returned (an output, so XLA cannot drop it). ``scale(i)`` is a static argument (the loss is
    multiplied by it before the gradient): a value not seen before retraces and recompiles the step.
    """

    def __init__(
        self,
        mid: Callable[[int], None] = _noop,
        extra: Callable[..., Any] | None = None,
        extra_args: tuple[np.ndarray, ...] = (),
        scale: Callable[[int], float] | None = None,
        wait: bool = True,
        jit_each_call: bool = False,
        ahead: Callable[[int], None] | None = None,
    ) -> None:
        import jax
        import jax.numpy as jnp

        dev = jax.devices("cpu")[0]
        x, y = _fixed_data(BATCH)
        # Every input is committed to the device (the step's outputs are): an uncommitted input would
        # make the second call compile the step again for the new placement.
        self.params = jax.device_put(dict(zip(("w1", "b1", "w2", "b2"), _initial_weights(WIDTH))), dev)
        self.x, self.y = jax.device_put(x, dev), jax.device_put(y.astype(np.int32), dev)  # 32-bit JAX
        self.extra_args = jax.device_put(extra_args, dev)
        self.scale = scale or (lambda i: 1.0)
        self.mid = mid
        self.ahead = ahead
        self.sink: Any = None
        self.wait = wait
        self.asynchronous = not wait

        def train_step(params: dict[str, Any], x: Any, y: Any, extra_args: tuple[Any, ...], scale: float) -> Any:
            def objective(p: dict[str, Any]) -> tuple[Any, Any]:
                h = jax.nn.relu(x @ p["w1"] + p["b1"])
                log_probs = jax.nn.log_softmax(h @ p["w2"] + p["b2"])
                loss = -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=1))
                return loss * scale, loss

            (_, loss), grads = jax.value_and_grad(objective, has_aux=True)(params)
            new = {k: params[k] - LR * grads[k] for k in params}
            return new, loss, extra(*extra_args) if extra is not None else None

        # Made here, compiled by its first call (the cold step).
        self.fn = jax.jit(train_step, static_argnames=("scale",))
        # jit_each_call: jax.jit of a new lambda around the step at every call (a loop that writes
        # jax.jit(lambda ...)(x)): a function object JAX has not seen, traced and compiled anew.
        # (jax.jit(train_step) anew would hit the caches, which key on the function.)
        self.jit_each_call = (
            (lambda: jax.jit(lambda *args, **kwargs: train_step(*args, **kwargs), static_argnames=("scale",)))
            if jit_each_call else None)

    def step(self, i: int) -> float | None:
        if self.jit_each_call is not None:
            self.fn = self.jit_each_call()
        self.params, loss, self.sink = self.fn(self.params, self.x, self.y, self.extra_args, scale=self.scale(i))
        if not self.wait:  # the call returns before its program has run; drain() waits for them all
            return None
        if self.ahead is not None:  # host work while the dispatched program runs on the client's threads
            self.ahead(i)
        value = float(loss)  # waits for the step's result, as a user's loop reads the loss
        self.mid(i)
        return value

    def drain(self) -> None:
        import jax

        jax.block_until_ready((self.params, self.sink))


def jax_large_matmul(variant: str, knob: int) -> StepProgram:
    if variant == "clean":
        return JaxStep()
    return JaxStep(extra=lambda a, b: a @ b, extra_args=_square_pair(knob))


def jax_async_matmul(variant: str, knob: int) -> StepProgram:
    """The large-matmul step in a loop that never blocks: every call returns at once and the
    programs run after the loop (each step's parameters are the last one's result)."""
    if variant == "clean":
        return JaxStep(wait=False)
    return JaxStep(extra=lambda a, b: a @ b, extra_args=_square_pair(knob), wait=False)


def jax_tiny_ops(variant: str, knob: int) -> StepProgram:
    import jax
    import jax.numpy as jnp

    small = jax.device_put(jnp.ones(16, jnp.float32), jax.devices("cpu")[0])
    n = _amount(variant, knob)

    def mid(i: int) -> None:
        t = small
        for _ in range(n):  # each one an eager jax.numpy op: one dispatch of a cached executable
            t = t * 1.0001
        np.asarray(t)  # the result brought back, as a user's loop reads it

    return JaxStep(mid=mid)


def jax_eager_grad(variant: str, knob: int) -> StepProgram:
    import jax
    import jax.numpy as jnp

    small = jax.device_put(jnp.ones(16, jnp.float32), jax.devices("cpu")[0])
    n = _amount(variant, knob)

    def tiny_loss(w: Any) -> Any:
        return jnp.sum(jnp.tanh(w) ** 2)

    def mid(i: int) -> None:
        g = small
        for _ in range(n):  # each one an un-jitted jax.grad call: JAX traces and differentiates in Python
            g = jax.grad(tiny_loss)(g)
        np.asarray(g)  # the result brought back, as a user's loop reads it

    return JaxStep(mid=mid)


def jax_user_python(variant: str, knob: int) -> StepProgram:
    n = _amount(variant, knob)
    return JaxStep(mid=lambda i: python_work(n) and None)


def jax_dispatch_ahead(variant: str, knob: int) -> StepProgram:
    """The host waits ``knob`` µs a step on a blocking read of the next batch: a wait that takes no
    CPU, as on storage or the network (``time.sleep`` stands for it). Injected: between the jitted
    call's return and ``float(loss)``, while the dispatched program runs (JAX's asynchronous
    dispatch: the host runs ahead of the math); exposed: after the result, where nothing overlaps
    it; clean: no wait.

    A wait, not Python work: on this project's two-vCPU reference machine a pure-Python loop beside
    the program slowed the program itself 1.45–1.7× (the two share one core's caches), so the
    overlap would not hide it; on a GPU, where the program runs on the device, it would."""
    import time

    seconds = knob / 1e6

    def read_next_batch(i: int) -> None:
        time.sleep(seconds)

    if variant == "injected":
        return JaxStep(ahead=read_next_batch)
    return JaxStep(mid=read_next_batch) if variant == EXPOSED else JaxStep()


def jax_host_callback(variant: str, knob: int) -> StepProgram:
    import jax

    n = _amount(variant, knob)

    def host_metric(value: Any) -> Any:
        python_work(n)  # a metric computed in Python on the host (stand-in)
        return np.asarray(value, dtype=np.float32)

    def extra(value: Any) -> Any:
        return jax.pure_callback(host_metric, jax.ShapeDtypeStruct((), np.float32), value)

    return JaxStep(extra=extra, extra_args=(np.float32(1.0),))


def jax_disable_jit(variant: str, knob: int) -> StepProgram:
    import jax

    # A process-wide debugging switch (each variant in its own processes: isolate=True).
    jax.config.update("jax_disable_jit", variant == "injected")
    return JaxStep()


def jax_retrace(variant: str, knob: int) -> StepProgram:
    # jit specializes on static arguments: a new float on every call retraces and recompiles the step.
    return JaxStep(scale=_fresh_floats()) if variant == "injected" else JaxStep()


def jax_jit_per_call(variant: str, knob: int) -> StepProgram:
    # jax.jit of a new lambda at every call traces and compiles every call.
    return JaxStep(jit_each_call=variant == "injected")


def jax_jit(variant: str, knob: int) -> StepProgram:
    return JaxStep()


# One program, both variants (the same-program cases: each variant is captured in its own process).
def torch_same(variant: str, knob: int) -> StepProgram:
    return TorchStep()


def tf_same(variant: str, knob: int) -> StepProgram:
    return TFStep(mode="eager")


def jax_same(variant: str, knob: int) -> StepProgram:
    return JaxStep()


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# Two causes in one step (variants clean / first / injected)
# ---------------------------------------------------------------------------------------------

# The first cost of the torch pair: the DataLoader work of torch-input-dataloader's committed
# calibration (1204 loop iterations per sample, ≈6 ms a step unprofiled on the reference VM).
PAIR_DATALOADER_WORK = 1204


def _second(variant: str, knob: int) -> int:
    """The second cost's size: only the ``injected`` variant has it."""
    return knob if variant == "injected" else 0


def tf_retrace_and_python(variant: str, knob: int) -> StepProgram:
    # First: the gradient tf.function retraced every step (a new Python float); second: user Python.
    n = _second(variant, knob)
    return TFStep(scale=_fresh_floats() if variant != "clean" else None, mid=lambda i: python_work(n) and None)


def torch_input_and_python(variant: str, knob: int) -> StepProgram:
    # First: slow DataLoader samples; second: user Python between backward and the optimizer step.
    prog = torch_dataloader("injected" if variant != "clean" else "clean", PAIR_DATALOADER_WORK)
    n = _second(variant, knob)
    assert isinstance(prog, TorchStep)
    prog.mid = lambda i: python_work(n) and None
    return prog


# torch-tiny-ops's calibrated count (its ground_truth.json): ~4.5 ms of tiny ops a step.
PAIR_TINY_OPS = 1803


def torch_tiny_ops_and_matmul(variant: str, knob: int) -> StepProgram:
    # First: tiny elementwise ops (dispatch); second: one large matmul (math), both between
    # backward and the optimizer step.
    tiny = torch_tiny_ops("injected" if variant != "clean" else "clean", PAIR_TINY_OPS)
    matmul = torch_large_matmul("injected" if variant == "injected" else "clean", knob)
    assert isinstance(tiny, TorchStep) and isinstance(matmul, TorchStep)
    first_mid, second_mid = tiny.mid, matmul.mid

    def mid(i: int) -> None:
        first_mid(i)
        second_mid(i)

    tiny.mid = mid
    return tiny


def jax_retrace_and_python(variant: str, knob: int) -> StepProgram:
    # First: the jitted step given a new static float every step (retraces and recompiles); second:
    # user Python after the step's result.
    n = _second(variant, knob)
    return JaxStep(scale=_fresh_floats() if variant != "clean" else None, mid=lambda i: python_work(n) and None)


_TINY = "the profiler inflates each tiny op (≈50 % on ~µs ops), so the trace holds more than the unprofiled cost"
_PYTRACER = ("torch's Python tracer (with_stack) slows every line of Python while it is on (CPython 3.11 "
             "setprofile), so the Python work itself runs longer in the trace than without the profiler")
_ANOMALY_NO_PY = ("each stored stack formats the Python frames that called the op: with_stack records hundreds of "
                  "Python calls per forward op (a 7 MB trace)")
_COMPILE_ENV = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "TORCHINDUCTOR_CACHE_DIR": "{fresh_dir}"}
_COMPILE_NO_PY = "dynamo/inductor compilation makes millions of Python calls: with_stack would make the trace huge"

CASES: tuple[Case, ...] = (
    Case("torch-input-dataloader", "torch", "DataLoader (num_workers=0) whose Dataset.__getitem__ runs slow pure-Python work per sample",
         "input", "input_bound", "steady", torch_dataloader, knob=Knob(start=500), python_events=False,
         python_events_reason="per-sample Python calls made the trace ~250 KB; the DataLoader's own "
         "enumerate(DataLoader)#…__next__ annotation marks the input time",
         score_against="in_trace", score_reason="measured in two regenerations: the injected per-sample work ran "
         "~1.7x longer profiled than not, even without Python events (cause not isolated)"),
    Case("tf-input-map", "tensorflow", "tf.data .map with heavy TF ops (dense transforms), no prefetch, consumed by next(iterator) in the step",
         "input", "input_bound", "steady", tf_input_map, knob=Knob(start=4)),
    Case("tf-input-pyfunc", "tensorflow", "tf.data .map through tf.py_function doing slow pure-Python work, no prefetch",
         "input", "input_bound", "steady", tf_input_pyfunc, knob=Knob(start=50_000)),
    Case("tf-retrace", "tensorflow", "tf.function gradient step called with a new Python float every step (retraces each call) vs a tensor",
         "graph_build", STEADY_GRAPH_BUILD, "steady", tf_retrace, rounds=6, block=4, score_against="in_trace",
         score_reason="TF's host tracer records the ops built while tracing, so a retrace runs ~1.6x longer "
         "profiled than not (inflation in ground_truth.json)"),
    Case("tf-function-per-call", "tensorflow", "the step's tf.functions made anew at every call (tf.function(f)(x) "
         "inside the loop: each new object traces on its call) vs made once", "graph_build", STEADY_GRAPH_BUILD,
         "steady", tf_function_per_call, rounds=6, block=4),
    Case("torch-compile-recompile", "torch", "torch.compile step (dynamic=False) whose batch size changes every steady step: forward and backward recompile",
         "graph_build", STEADY_GRAPH_BUILD, "steady", torch_recompile, env=_COMPILE_ENV, python_events=False,
         python_events_reason=_COMPILE_NO_PY, rounds=4, block=3, profiled_steady=4, isolate=True,
         notes="variants in separate processes: in one process every recompile of the injected model also "
         "lengthens the clean model's guard checks and later recompiles, so the cost grows with the run"),
    Case("tf-xla-cold", "tensorflow", "tf.function(jit_compile=True) step: the first call traces and XLA-compiles (clean twin compiled before the capture)",
         "graph_build", COLD_COMPILE, "cold", tf_xla, profiled_steady=3),
    Case("torch-compile-cold", "torch", "torch.compile step: the first call compiles with dynamo/inductor, on-disk caches off (clean twin compiled before the capture)",
         "graph_build", COLD_COMPILE, "cold", torch_compiled, env=_COMPILE_ENV, python_events=False,
         python_events_reason=_COMPILE_NO_PY, profiled_steady=3, cold_reps=2),
    Case("torch-tiny-ops", "torch", "eager step plus N tiny elementwise ops on a 16-element tensor",
         "launch_overhead", "launch_bound", "steady", torch_tiny_ops, knob=Knob(start=500, target_ms=3.0),
         score_against="in_trace", score_reason=_TINY, record_shapes=False, profiled_steady=2,
         python_events=False, python_events_reason="two Python events per tiny op doubled a 1.8 MB trace; the "
         "gaps between the recorded ops carry the same information"),
    Case("tf-tiny-ops", "tensorflow", "eager step plus N tiny elementwise ops on a 16-element tensor",
         "launch_overhead", "launch_bound", "steady", tf_tiny_ops, knob=Knob(start=100, target_ms=4.0),
         score_against="in_trace", score_reason=_TINY, profiled_steady=3),
    Case("torch-large-matmul", "torch", "step plus one large square matmul (side calibrated)",
         "kernel", "compute_bound", "steady", torch_large_matmul, knob=Knob(start=256, power=3, lo=16)),
    Case("tf-large-matmul", "tensorflow", "step plus one large square matmul, eager (side calibrated)",
         "kernel", "compute_bound", "steady", tf_large_matmul, knob=Knob(start=256, power=3, lo=16)),
    Case("torch-threads", "torch", "compute-heavy step with 1 intra-op thread instead of 2 (torch.set_num_threads)",
         "kernel", "compute_bound", "steady", torch_threads, knob=Knob(start=2048, power=2, lo=256, hi=6144, share=0.3),
         isolate=True, threads=(2, 1)),
    Case("torch-float64", "torch", "compute-heavy step with the model and data in float64 (model.double()) instead of "
         "float32: the same ops, each on float64 inputs", "kernel", "compute_bound", "steady", torch_float64,
         knob=Knob(start=1024, power=2, lo=256, hi=6144, share=0.3)),
    Case("torch-user-python", "torch", "pure-Python loop (no framework calls) between backward and the optimizer step",
         "host_compute", "host_compute", "steady", torch_user_python, knob=Knob(start=100_000), score_against="in_trace", score_reason=_PYTRACER),
    Case("torch-python-function", "torch", "a custom autograd.Function on the logits whose backward runs a pure-Python "
         "loop (the clean twin runs the same Function with no loop); no Python tracer: the Function's backward node "
         "is an op whose own time is the Python", "host_compute", "host_compute", "steady", torch_python_function,
         knob=Knob(start=100_000), python_events=False,
         python_events_reason="the case is the user's Python recorded only as the op that runs it"),
    Case("torch-grad-hooks", "torch", "a hook on each weight's gradient (tensor.register_hook) running a pure-Python "
         "loop (the clean twin's hooks do nothing); no Python tracer: the autograd engine runs the hooks inside a "
         "node's range, outside its op", "host_compute", "host_compute", "steady", torch_grad_hooks,
         knob=Knob(start=50_000), python_events=False,
         python_events_reason="the case is the user's Python run by the autograd engine without a Python tracer"),
    Case("tf-functions-eagerly", "tensorflow", "the tf.function step with tf.config.run_functions_eagerly(True) "
         "(a debugging switch left on: each call runs its Python op by op) vs off", "launch_overhead", "launch_bound",
         "steady", tf_functions_eagerly, isolate=True, score_against="in_trace",
         score_reason="the profiler records each eager op's dispatch (the cost is ~1.2× in the trace): it holds "
         "more of the cost than runs without it"),
    Case("jax-host-callback", "jax", "a jax.pure_callback inside the jitted step whose host function runs a "
         "pure-Python loop (the clean twin's does nothing), JAX's Python tracer off: the XLA program waits in "
         "the callback's instruction while the host runs it", "host_compute", "host_compute", "steady",
         jax_host_callback, knob=Knob(start=100_000)),
    Case("jax-disable-jit", "jax", "the jitted step with jax_disable_jit on (a debugging switch left on: the step "
         "runs as Python, each jax.numpy operation a jitted call of its own) vs off", "launch_overhead",
         "launch_bound", "steady", jax_disable_jit, isolate=True),
    Case("tf-user-python", "tensorflow", "pure-Python loop (no framework calls) between the gradient call and the update call",
         "host_compute", "host_compute", "steady", tf_user_python, knob=Knob(start=100_000)),
    Case("tf-pyfunc-in-step", "tensorflow", "tf.py_function running a pure-Python loop inside the tf.function gradient "
         "step (an executor thread runs the user's Python while the step's thread waits in the call)",
         "host_compute", "host_compute", "steady", tf_pyfunc_in_step, knob=Knob(start=100_000)),
    Case("torch-python-between-steps", "torch", "pure-Python loop after each step; ProfilerStep#N runs to the next step() call, so it is inside the marker",
         "host_compute", "host_compute", "steady", torch_between, knob=Knob(start=100_000), score_against="in_trace", score_reason=_PYTRACER),
    Case("tf-python-between-steps", "tensorflow", "pure-Python loop after each step, outside the Trace step marker",
         BETWEEN_STEPS, "host_between_steps", "steady", tf_between, knob=Knob(start=100_000)),
    Case("torch-anomaly-nan-checks", "torch", "autograd anomaly detection on in a deep narrow MLP's step, checking "
         "each backward node's outputs for NaN (set_detect_anomaly(True), its default) vs not (check_nan=False): "
         "the NaN checks alone (both store a stack per forward op: without Python events, not told apart)",
         "launch_overhead", "launch_bound", "steady", torch_anomaly_nan_checks,
         # (both variants store the stacks, which cost several times the checks: a small target keeps the trace small)
         knob=Knob(start=16, lo=1, hi=400, target_ms=1.5, share=0.05), python_events=False,
         python_events_reason=_ANOMALY_NO_PY, record_shapes=False, profiled_steady=3),
    Case("torch-gc", "torch", "each step makes many cyclic Python objects, gc enabled (collector pauses in the step) vs gc disabled without the garbage",
         "host_compute", "host_compute", "steady", torch_gc, knob=Knob(start=20_000), score_against="in_trace", score_reason=_PYTRACER),
    Case("tf-gc", "tensorflow", "each step makes many cyclic Python objects, gc enabled (collector pauses in the step) vs gc disabled without the garbage",
         "host_compute", "host_compute", "steady", tf_gc, knob=Knob(start=20_000)),
    Case("jax-large-matmul", "jax", "jitted step plus one large square matmul inside the same jax.jit call (side calibrated)",
         "kernel", "compute_bound", "steady", jax_large_matmul, knob=Knob(start=256, power=3, lo=16)),
    Case("jax-large-matmul-pytracer", "jax", "jitted step plus one large square matmul inside the same jax.jit call "
         "(side calibrated), with JAX's Python tracer on (jax.profiler.trace's default)",
         "kernel", "compute_bound", "steady", jax_large_matmul, knob=Knob(start=256, power=3, lo=16),
         python_tracer=True,
         notes="the tracer records the user's frame around the step, not the native wait for the result inside "
         "it: the frame's own time holds the XLA program's run on the client's threads"),
    Case("jax-async-matmul", "jax", "jitted step plus one large square matmul inside the same jax.jit call "
         "(side calibrated), in a loop that never blocks on a result (asynchronous dispatch: the programs run "
         "after the calls return; timed as a block to the end of the last program, an equal share a step)",
         "kernel", "compute_bound", "steady", jax_async_matmul, knob=Knob(start=256, power=3, lo=16),
         notes="without blocking, each step marker holds the call alone (tens of µs): the programs run on the "
         "worker threads after the loop and each step runs to the end of its own program (steps.py)"),
    Case("jax-tiny-ops", "jax", "jitted step plus N tiny eager jax.numpy elementwise ops on a 16-element array after the step's result",
         "launch_overhead", "launch_bound", "steady", jax_tiny_ops, knob=Knob(start=200, target_ms=3.0), profiled_steady=2,
         notes="JAX's profiler records ~18 events per tiny op (the jitted call, argument parsing, buffer-hold "
         "waits, the executable's run): a lower target and 2 steady steps keep the trace under 200 KB"),
    Case("jax-eager-grad", "jax", "jitted step plus N un-jitted jax.grad calls of a tiny function after the step's result, "
         "with JAX's Python tracer on (jax.profiler.trace's default)",
         "launch_overhead", "launch_bound", "steady", jax_eager_grad, knob=Knob(start=4, target_ms=4.0), profiled_steady=2,
         python_tracer=True,
         notes="the Python tracer names frames by file base name ($api.py:466 grad_f): JAX's own Python is told "
         "from the user's by what runs inside its API calls (roles.py); each call records ~2,000 frames, so "
         "a low target and 2 steady steps keep the trace small"),
    Case("jax-user-python", "jax", "pure-Python loop (no framework calls) after the jitted step's result, inside the step marker",
         "host_compute", "host_compute", "steady", jax_user_python, knob=Knob(start=100_000)),
    Case("jax-retrace", "jax", "jitted step given a new Python float as a static argument every step (retraces and recompiles each call) vs the same value",
         "graph_build", STEADY_GRAPH_BUILD, "steady", jax_retrace, rounds=6, block=4, profiled_steady=3),
    Case("jax-jit-per-call", "jax", "jax.jit of a new lambda around the step at every call (jax.jit(lambda ...)(x) "
         "inside the loop: a function JAX has not seen, traced and compiled each call) vs jitted once",
         "graph_build", STEADY_GRAPH_BUILD, "steady", jax_jit_per_call, rounds=6, block=4, profiled_steady=3),
    Case("jax-cold", "jax", "jax.jit step: the first call traces, lowers and XLA-compiles (clean twin compiled before the capture)",
         "graph_build", COLD_COMPILE, "cold", jax_jit, profiled_steady=3),
    Case("tf-cpu-contention", "tensorflow", "another process competes for the CPU the step's thread is pinned to, "
         "while a TF eager step of 1,000 tiny ops runs (both variants pinned; the competitor runs only in the "
         "injected one's steps)",
         "idle", "paused", "steady", tf_contention, threads=(1, 1),
         notes="no knob: the cost is the competitor's share of the CPU, about one step's worth; many short ops "
         "spread the scheduler's preemptions over the step, as on a busy machine"),
    Case("torch-gil-contention", "torch", "another thread of the process runs a pure-Python loop while the eager "
         "steps run (one intra-op thread in both variants, so the thread takes no core from the ops): after each "
         "framework call the step's thread waits to take the interpreter lock back", "idle", "gil_contention",
         "steady", torch_gil_contention, threads=(1, 1), python_events=False,
         python_events_reason="torch.profiler's default: the waits are unrecorded gaps and op bindings' own time "
         "(tests/data/torch_cpu_gil has a capture with Python events too)",
         notes="no knob: each wait is one switch interval (5 ms), one or more per framework call"),
    Case("tf-gil-contention", "tensorflow", "another thread of the process runs a pure-Python loop while the eager "
         "steps run (one intra-op thread in both variants): each op's TFE_Py_FastPathExecute waits to take the "
         "interpreter lock back", "idle", "gil_contention", "steady", tf_gil_contention, threads=(1, 1),
         notes="no knob: each wait is one switch interval (5 ms), one or more per framework call"),
    Case("tf-function-gil-contention", "tensorflow", "another thread of the process runs a pure-Python loop while "
         "the steps run as one tf.function call each (one intra-op thread in both variants): the call waits to take "
         "the interpreter lock back when it returns, once a step", "idle", "gil_contention", "steady",
         tf_function_gil_contention, threads=(1, 1), rounds=6,
         notes="no knob: one wait of one switch interval (5 ms) a step"),
    Case("keras-fit-gil-contention", "tensorflow", "another thread of the process runs a pure-Python loop while "
         "Keras model.fit runs its compiled train function batch by batch (one intra-op thread in both "
         "variants): fit's loop takes the interpreter lock back after each of its framework calls", "idle",
         "gil_contention", "steady", keras_fit_gil_contention, threads=(1, 1), rounds=6,
         notes="no knob: each wait is one switch interval (5 ms); fit makes a few framework calls a batch"),
    Case("jax-gil-contention", "jax", "another thread of the process runs a pure-Python loop while the jitted "
         "steps run: the step's thread waits to take the interpreter lock back after the jitted call and after "
         "the wait for its result", "idle", "gil_contention", "steady", jax_gil_contention, profiled_steady=12,
         notes="no knob: each wait is one switch interval (5 ms), a step makes two framework calls"),
    Case("jax-gil-contention-pytracer", "jax", "as jax-gil-contention, with JAX's Python tracer on "
         "(jax.profiler.trace's default)", "idle", "gil_contention", "steady", jax_gil_contention,
         profiled_steady=12, python_tracer=True,
         notes="the tracer records the user's frame around the step: a wait after the result lands in its own time"),
    # Two causes in one step: both must be found, each at its own size.
    Case("tf-retrace-and-python", "tensorflow", "tf.function gradient step retraced every step (a new Python float each call)",
         "graph_build", STEADY_GRAPH_BUILD, "steady", tf_retrace_and_python, knob=Knob(start=100_000),
         rounds=6, block=4,
         second=SecondCause("pure-Python loop (no framework calls) between the gradient call and the update call",
                            "host_compute", "host_compute")),
    Case("torch-input-and-python", "torch", "DataLoader (num_workers=0) whose Dataset.__getitem__ runs slow pure-Python "
         f"work per sample ({PAIR_DATALOADER_WORK} iterations)",
         "input", "input_bound", "steady", torch_input_and_python, knob=Knob(start=100_000), python_events=False,
         python_events_reason="as torch-input-dataloader: per-sample Python calls would bloat the trace; the user "
         "Python then shows as unrecorded time on the step's thread, which the calibrated gap rule must tell "
         "from framework glue",
         second=SecondCause("pure-Python loop (no framework calls) between backward and the optimizer step",
                            "host_compute", "host_compute")),
    Case("torch-tiny-ops-and-matmul", "torch", f"{PAIR_TINY_OPS} tiny elementwise ops on a 16-element tensor "
         "between backward and the optimizer step", "launch_overhead", "launch_bound", "steady",
         torch_tiny_ops_and_matmul, knob=Knob(start=256, power=3, lo=16), score_against="in_trace",
         score_reason=_TINY, record_shapes=False, python_events=False,
         python_events_reason="as torch-tiny-ops: the gaps between the recorded ops carry the tiny ops' Python",
         second=SecondCause("one large square matmul after the tiny ops (side calibrated)", "kernel",
                            "compute_bound")),
    Case("jax-retrace-and-python", "jax", "jitted step given a new Python float as a static argument every step "
         "(retraces and recompiles each call)", "graph_build", STEADY_GRAPH_BUILD, "steady", jax_retrace_and_python,
         knob=Knob(start=100_000), rounds=6, block=4, profiled_steady=3,
         second=SecondCause("pure-Python loop (no framework calls) after the step's result, inside the step marker",
                            "host_compute", "host_compute")),
    # Hidden: work beside the step that the step waits for little or none of (sized on its exposed twin).
    Case("tf-input-prefetch", "tensorflow", "tf.data .map with N elementwise transforms (tanh) followed by "
         ".prefetch(1): the pipeline maps the next batch on its own thread while the step runs",
         "input", "input_bound", "steady", tf_input_prefetch, kind="hidden", threads=(1, 1),
         knob=Knob(start=300, target_ms=0.0, share=0.3), refill_warmup=2, profiled_steady=10),
    Case("torch-input-workers", "torch", "DataLoader with one worker process whose __getitem__ runs pure-Python "
         "work per sample (as torch-input-dataloader), a batch's work less than the step",
         "input", "input_bound", "steady", torch_dataloader_workers, kind="hidden", threads=(1, 1),
         knob=Knob(start=1000, target_ms=0.0, share=0.5), python_events=False,
         python_events_reason="as torch-input-dataloader", warmup=6, block=10, refill_warmup=4, profiled_steady=10),
    Case("torch-input-workers-half", "torch", "DataLoader with one worker process whose __getitem__ runs "
         "pure-Python work per sample, a batch's work about twice the step: the step waits for about half of it",
         "input", "input_bound", "steady", torch_dataloader_workers, kind="hidden", threads=(1, 1),
         knob=Knob(start=4000, target_ms=0.0, share=2.0), python_events=False,
         python_events_reason="as torch-input-dataloader", warmup=6, block=10, refill_warmup=4, profiled_steady=10),
    Case("jax-dispatch-ahead", "jax", "a blocking wait on the host (time.sleep standing for a read of the next "
         "batch from storage) between the jitted call's return and float(loss): JAX's asynchronous dispatch "
         "runs the step's program on the client's threads meanwhile, a wait shorter than the program",
         "host_compute", "host_compute", "steady", jax_dispatch_ahead, kind="hidden",
         knob=Knob(start=500, target_ms=0.0, share=0.5), python_tracer=True, profiled_steady=10,
         notes="the JAX Python tracer records the wait's frame on the step's thread"),
    Case("jax-dispatch-ahead-half", "jax", "as jax-dispatch-ahead, the wait about 1.5 times the step's program: "
         "the step waits for the part of it the program does not cover",
         "host_compute", "host_compute", "steady", jax_dispatch_ahead, kind="hidden",
         knob=Knob(start=1500, target_ms=0.0, share=1.5), python_tracer=True, profiled_steady=10,
         notes="the JAX Python tracer records the wait's frame on the step's thread"),
    # Controls: the same math run two ways; their kernel time should agree within 2x.
    Case("tf-fit-vs-loop", "tensorflow", "Keras model.fit (step-marker callback) vs a custom tf.function loop, same model and data",
         "kernel", "", "steady", tf_fit_vs_loop, kind="control", rounds=6),
    Case("tf-function-vs-eager", "tensorflow", "the same step eager vs tf.function",
         "kernel", "", "steady", tf_function_vs_eager, kind="control", rounds=6),
    Case("torch-torchscript-vs-eager", "torch", "the same model through torch.jit.script vs eager",
         "kernel", "", "steady", torch_torchscript, kind="control", rounds=6),
    # Same program: one unchanged step captured twice, each capture its own process (an A/A pair);
    # the comparison must name no cause of a gap (the runs differ, the program does not).
    Case("torch-same-program", "torch", "the eager step captured twice, nothing injected", "", "", "steady",
         torch_same, kind="same", isolate=True, rounds=6),
    Case("tf-same-program", "tensorflow", "the eager step captured twice, nothing injected", "", "", "steady",
         tf_same, kind="same", isolate=True, rounds=6),
    Case("jax-same-program", "jax", "the jitted step captured twice, nothing injected", "", "", "steady",
         jax_same, kind="same", isolate=True, rounds=6),
)

BY_NAME = {c.name: c for c in CASES}


def select(names: str | None) -> list[Case]:
    """Cases named in a comma-separated list (all when ``None``), in table order."""
    if not names:
        return list(CASES)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    return [c for c in CASES if c.name in wanted]
