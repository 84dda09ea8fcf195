"""JAX side of the paired workloads: the networks in ``jax.numpy``, the jitted step, the profiler setup.

Imported only when a JAX capture is asked for (``traceview.collectors.runner.load_backend``), so
traceview itself never needs JAX.

Mode:
- ``jit``: one function computes the loss, its gradient (``jax.value_and_grad``) and the optimizer
  update, wrapped in ``jax.jit`` as a JAX training loop is written. Step 0's call traces it to a
  jaxpr, lowers it and XLA-compiles it (the cold step); later calls run the compiled executable.
  JAX dispatches asynchronously, so each step ends with ``float(loss)``, which waits for the
  step's result as ``loss.item()`` does in torch.

The networks take the canonical layout as it is (``x @ W + b``, NHWC/HWIO convolutions, Keras'
flatten order). The optimizers are written by hand (no optax): SGD, and Adam the way
``torch.optim.Adam`` computes it (epsilon added to the bias-corrected ``sqrt(v_hat)``). Batch
norm trains on the biased batch variance and keeps torch's running statistics; dropout masks
come from ``jax.random`` (``fold_in(key(seed), step)``), so they match no other framework's and
the parity run turns dropout off as for the others.

Profiler setup (shared with ``traceview run``'s JAX hook): ``jax.profiler.start_trace(logdir)``
with the Python tracer and HLO protos off (they would multiply a small step's trace size), one
``StepTraceAnnotation('train', step_num=i)`` per step (the marker TensorBoard's step view and
traceview read), ``stop_trace()`` writes ``<logdir>/plugins/profile/<run>/<host>.xplane.pb``.
JAX also writes ``<host>.trace.json.gz`` beside it, a trace-viewer conversion of the same events;
the capture removes it so the folder holds one trace of record (``traceview export --perfetto``
makes a viewer file from the XPlane).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from traceview.collectors.harness import ContextStepMarkers, ProfileRuns, StepRecorder, run_steps
from traceview.collectors.manifest import cpu_name
from traceview.collectors.workloads import (
    MASKED_SCORE,
    WorkloadSpec,
    WorkloadState,
    attention_mask,
    transformer_dims,
)

FRAMEWORK = "jax"
TRACE_FORMAT = "xplane"
STEP_MARKER = "train"
# JAX's trace-viewer copy of the XPlane, written beside it by stop_trace().
VIEWER_COPY_SUFFIX = ".trace.json.gz"
# XLA has no thread-count API; these XLA_FLAGS make its CPU backend run each op on the calling
# thread (the setting JAX's maintainers point to). They only act before the backend starts.
SINGLE_THREAD_XLA_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "intra_op_parallelism_threads=1")

Params = dict[str, jax.Array]


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------


def _backend_started() -> bool:
    """Whether XLA's backends are already up in this process (then XLA_FLAGS no longer act)."""
    from jax._src import xla_bridge

    return bool(getattr(xla_bridge, "_backends", {}))


def configure(threads: int, device: str) -> dict[str, Any]:
    """Pin XLA's CPU backend to one thread when asked (before it starts) and check the device."""
    flags = os.environ.get("XLA_FLAGS", "")
    note = "XLA's default (its CPU backend sizes its own pools: one per core)"
    if threads == 1:
        if _backend_started():
            note = "XLA's backend was already running in this process: XLA_FLAGS not applied"
        else:
            missing = [f for f in SINGLE_THREAD_XLA_FLAGS if f not in flags.split()]
            os.environ["XLA_FLAGS"] = " ".join([flags, *missing]).strip()
            note = "XLA_FLAGS " + " ".join(SINGLE_THREAD_XLA_FLAGS)
    jax_device(device)
    return {"xla_threads": note, "xla_flags": os.environ.get("XLA_FLAGS", "")}


def jax_device(device: str) -> jax.Device:
    if device == "cpu":
        return jax.devices("cpu")[0]
    if device in ("cuda", "gpu"):
        try:
            return jax.devices("gpu")[0]
        except RuntimeError as err:
            raise RuntimeError("device 'gpu' asked for, but this jaxlib sees no GPU") from err
    raise RuntimeError(f"unknown device {device!r} (cpu, gpu)")


def device_name(device: str) -> str:
    if device in ("cuda", "gpu"):
        return str(jax_device(device).device_kind)
    return cpu_name()


def versions() -> dict[str, str]:
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__}


def mode_unavailable(mode: str) -> str | None:
    if not hasattr(jax.profiler, "StepTraceAnnotation"):
        return f"jax {jax.__version__} has no jax.profiler.StepTraceAnnotation"
    return None


def reset() -> None:
    """Drop compiled executables so the next program traces and compiles again."""
    jax.clear_caches()


def environment(mode: str) -> dict[str, Any]:
    """Process state that changes what the cold step holds: a persistent compilation cache turns
    step 0's XLA compile into a cache load."""
    return {"compilation_cache_dir": jax.config.jax_compilation_cache_dir or None}


def compile_report(mode: str) -> dict[str, Any]:
    """Facts about compilation gathered after the profiled run (none recorded for this framework)."""
    return {}


def mode_notes(mode: str) -> list[str]:
    return [
        "jax.jit(train_step): step 0 traces, lowers and XLA-compiles the whole step (loss, gradient, "
        "optimizer update); float(loss) waits for each step's result",
        "optimizers written by hand: SGD, and Adam as torch.optim.Adam computes it; dropout masks from "
        "jax.random.fold_in(key(seed), step)",
    ]


# ---------------------------------------------------------------------------------------------
# Networks (canonical layout)
# ---------------------------------------------------------------------------------------------


def _dense(p: Params, name: str, h: jax.Array) -> jax.Array:
    return h @ p[f"{name}/kernel"] + p[f"{name}/bias"]


def _mlp(
    spec: WorkloadSpec, p: Params, stats: Params, x: jax.Array, training: bool, key: jax.Array | None
) -> tuple[jax.Array, Params]:
    """Dense layers; hidden ones with batch norm (no bias) and dropout where the spec has them."""
    h = x
    new_stats = dict(stats)
    n_dense = len(spec.layers) - 1
    for i in range(n_dense):
        hidden = i < n_dense - 1
        h = h @ p[f"dense{i}/kernel"]
        if spec.batch_norm and hidden:
            if training:
                mean, var = h.mean(axis=0), h.var(axis=0)  # biased, as torch and Keras normalize
                n = h.shape[0]
                m = spec.bn_momentum  # torch convention: the running value keeps the unbiased variance
                new_stats[f"bn{i}/mean"] = stats[f"bn{i}/mean"] * (1 - m) + mean * m
                new_stats[f"bn{i}/var"] = stats[f"bn{i}/var"] * (1 - m) + var * (n / (n - 1)) * m
            else:
                mean, var = stats[f"bn{i}/mean"], stats[f"bn{i}/var"]
            h = (h - mean) * lax.rsqrt(var + spec.bn_eps) * p[f"bn{i}/gamma"] + p[f"bn{i}/beta"]
        else:
            h = h + p[f"dense{i}/bias"]
        if hidden:
            h = jax.nn.relu(h)
            if training and spec.dropout and key is not None:
                keep = 1.0 - spec.dropout
                mask = jax.random.bernoulli(jax.random.fold_in(key, i), keep, h.shape)
                h = jnp.where(mask, h / keep, 0.0)
    return h, new_stats


def _lstm(spec: WorkloadSpec, p: Params, x: jax.Array) -> jax.Array:
    """One LSTM layer over the window (gates i, f, g, o as torch and Keras), then the linear head."""
    batch = x.shape[0]
    kernel, recurrent, bias = p["lstm/kernel"], p["lstm/recurrent_kernel"], p["lstm/bias"]

    def cell(carry: tuple[jax.Array, jax.Array], x_t: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
        h, c = carry
        i_g, f_g, g_g, o_g = jnp.split(x_t @ kernel + h @ recurrent + bias, 4, axis=1)
        c = jax.nn.sigmoid(f_g) * c + jax.nn.sigmoid(i_g) * jnp.tanh(g_g)
        return (jax.nn.sigmoid(o_g) * jnp.tanh(c), c), None

    zeros = jnp.zeros((batch, spec.hidden), x.dtype)
    (h, _), _ = lax.scan(cell, (zeros, zeros), jnp.swapaxes(x, 0, 1))
    return _dense(p, "dense0", h)


def _cnn(spec: WorkloadSpec, p: Params, x: jax.Array) -> jax.Array:
    """Valid convolutions (NHWC, HWIO), ReLU, 2x2 max pooling, flatten in H, W, C order, dense head."""
    h = x
    for i in range(len(spec.conv_channels)):
        h = lax.conv_general_dilated(h, p[f"conv{i}/kernel"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + p[f"conv{i}/bias"])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return _dense(p, "dense0", h.reshape(h.shape[0], -1))


def _layer_norm(spec: WorkloadSpec, p: Params, name: str, h: jax.Array) -> jax.Array:
    mean = h.mean(axis=-1, keepdims=True)
    var = jnp.square(h - mean).mean(axis=-1, keepdims=True)
    return (h - mean) * lax.rsqrt(var + spec.ln_eps) * p[f"{name}/gamma"] + p[f"{name}/beta"]


def _transformer(spec: WorkloadSpec, p: Params, x: jax.Array) -> jax.Array:
    """The pre-LN block of ``workloads``, attention written out with matmuls and softmax."""
    d = transformer_dims(spec)
    allowed = attention_mask(spec)

    def heads(t: jax.Array) -> jax.Array:
        return t.reshape(t.shape[0], d["s"], d["h"], d["dh"]).transpose(0, 2, 1, 3)

    h = jnp.take(p["embed/tokens"], x, axis=0) + p["embed/positions"]
    a = _layer_norm(spec, p, "ln0", h)
    q, k, v = heads(_dense(p, "attn/query", a)), heads(_dense(p, "attn/key", a)), heads(_dense(p, "attn/value", a))
    scores = (q @ k.swapaxes(-1, -2)) * (1.0 / float(np.sqrt(d["dh"])))
    weights = jax.nn.softmax(jnp.where(allowed, scores, MASKED_SCORE), axis=-1)
    o = (weights @ v).transpose(0, 2, 1, 3).reshape(h.shape)
    h = h + _dense(p, "attn/output", o)
    h = h + _dense(p, "mlp/dense1", jax.nn.relu(_dense(p, "mlp/dense0", _layer_norm(spec, p, "ln1", h))))
    return _dense(p, "head", _layer_norm(spec, p, "ln_f", h))


def forward(
    spec: WorkloadSpec, p: Params, stats: Params, x: jax.Array, training: bool, key: jax.Array | None
) -> tuple[jax.Array, Params]:
    """The spec's network: outputs (logits or predictions) and the updated batch-norm statistics."""
    if spec.kind in ("mlp", "linreg"):
        return _mlp(spec, p, stats, x, training, key)
    if spec.kind == "lstm":
        return _lstm(spec, p, x), stats
    if spec.kind == "cnn":
        return _cnn(spec, p, x), stats
    if spec.kind == "transformer":
        return _transformer(spec, p, x), stats
    raise ValueError(f"unknown workload kind {spec.kind!r}")


def loss_value(spec: WorkloadSpec, out: jax.Array, y: jax.Array) -> jax.Array:
    """MSE, or softmax cross-entropy on logits averaged over every labelled position."""
    if spec.loss == "mse":
        return jnp.mean(jnp.square(out - y))
    log_probs = jax.nn.log_softmax(out, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, y[..., None], axis=-1))


# ---------------------------------------------------------------------------------------------
# Optimizers (hand-written, the maths of torch.optim)
# ---------------------------------------------------------------------------------------------


def init_optimizer(spec: WorkloadSpec, params: Params) -> dict[str, Any]:
    if spec.optimizer == "sgd":
        return {}
    zeros = {k: jnp.zeros_like(v) for k, v in params.items()}
    return {"t": jnp.zeros((), jnp.float32), "m": zeros, "v": dict(zeros)}


def apply_optimizer(
    spec: WorkloadSpec, params: Params, grads: Params, state: dict[str, Any]
) -> tuple[Params, dict[str, Any]]:
    """One SGD or Adam update; Adam as ``torch.optim.Adam``: ``p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)``."""
    if spec.optimizer == "sgd":
        return {k: params[k] - spec.lr * grads[k] for k in params}, state
    b1, b2 = spec.adam_betas
    t = state["t"] + 1.0
    m = {k: state["m"][k] + (grads[k] - state["m"][k]) * (1.0 - b1) for k in params}
    v = {k: state["v"][k] * b2 + jnp.square(grads[k]) * (1.0 - b2) for k in params}
    step_size = spec.lr / (1.0 - b1**t)
    root_bc2 = jnp.sqrt(1.0 - b2**t)
    new = {k: params[k] - step_size * m[k] / (jnp.sqrt(v[k]) / root_bc2 + spec.adam_eps) for k in params}
    return new, {"t": t, "m": m, "v": v}


# ---------------------------------------------------------------------------------------------
# Program
# ---------------------------------------------------------------------------------------------


def _initial_stats(spec: WorkloadSpec) -> Params:
    """Batch-norm running statistics (not trained): mean 0, variance 1, as torch and Keras start."""
    if not spec.batch_norm:
        return {}
    stats: Params = {}
    for i, width in enumerate(spec.layers[1:-1]):
        stats[f"bn{i}/mean"] = jnp.zeros(width, jnp.float32)
        stats[f"bn{i}/var"] = jnp.ones(width, jnp.float32)
    return stats


def _as_jax(values: np.ndarray, device: jax.Device) -> jax.Array:
    # JAX runs 32-bit unless x64 is enabled: ids and labels go in as int32 rather than be
    # truncated with a warning.
    if values.dtype == np.int64:
        values = values.astype(np.int32)
    return jax.device_put(values, device)


class JitProgram:
    """One workload with its whole training (or inference) step in ``jax.jit``, from fresh weights."""

    def __init__(self, spec: WorkloadSpec, state: WorkloadState, mode: str = "jit", device: str = "cpu") -> None:
        if mode != "jit":
            raise ValueError(f"jax has no mode {mode!r}")
        self.spec = spec
        dev = jax_device(device)
        self.params: Params = {k: _as_jax(v, dev) for k, v in state.params.items()}
        # Everything the step takes is committed to the device: the step's outputs are, and an
        # uncommitted input would make the second call compile the step again for new shardings.
        self.stats = jax.device_put(_initial_stats(spec), dev)
        self.opt_state = jax.device_put(init_optimizer(spec, self.params), dev) if spec.train else {}
        self.batches = [(_as_jax(x, dev), _as_jax(y, dev)) for x, y in state.batches()]
        self.key = jax.random.key(spec.seed) if spec.dropout else None
        # The jitted function is made here and compiled by its first call, inside step 0.
        self.step_fn: Callable[..., Any] = jax.jit(self._train_step if spec.train else self._eval_step)

    def _train_step(
        self, params: Params, opt_state: dict[str, Any], stats: Params, x: jax.Array, y: jax.Array, step: jax.Array
    ) -> tuple[Params, dict[str, Any], Params, jax.Array]:
        spec = self.spec
        key = jax.random.fold_in(self.key, step) if self.key is not None else None

        def objective(p: Params) -> tuple[jax.Array, Params]:
            out, new_stats = forward(spec, p, stats, x, True, key)
            return loss_value(spec, out, y), new_stats

        (loss, new_stats), grads = jax.value_and_grad(objective, has_aux=True)(params)
        params, opt_state = apply_optimizer(spec, params, grads, opt_state)
        return params, opt_state, new_stats, loss

    def _eval_step(self, params: Params, stats: Params, x: jax.Array, y: jax.Array) -> jax.Array:
        out, _ = forward(self.spec, params, stats, x, False, None)
        return loss_value(self.spec, out, y)

    def step(self, i: int) -> float:
        x, y = self.batches[i % len(self.batches)]
        if not self.spec.train:
            return float(self.step_fn(self.params, self.stats, x, y))
        self.params, self.opt_state, self.stats, loss = self.step_fn(self.params, self.opt_state, self.stats, x, y, i)
        # float() waits for the step's result (JAX dispatches asynchronously), as .item() does in torch.
        return float(loss)

    def run(self, steps: int, recorder: StepRecorder) -> None:
        run_steps(self.step, steps, recorder)


def build_program(spec: WorkloadSpec, state: WorkloadState, mode: str, device: str) -> JitProgram:
    return JitProgram(spec, state, mode, device)


# ---------------------------------------------------------------------------------------------
# Profiler
# ---------------------------------------------------------------------------------------------


class JaxProfilerSession(ContextStepMarkers):
    """``jax.profiler`` set up the traceview way; one xplane.pb per session."""

    framework = FRAMEWORK
    trace_format = TRACE_FORMAT

    def __init__(self, folder: Path, device: str = "cpu", python_events: bool = False) -> None:
        super().__init__(lambda step: jax.profiler.StepTraceAnnotation(STEP_MARKER, step_num=step))
        self.folder = Path(folder)
        self.device = device
        self.python_events = python_events
        self._runs = ProfileRuns(self.folder, "JAX")

    def _options(self) -> Any:
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 1 if self.python_events else 0
        options.enable_hlo_proto = False
        return options

    def start(self) -> None:
        self._runs.snapshot()
        try:
            jax.profiler.start_trace(str(self.folder), profiler_options=self._options())
        except RuntimeError as err:
            raise RuntimeError(f"could not start the JAX profiler ({err}); is another trace running?") from err

    def stop(self) -> Path:
        self.close_open_marker()
        self._runs.wait_for_fresh_run()
        jax.profiler.stop_trace()
        trace = self._runs.new_trace()
        for copy in trace.parent.glob(f"*{VIEWER_COPY_SUFFIX}"):
            copy.unlink()
        return trace

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "jax.profiler.start_trace/stop_trace",
            "options": f"python_tracer_level {1 if self.python_events else 0}, enable_hlo_proto False",
            "step_marker": f"StepTraceAnnotation('{STEP_MARKER}', step_num=N) on the host's python line",
            "step_marker_offset": 0,
            "logdir_layout": "plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb",
            "removed": f"<host>{VIEWER_COPY_SUFFIX} (JAX's trace-viewer conversion of the same events)",
        }


def python_events_default(mode: str) -> bool:
    """The Python tracer records every Python call JAX's tracing makes in the cold step; off by default."""
    return False


def profiler_session(
    folder: Path, device: str, python_events: bool = False, memory: bool = False
) -> JaxProfilerSession:
    # memory is accepted for symmetry with torch: JAX's profiler has no allocation events on CPU.
    return JaxProfilerSession(folder, device, python_events=python_events)
