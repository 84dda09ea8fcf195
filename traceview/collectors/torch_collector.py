"""torch side of the paired workloads: models, training loops per mode, and the profiler setup.

Imported only when a torch capture is asked for (``traceview.collectors.runner.load_backend``), so
traceview itself never needs torch.

Modes:
- ``eager``: the plain autograd loop a tutorial writes.
- ``compile``: ``torch.compile(model)`` (inductor). Compilation happens on the first call, inside
  step 0, where the trace shows dynamo/inductor phases; the loss, backward and optimizer stay eager
  as in the usual ``model = torch.compile(model)`` recipe (backward runs as AOT-compiled code).
- ``torchscript``: ``torch.jit.script(model)`` called inside step 0 under a
  ``record_function("torch.jit.script")`` range (torch records no event of its own for scripting);
  the profiling executor then specializes the graph on the second call, so steps 0 and 1 are cold.

Profiler setup (shared with :func:`traceview.capture`): CPU activity (plus CUDA on a GPU),
``record_shapes=True``, a schedule that records every step so markers are ``ProfilerStep#0``,
``#1`` … matching the step index (no wait/warm-up offset), and ``tensorboard_trace_handler`` with
gzip, which writes ``<folder>/<worker>.<ms>.pt.trace.json.gz`` when the session stops.
"""

from __future__ import annotations

import math
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerAction, ProfilerActivity, profile, record_function, tensorboard_trace_handler

from traceview.collectors.harness import StepRecorder, run_steps
from traceview.collectors.manifest import cpu_name
from traceview.collectors.workloads import (
    MASKED_SCORE,
    TRANSFORMER_DENSE,
    TRANSFORMER_NORMS,
    WorkloadSpec,
    WorkloadState,
    attention_mask,
    cnn_flat_shape,
    transformer_dims,
)

FRAMEWORK = "torch"
TRACE_FORMAT = "kineto-json"
TRACE_GLOB = "*.pt.trace.json.gz"


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------


def configure(threads: int, device: str) -> dict[str, Any]:
    """Pin thread counts (so runs compare) and check the device; return what was set."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        # Only settable before the first inter-op work in this process; keep what is there.
        pass
    torch_device(device)
    return {"torch_intra_op": torch.get_num_threads(), "torch_inter_op": torch.get_num_interop_threads()}


def torch_device(device: str) -> torch.device:
    """``cpu`` or ``cuda``/``gpu`` (the latter only when torch sees a CUDA device)."""
    if device == "cpu":
        return torch.device("cpu")
    if device in ("cuda", "gpu"):
        if not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' asked for, but this torch build sees no CUDA device")
        return torch.device("cuda")
    raise RuntimeError(f"unknown device {device!r} (cpu, cuda)")


def device_name(device: str) -> str:
    if device in ("cuda", "gpu") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return cpu_name()


def versions() -> dict[str, str]:
    out = {"torch": torch.__version__}
    if torch.version.cuda:
        out["cuda"] = str(torch.version.cuda)
    return out


# The modes that compile through dynamo and inductor (torch.compile).
INDUCTOR_MODES = frozenset({"compile", "cudagraphs"})


def mode_unavailable(mode: str) -> str | None:
    """Why ``mode`` cannot run on this machine, or ``None``."""
    if mode in INDUCTOR_MODES:
        from torch import _dynamo

        if not _dynamo.is_dynamo_supported():
            return "torch.compile (dynamo) is not supported on this Python/platform"
        compiler = os.environ.get("CXX") or next(
            (c for c in ("g++", "clang++", "c++") if shutil.which(c)), None
        )
        if not compiler or not shutil.which(compiler):
            return "torch.compile on CPU (inductor) needs a C++ compiler (g++ or clang++); none found"
    if mode == "torchscript" and not hasattr(torch.jit, "script"):
        return f"torch {torch.__version__} has no torch.jit.script"
    return None


def reset() -> None:
    """Forget compiled frames so the next program compiles again (on-disk caches stay)."""
    from torch import _dynamo

    _dynamo.reset()


def environment(mode: str) -> dict[str, Any]:
    """Process state that changes what the cold step holds; read before the capture starts.

    For ``compile``: inductor's cache folder and whether it already held anything. A warm cache
    turns the cold step's ``inductor_compile`` / ``compile_fx_inner`` (code generation and C++
    builds) into ``AOTAutogradCache.inductor_load`` / ``PyCodeCache.load_by_key_path``; dynamo's
    tracing (``dynamo``, ``_compile.compile_inner``, ``backend_compile``) stays either way.
    """
    if mode not in INDUCTOR_MODES:
        return {}
    from torch._dynamo.utils import counters
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    counters.clear()  # so compile_report() sees this capture's frames only
    folder = Path(cache_dir())
    warm = folder.is_dir() and any(p.is_file() for p in folder.rglob("*"))
    return {"inductor_cache_dir": str(folder), "inductor_cache_warm": warm}


def compile_report(mode: str) -> dict[str, Any]:
    """What dynamo did during the profiled run: frames compiled and why any fell back to eager.

    Dynamo skips what it cannot trace (``nn.LSTM`` in torch 2.13: "Dynamo does not support RNN,
    GRU, or LSTM") and runs it eagerly; the trace then shows the tracing attempt in the cold step
    and no compiled region afterwards, and this report says why.
    """
    if mode not in INDUCTOR_MODES:
        return {}
    from torch._dynamo.utils import counters

    fallbacks = sorted({reason.strip().splitlines()[0] for reason in counters.get("unimplemented", {})})
    breaks = sorted({str(reason).strip().splitlines()[0] for reason in counters.get("graph_break", {})})
    return {
        "dynamo_frames": dict(counters.get("frames", {})),
        "fell_back_to_eager": fallbacks,
        "graph_breaks": breaks,
    }


def mode_notes(mode: str) -> list[str]:
    notes: list[str] = []
    if mode == "compile":
        notes.append(
            "torch.compile(model): with a warm inductor cache (environment.inductor_cache_warm) the cold step "
            "loads compiled code instead of generating and building it"
        )
    if mode == "cudagraphs":
        notes.append(
            "torch.compile(model, mode='reduce-overhead'): inductor's code is recorded as CUDA graphs on the second "
            "call and replayed after, so a steady step's kernels run under a few graph launches"
        )
    if mode == "torchscript":
        notes.append(
            "torch.jit.script runs inside step 0 under record_function('torch.jit.script'); "
            "TorchScript is deprecated in recent torch releases"
        )
    return notes


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


class LSTMRegressor(nn.Module):
    """``nn.LSTM`` over the window, last hidden state through a linear head (Keras ``LSTM`` + ``Dense``)."""

    def __init__(self, features: int, units: int, out: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, units, batch_first=True)
        self.head = nn.Linear(units, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq, _ = self.lstm(x)
        return self.head(seq[:, -1, :])


class TinyTransformer(nn.Module):
    """Token + position embedding, one pre-LN self-attention block, an MLP block, a final norm and
    a vocabulary head. Attention is written out (matmul, mask, softmax, matmul) so the maths is
    the Keras, tf.nn and JAX versions' exactly; ``nn.MultiheadAttention`` packs and initialises
    its projections its own way. Submodules are named after the canonical parameters ("/" -> "_").
    """

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__()
        dims = transformer_dims(spec)
        self.heads = dims["h"]
        self.head_dim = dims["dh"]
        self.scale = 1.0 / math.sqrt(dims["dh"])
        self.masked_score = MASKED_SCORE  # an attribute: TorchScript cannot read a module global
        self.embed_tokens = nn.Embedding(dims["v"], dims["d"])
        self.embed_positions = nn.Parameter(torch.zeros(dims["s"], dims["d"]))
        self.ln0 = nn.LayerNorm(dims["d"], eps=spec.ln_eps)
        self.ln1 = nn.LayerNorm(dims["d"], eps=spec.ln_eps)
        self.ln_f = nn.LayerNorm(dims["d"], eps=spec.ln_eps)
        self.attn_query = nn.Linear(dims["d"], dims["d"])
        self.attn_key = nn.Linear(dims["d"], dims["d"])
        self.attn_value = nn.Linear(dims["d"], dims["d"])
        self.attn_output = nn.Linear(dims["d"], dims["d"])
        self.mlp_dense0 = nn.Linear(dims["d"], dims["f"])
        self.mlp_dense1 = nn.Linear(dims["f"], dims["d"])
        self.head = nn.Linear(dims["d"], dims["v"])
        self.register_buffer("allowed", torch.from_numpy(attention_mask(spec)))

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """(batch, seq, width) -> (batch, heads, seq, head width)."""
        return t.reshape(t.size(0), t.size(1), self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed_tokens(x) + self.embed_positions
        a = self.ln0(h)
        q, k, v = self._heads(self.attn_query(a)), self._heads(self.attn_key(a)), self._heads(self.attn_value(a))
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        weights = torch.softmax(scores.masked_fill(~self.allowed, self.masked_score), dim=-1)
        o = torch.matmul(weights, v).transpose(1, 2).reshape(h.shape)
        h = h + self.attn_output(o)
        h = h + self.mlp_dense1(torch.relu(self.mlp_dense0(self.ln1(h))))
        return self.head(self.ln_f(h))


def _transformer_assignments(net: TinyTransformer, params: dict[str, np.ndarray]) -> list[tuple[torch.Tensor, np.ndarray]]:
    assign: list[tuple[torch.Tensor, np.ndarray]] = [
        (net.embed_tokens.weight, params["embed/tokens"]),
        (net.embed_positions, params["embed/positions"]),
    ]
    for name, _, _ in TRANSFORMER_DENSE:
        lin = getattr(net, name.replace("/", "_"))
        assign += [(lin.weight, params[f"{name}/kernel"].T), (lin.bias, params[f"{name}/bias"])]
    for norm in TRANSFORMER_NORMS:
        ln = getattr(net, norm)
        assign += [(ln.weight, params[f"{norm}/gamma"]), (ln.bias, params[f"{norm}/beta"])]
    return assign


def build_model(spec: WorkloadSpec, params: dict[str, np.ndarray]) -> nn.Module:
    """The spec's network with its canonical parameters loaded (layouts as in ``workloads``)."""
    model: nn.Module
    assign: list[tuple[torch.Tensor, np.ndarray]] = []
    if spec.kind in ("mlp", "linreg"):
        layers: list[nn.Module] = []
        n_dense = len(spec.layers) - 1
        for i, (fan_in, fan_out) in enumerate(zip(spec.layers[:-1], spec.layers[1:])):
            hidden = i < n_dense - 1
            bn = spec.batch_norm and hidden
            lin = nn.Linear(fan_in, fan_out, bias=not bn)
            layers.append(lin)
            assign.append((lin.weight, params[f"dense{i}/kernel"].T))
            if not bn:
                assert lin.bias is not None
                assign.append((lin.bias, params[f"dense{i}/bias"]))
            if hidden:
                if bn:
                    norm = nn.BatchNorm1d(fan_out, eps=spec.bn_eps, momentum=spec.bn_momentum)
                    layers.append(norm)
                    assign.append((norm.weight, params[f"bn{i}/gamma"]))
                    assign.append((norm.bias, params[f"bn{i}/beta"]))
                layers.append(nn.ReLU())
                if spec.dropout:
                    layers.append(nn.Dropout(spec.dropout))
        model = nn.Sequential(*layers)
    elif spec.kind == "lstm":
        features = spec.input_shape[-1]
        net = LSTMRegressor(features, spec.hidden, spec.layers[-1])
        assign += [
            (net.lstm.weight_ih_l0, params["lstm/kernel"].T),
            (net.lstm.weight_hh_l0, params["lstm/recurrent_kernel"].T),
            (net.lstm.bias_ih_l0, params["lstm/bias"]),
            (net.lstm.bias_hh_l0, np.zeros_like(params["lstm/bias"])),
            (net.head.weight, params["dense0/kernel"].T),
            (net.head.bias, params["dense0/bias"]),
        ]
        # Keras has one LSTM bias; a second trainable one would double its effective Adam step.
        net.lstm.bias_hh_l0.requires_grad_(False)
        model = net
    elif spec.kind == "cnn":
        layers = []
        c_in = spec.input_shape[-1]
        for i, c_out in enumerate(spec.conv_channels):
            conv = nn.Conv2d(c_in, c_out, spec.kernel_size)
            layers += [conv, nn.ReLU(), nn.MaxPool2d(2)]
            # HWIO -> OIHW
            assign.append((conv.weight, params[f"conv{i}/kernel"].transpose(3, 2, 0, 1)))
            assign.append((conv.bias, params[f"conv{i}/bias"]))
            c_in = c_out
        h, w, c = cnn_flat_shape(spec)
        lin = nn.Linear(h * w * c, spec.layers[-1])
        layers += [nn.Flatten(), lin]
        # Canonical rows are in Keras' H, W, C flatten order; torch flattens C, H, W.
        kernel = params["dense0/kernel"].reshape(h, w, c, -1).transpose(3, 2, 0, 1).reshape(-1, h * w * c)
        assign.append((lin.weight, kernel))
        assign.append((lin.bias, params["dense0/bias"]))
        model = nn.Sequential(*layers)
    elif spec.kind == "transformer":
        net_t = TinyTransformer(spec)
        assign += _transformer_assignments(net_t, params)
        model = net_t
    else:
        raise ValueError(f"unknown workload kind {spec.kind!r}")
    with torch.no_grad():
        for tensor, value in assign:
            if tuple(tensor.shape) != value.shape:
                raise ValueError(f"{spec.name}: shape {tuple(tensor.shape)} != canonical {value.shape}")
            tensor.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    return model


def _token_cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position: (batch, seq, vocab) logits, (batch, seq) ids."""
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


def loss_function(spec: WorkloadSpec) -> Any:
    if spec.loss == "mse":
        return F.mse_loss
    return _token_cross_entropy if spec.token_input else F.cross_entropy


def _to_torch_x(spec: WorkloadSpec, x: np.ndarray, device: torch.device) -> torch.Tensor:
    if spec.kind == "cnn":
        x = x.transpose(0, 3, 1, 2)  # NHWC -> NCHW
    return torch.from_numpy(np.ascontiguousarray(x)).to(device)


# ---------------------------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------------------------


class TorchProgram:
    """One workload in one torch mode, from fresh initial weights."""

    def __init__(self, spec: WorkloadSpec, state: WorkloadState, mode: str, device: str = "cpu") -> None:
        if mode not in ("eager", "compile", "torchscript", "cudagraphs"):
            raise ValueError(f"torch has no mode {mode!r}")
        self.spec = spec
        self.mode = mode
        self.device = torch_device(device)
        torch.manual_seed(spec.seed)
        self.model = build_model(spec, state.params).to(self.device)
        if not spec.train:
            self.model.eval()
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer: torch.optim.Optimizer | None = None
        if spec.train:
            if spec.optimizer == "sgd":
                self.optimizer = torch.optim.SGD(trainable, lr=spec.lr)
            else:
                self.optimizer = torch.optim.Adam(trainable, lr=spec.lr, betas=spec.adam_betas, eps=spec.adam_eps)
        self.batches = [
            (_to_torch_x(spec, x, self.device), torch.from_numpy(np.ascontiguousarray(y)).to(self.device))
            for x, y in state.batches()
        ]
        self.loss_fn = loss_function(spec)
        self.forward: Any = None

    def _prepare(self) -> None:
        """Wrap the model for the mode; called inside step 0 so its cost lands in the cold step."""
        if self.mode == "eager":
            self.forward = self.model
        elif self.mode == "compile":
            self.forward = torch.compile(self.model)
        elif self.mode == "cudagraphs":
            self.forward = torch.compile(self.model, mode="reduce-overhead")
        else:
            with record_function("torch.jit.script"):
                self.forward = torch.jit.script(self.model)

    def step(self, i: int) -> float:
        if self.forward is None:
            self._prepare()
        x, y = self.batches[i % len(self.batches)]
        if self.optimizer is None:
            with torch.no_grad():
                loss = self.loss_fn(self.forward(x), y)
        else:
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss_fn(self.forward(x), y)
            loss.backward()
            self.optimizer.step()
        # .item() waits for the step's work, as a loop that logs its loss does.
        return float(loss.item())

    def run(self, steps: int, recorder: StepRecorder) -> None:
        run_steps(self.step, steps, recorder)


def build_program(spec: WorkloadSpec, state: WorkloadState, mode: str, device: str) -> TorchProgram:
    return TorchProgram(spec, state, mode, device)


# ---------------------------------------------------------------------------------------------
# Profiler
# ---------------------------------------------------------------------------------------------


def _record_every_step(step: int) -> ProfilerAction:
    """A schedule with no wait/warm-up: every step is recorded, so ``ProfilerStep#N`` is step N.

    Passing a schedule (rather than none) is what makes torch emit ``ProfilerStep#`` markers; the
    trace is written when the session stops.
    """
    return ProfilerAction.RECORD


class TorchProfilerSession:
    """``torch.profiler.profile`` set up the traceview way; one gzip Kineto trace per session."""

    framework = FRAMEWORK
    trace_format = TRACE_FORMAT

    def __init__(
        self, folder: Path, device: str = "cpu", record_shapes: bool = True, python_events: bool = True,
        memory: bool = False,
    ) -> None:
        self.folder = Path(folder)
        self.device = device
        self.record_shapes = record_shapes
        # with_stack=True: torch's Python tracer records every Python call as a python_function
        # event, so user code between framework ops is visible (at a cost on call-heavy code).
        self.python_events = python_events
        self.memory = memory  # profile_memory=True: allocator samples ("[memory]" events)
        self.worker_name = f"{socket.gethostname()}_{os.getpid()}"
        self._prof: profile | None = None
        self._before: set[Path] = set()

    def _activities(self) -> list[ProfilerActivity]:
        acts = [ProfilerActivity.CPU]
        if self.device in ("cuda", "gpu"):
            acts.append(ProfilerActivity.CUDA)
        return acts

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._before = set(self.folder.glob(TRACE_GLOB))
        self._prof = profile(
            activities=self._activities(),
            schedule=_record_every_step,
            on_trace_ready=tensorboard_trace_handler(str(self.folder), worker_name=self.worker_name, use_gzip=True),
            record_shapes=self.record_shapes,
            with_stack=self.python_events,
            profile_memory=self.memory,
        )
        # Opens ProfilerStep#0 right away.
        self._prof.start()

    def begin_step(self, step: int) -> None:
        assert self._prof is not None, "session not started"
        while self._prof.step_num < step:
            self._prof.step()  # closes ProfilerStep#(n-1), opens ProfilerStep#n

    def end_step(self, step: int) -> None:
        # The marker closes at the next step's begin (or at stop), as torch's own loop does.
        return None

    def stop(self) -> Path:
        assert self._prof is not None, "session not started"
        self._prof.stop()
        self._prof = None
        new = sorted(set(self.folder.glob(TRACE_GLOB)) - self._before, key=lambda p: p.stat().st_mtime)
        if not new:
            raise RuntimeError(f"torch.profiler wrote no {TRACE_GLOB} under {self.folder}")
        return new[-1]

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "torch.profiler.profile",
            "activities": [a.name for a in self._activities()],
            "record_shapes": self.record_shapes,
            "python_events": self.python_events,
            "schedule": "record every step (no wait, no warm-up)",
            "on_trace_ready": "tensorboard_trace_handler(use_gzip=True)",
            "step_marker": "user_annotation ProfilerStep#N, N = step index",
            "step_marker_offset": 0,
        }


# Modes whose steps run a compiler in Python: with the Python tracer on, the cold step records every
# call dynamo and inductor make (a 2-layer MLP's cold step grew to ~600 MB of JSON), or every call of
# TorchScript's Python frontend as it parses and types a custom module (the transformer's step 0:
# ~99,000 Python events, 1.7 MB gzipped), while their phases are marked by the compiler's own events
# anyway (dynamo's ranges; record_function('torch.jit.script')). Python events stay off there by default.
PYTHON_EVENTS_OFF_MODES = frozenset({"compile", "cudagraphs", "torchscript"})


def python_events_default(mode: str) -> bool:
    """Whether a capture of ``mode`` records Python events unless asked otherwise."""
    return mode not in PYTHON_EVENTS_OFF_MODES


def profiler_session(
    folder: Path, device: str, python_events: bool = True, memory: bool = False
) -> TorchProfilerSession:
    """The torch.profiler session of ``traceview collect`` and ``traceview.capture``. Python events
    (``with_stack=True``) show the user's code between framework ops; their cost is measured in
    benchmarks/truth (the Python tracer slows Python-heavy steps ~1.3–1.6×). ``memory`` records
    every allocation and free (``profile_memory=True``)."""
    return TorchProfilerSession(folder, device, python_events=python_events, memory=memory)
