"""TensorFlow side of the paired workloads: Keras models, the five loop styles, the profiler setup.

Imported only when a TensorFlow capture is asked for (``traceview.collectors.runner.load_backend``).

Modes:
- ``eager``: a ``tf.GradientTape`` loop calling the Keras model, no ``tf.function``.
- ``function``: the same step function wrapped in ``tf.function``; step 0 traces it
  (``tf.function-graph_building`` in the trace).
- ``xla``: ``tf.function(jit_compile=True)``; step 0 traces and XLA-compiles.
- ``fit``: Keras ``model.fit(x, y, batch_size=..., epochs=...)`` on the in-memory arrays
  (``jit_compile=False``, which is what Keras picks on a CPU-only machine anyway); a callback
  opens and closes the step marker around every batch, and the first batch traces Keras' train
  function. Keras feeds arrays through its own ``tf.data`` pipeline (batched index gathers).
- ``graph-v1``: the network written with ``tf.nn`` ops in a ``tf.compat.v1`` graph, run with
  ``Session.run`` and ``feed_dict``. Graph construction, session creation and variable
  initialization run inside step 0 under ``Trace('tf.compat.v1-graph_building')`` (TensorFlow
  records no event of its own for them), the first ``Session.run`` then optimizes the graph.

Profiler setup (shared with :func:`traceview.capture`): ``tf.profiler.experimental.start(logdir)``
with default options, one ``Trace('train', step_num=i, _r=1)`` per step (the marker TensorBoard's
step view reads), ``stop()`` writes ``<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb``.
Each capture gets its own logdir, and a stop that would land in an existing run folder waits for
the next second, so captures never overwrite each other.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from traceview.collectors.harness import ContextStepMarkers, ProfileRuns, StepRecorder, run_steps  # noqa: E402
from traceview.collectors.manifest import cpu_name  # noqa: E402
from traceview.collectors.workloads import (  # noqa: E402
    MASKED_SCORE,
    TRANSFORMER_DENSE,
    TRANSFORMER_NORMS,
    WorkloadSpec,
    WorkloadState,
    attention_mask,
    cnn_flat_shape,
    transformer_dims,
)

FRAMEWORK = "tf"
TRACE_FORMAT = "xplane"
TRACE_GLOB = ProfileRuns.GLOB
STEP_MARKER = "train"
V1_GRAPH_BUILD_MARKER = "tf.compat.v1-graph_building"


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------


def configure(threads: int, device: str) -> dict[str, Any]:
    """Pin intra/inter-op thread pools (only possible before TF's runtime starts) and check the device."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        # The runtime is already initialized in this process; the pools keep their sizes.
        pass
    tf_device(device)
    return {
        "tf_intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        "tf_threads_note": "0 means TensorFlow's default (one per core)",
    }


def tf_device(device: str) -> str:
    if device == "cpu":
        return "/CPU:0"
    if device in ("cuda", "gpu"):
        if not tf.config.list_physical_devices("GPU"):
            raise RuntimeError("device 'gpu' asked for, but TensorFlow sees no GPU")
        return "/GPU:0"
    raise RuntimeError(f"unknown device {device!r} (cpu, gpu)")


def device_name(device: str) -> str:
    if device in ("cuda", "gpu"):
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            return str(details.get("device_name", gpus[0].name))
    return cpu_name()


def versions() -> dict[str, str]:
    return {"tensorflow": tf.__version__, "keras": keras.__version__}


def mode_unavailable(mode: str) -> str | None:
    if mode == "graph-v1" and not hasattr(tf.compat.v1, "Session"):
        return f"tensorflow {tf.__version__} has no tf.compat.v1.Session"
    return None


def reset() -> None:
    """Drop Keras' global graph state between runs (layer name counters, cached functions)."""
    keras.backend.clear_session()


def environment(mode: str) -> dict[str, Any]:
    """Process state that changes what the cold step holds (none worth recording here)."""
    return {}


def compile_report(mode: str) -> dict[str, Any]:
    """Facts about compilation gathered after the profiled run (none recorded for this framework)."""
    return {}


def mode_notes(mode: str) -> list[str]:
    if mode == "fit":
        return [
            "model.fit(x, y, batch_size, epochs, shuffle=False), jit_compile=False; one step per batch, "
            "numbered across epochs; per-step losses are recovered from Keras' running epoch mean: "
            "loss_n = (n+1)*mean_n - n*mean_(n-1)"
        ]
    if mode == "graph-v1":
        return [
            f"graph construction, Session creation and variable initialization run inside step 0 under "
            f"Trace('{V1_GRAPH_BUILD_MARKER}'); the network is written with tf.nn ops (batch norm via "
            f"tf.nn.moments/batch_normalization with moving-average updates)"
        ]
    if mode == "xla":
        return ["tf.function(jit_compile=True): step 0 traces and XLA-compiles the training step"]
    return []


# ---------------------------------------------------------------------------------------------
# Keras models
# ---------------------------------------------------------------------------------------------


class PositionEmbedding(keras.layers.Layer):
    """Adds a learned (seq, width) position table to the token embeddings."""

    def __init__(self, seq: int, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seq, self.width = seq, width

    def build(self, input_shape: Any) -> None:
        self.positions = self.add_weight(shape=(self.seq, self.width), initializer="zeros", name="positions")

    def call(self, h: Any) -> Any:
        return h + self.positions


class SelfAttentionBlock(keras.layers.Layer):
    """Pre-LN self-attention and MLP with residuals, attention written out with ``keras.ops``
    (matmul, mask, softmax, matmul) so the maths is the torch, tf.nn and JAX versions' exactly.
    Sublayers are named after the canonical parameters ("/" -> "_")."""

    def __init__(self, spec: WorkloadSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dims = transformer_dims(spec)
        self.dims = dims
        self.allowed = attention_mask(spec)
        L = keras.layers
        self.ln0 = L.LayerNormalization(epsilon=spec.ln_eps, name="ln0")
        self.ln1 = L.LayerNormalization(epsilon=spec.ln_eps, name="ln1")
        self.attn_query = L.Dense(dims["d"], name="attn_query")
        self.attn_key = L.Dense(dims["d"], name="attn_key")
        self.attn_value = L.Dense(dims["d"], name="attn_value")
        self.attn_output = L.Dense(dims["d"], name="attn_output")
        self.mlp_dense0 = L.Dense(dims["f"], activation="relu", name="mlp_dense0")
        self.mlp_dense1 = L.Dense(dims["d"], name="mlp_dense1")

    def build(self, input_shape: Any) -> None:
        for layer in (self.ln0, self.ln1, self.attn_query, self.attn_key, self.attn_value, self.attn_output,
                      self.mlp_dense0):
            layer.build(input_shape)
        self.mlp_dense1.build((*input_shape[:-1], self.dims["f"]))

    def _heads(self, t: Any) -> Any:
        d = self.dims
        return keras.ops.transpose(keras.ops.reshape(t, (-1, d["s"], d["h"], d["dh"])), (0, 2, 1, 3))

    def call(self, h: Any) -> Any:
        ops, d = keras.ops, self.dims
        a = self.ln0(h)
        q, k, v = self._heads(self.attn_query(a)), self._heads(self.attn_key(a)), self._heads(self.attn_value(a))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / float(np.sqrt(d["dh"])))
        weights = ops.softmax(ops.where(self.allowed, scores, MASKED_SCORE), axis=-1)
        o = ops.reshape(ops.transpose(ops.matmul(weights, v), (0, 2, 1, 3)), (-1, d["s"], d["d"]))
        h = h + self.attn_output(o)
        return h + self.mlp_dense1(self.mlp_dense0(self.ln1(h)))


def _keras_transformer(spec: WorkloadSpec, params: dict[str, np.ndarray]) -> tuple[list[Any], list[tuple[Any, list[np.ndarray]]]]:
    L = keras.layers
    dims = transformer_dims(spec)
    tokens = L.Embedding(dims["v"], dims["d"], name="embed_tokens")
    positions = PositionEmbedding(dims["s"], dims["d"], name="embed_positions")
    block = SelfAttentionBlock(spec, name="block")
    ln_f = L.LayerNormalization(epsilon=spec.ln_eps, name="ln_f")
    head = L.Dense(dims["v"], name="head")
    weights: list[tuple[Any, list[np.ndarray]]] = [
        (tokens, [params["embed/tokens"]]),
        (positions, [params["embed/positions"]]),
    ]
    owners = {"ln_f": ln_f, "head": head}
    for name, _, _ in TRANSFORMER_DENSE:
        layer = owners.get(name) or getattr(block, name.replace("/", "_"))
        weights.append((layer, [params[f"{name}/kernel"], params[f"{name}/bias"]]))
    for norm in TRANSFORMER_NORMS:
        layer = owners.get(norm) or getattr(block, norm)
        weights.append((layer, [params[f"{norm}/gamma"], params[f"{norm}/beta"]]))
    return [tokens, positions, block, ln_f, head], weights


def build_keras_model(spec: WorkloadSpec, params: dict[str, np.ndarray]) -> keras.Model:
    """The spec's network as a Keras ``Sequential`` with its canonical parameters loaded."""
    L = keras.layers
    layers: list[Any] = []
    weights: list[tuple[Any, list[np.ndarray]]] = []
    if spec.kind in ("mlp", "linreg"):
        n_dense = len(spec.layers) - 1
        for i, fan_out in enumerate(spec.layers[1:]):
            hidden = i < n_dense - 1
            bn = spec.batch_norm and hidden
            dense = L.Dense(
                fan_out, use_bias=not bn, activation="relu" if hidden and not bn else None, name=f"dense{i}"
            )
            layers.append(dense)
            kernel = params[f"dense{i}/kernel"]
            weights.append((dense, [kernel] if bn else [kernel, params[f"dense{i}/bias"]]))
            if bn:
                norm = L.BatchNormalization(momentum=1.0 - spec.bn_momentum, epsilon=spec.bn_eps, name=f"bn{i}")
                layers += [norm, L.Activation("relu")]
                weights.append(
                    (
                        norm,
                        [
                            params[f"bn{i}/gamma"],
                            params[f"bn{i}/beta"],
                            np.zeros(fan_out, np.float32),
                            np.ones(fan_out, np.float32),
                        ],
                    )
                )
            if hidden and spec.dropout:
                layers.append(L.Dropout(spec.dropout, seed=spec.seed + i))
    elif spec.kind == "lstm":
        lstm = L.LSTM(spec.hidden, name="lstm")
        head = L.Dense(spec.layers[-1], name="dense0")
        layers += [lstm, head]
        weights.append((lstm, [params["lstm/kernel"], params["lstm/recurrent_kernel"], params["lstm/bias"]]))
        weights.append((head, [params["dense0/kernel"], params["dense0/bias"]]))
    elif spec.kind == "cnn":
        for i, c_out in enumerate(spec.conv_channels):
            conv = L.Conv2D(c_out, spec.kernel_size, activation="relu", name=f"conv{i}")
            layers += [conv, L.MaxPooling2D(2)]
            weights.append((conv, [params[f"conv{i}/kernel"], params[f"conv{i}/bias"]]))
        head = L.Dense(spec.layers[-1], name="dense0")
        layers += [L.Flatten(), head]
        weights.append((head, [params["dense0/kernel"], params["dense0/bias"]]))
    elif spec.kind == "transformer":
        layers, weights = _keras_transformer(spec, params)
    else:
        raise ValueError(f"unknown workload kind {spec.kind!r}")
    inputs = keras.Input(shape=spec.input_shape, dtype="int64" if spec.token_input else "float32")
    model = keras.Sequential([inputs, *layers], name=spec.name.replace("-", "_"))
    for layer, values in weights:
        layer.set_weights(values)
    return model


class SummedGradientAdam(keras.optimizers.Adam):
    """Keras' Adam on dense gradients.

    An embedding lookup's gradient is a ``tf.IndexedSlices`` with one slice per occurrence of a
    token; Keras' Adam squares each slice into the second moment separately, so a token seen twice
    in a batch adds ``g1**2 + g2**2`` where torch's Adam (and tf.compat.v1's, which sums duplicate
    indices first) adds ``(g1 + g2)**2``. Summing the slices first gives every framework the same
    maths; dense gradients pass through untouched.
    """

    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        dense = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return super().apply(dense, trainable_variables)


def make_optimizer(spec: WorkloadSpec) -> keras.optimizers.Optimizer:
    if spec.optimizer == "sgd":
        return keras.optimizers.SGD(learning_rate=spec.lr)
    beta_1, beta_2 = spec.adam_betas
    return SummedGradientAdam(learning_rate=spec.lr, beta_1=beta_1, beta_2=beta_2, epsilon=spec.adam_eps)


def make_loss(spec: WorkloadSpec) -> keras.losses.Loss:
    if spec.loss == "mse":
        return keras.losses.MeanSquaredError()
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


# ---------------------------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------------------------


class KerasLoopProgram:
    """``eager`` / ``function`` / ``xla``: a hand-written loop over one step function."""

    def __init__(self, spec: WorkloadSpec, state: WorkloadState, mode: str, device: str = "cpu") -> None:
        self.spec = spec
        self.device = tf_device(device)
        keras.utils.set_random_seed(spec.seed)
        with tf.device(self.device):
            self.model = build_keras_model(spec, state.params)
            self.loss_fn = make_loss(spec)
            self.optimizer = make_optimizer(spec) if spec.train else None
            if self.optimizer is not None:
                # Create the slots now, outside any tf.function, so tracing does not create variables.
                self.optimizer.build(self.model.trainable_variables)
            self.batches = [(tf.constant(x), tf.constant(y)) for x, y in state.batches()]
        if mode == "eager":
            self.step_fn: Any = self._step
        elif mode == "function":
            self.step_fn = tf.function(self._step)
        elif mode == "xla":
            self.step_fn = tf.function(self._step, jit_compile=True)
        else:
            raise ValueError(f"KerasLoopProgram has no mode {mode!r}")

    def _step(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        if self.optimizer is None:
            return self.loss_fn(y, self.model(x, training=False))
        with tf.GradientTape() as tape:
            loss = self.loss_fn(y, self.model(x, training=True))
        variables = self.model.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return loss

    def run(self, steps: int, recorder: StepRecorder) -> None:
        with tf.device(self.device):
            for i in range(steps):
                recorder.begin(i)
                x, y = self.batches[i % len(self.batches)]
                loss = self.step_fn(x, y)
                recorder.end(i, float(loss))


class _StepCallback(keras.callbacks.Callback):
    """Hands each ``fit`` batch to the recorder as one step and recovers that batch's loss.

    Steps are numbered across epochs; after ``steps`` batches it asks Keras to stop, which Keras
    does right after that batch (mid-epoch if need be).
    """

    def __init__(self, recorder: StepRecorder, steps: int) -> None:
        super().__init__()
        self.recorder = recorder
        self.steps = steps
        self._step = 0
        self._prev_mean = 0.0

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.recorder.begin(self._step)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        mean = float((logs or {}).get("loss", float("nan")))
        # Keras reports the running mean over the epoch (reset at each epoch's batch 0); undo it
        # to get this batch's own loss.
        loss = mean if batch == 0 else (batch + 1) * mean - batch * self._prev_mean
        self._prev_mean = mean
        self.recorder.end(self._step, loss)
        self._step += 1
        if self._step >= self.steps:
            self.model.stop_training = True


class FitProgram:
    """``fit``: Keras drives the loop over in-memory arrays, as most Keras code does.

    ``model.fit(x, y, batch_size=..., epochs=..., shuffle=False)``: batches come in data order,
    so step ``i`` trains on the same batch as in the other modes; epochs are as many as the
    steps need (one step per epoch for the full-batch workloads) and the callback stops fit
    after the last step.
    """

    def __init__(self, spec: WorkloadSpec, state: WorkloadState, mode: str = "fit", device: str = "cpu") -> None:
        if not spec.train:
            raise ValueError(f"{spec.name} is inference only; Keras fit does not apply")
        self.spec = spec
        self.device = tf_device(device)
        self.x, self.y = state.x, state.y
        keras.utils.set_random_seed(spec.seed)
        with tf.device(self.device):
            self.model = build_keras_model(spec, state.params)
            self.model.compile(optimizer=make_optimizer(spec), loss=make_loss(spec), jit_compile=False)

    def run(self, steps: int, recorder: StepRecorder) -> None:
        epochs = -(-steps // self.spec.n_batches)
        with tf.device(self.device):
            self.model.fit(
                self.x,
                self.y,
                batch_size=self.spec.batch,
                epochs=epochs,
                shuffle=False,
                callbacks=[_StepCallback(recorder, steps)],
                verbose=0,
            )


def _v1_forward(
    spec: WorkloadSpec, v: dict[str, Any], x: Any, training: bool, updates: list[Any]
) -> Any:
    """The spec's network in ``tf.nn`` ops (graph mode), same math and layouts as the Keras model."""
    if spec.kind in ("mlp", "linreg"):
        h = x
        n_dense = len(spec.layers) - 1
        for i in range(n_dense):
            hidden = i < n_dense - 1
            h = tf.matmul(h, v[f"dense{i}/kernel"])
            if spec.batch_norm and hidden:
                mm, mv = v[f"bn{i}/moving_mean"], v[f"bn{i}/moving_variance"]
                if training:
                    mean, var = tf.nn.moments(h, axes=[0])
                    keep = 1.0 - spec.bn_momentum
                    updates.append(mm.assign(mm * keep + mean * spec.bn_momentum))
                    updates.append(mv.assign(mv * keep + var * spec.bn_momentum))
                else:
                    mean, var = mm, mv
                h = tf.nn.batch_normalization(h, mean, var, v[f"bn{i}/beta"], v[f"bn{i}/gamma"], spec.bn_eps)
            else:
                h = h + v[f"dense{i}/bias"]
            if hidden:
                h = tf.nn.relu(h)
                if training and spec.dropout:
                    h = tf.nn.dropout(h, rate=spec.dropout, seed=spec.seed + i)
        return h
    if spec.kind == "lstm":
        kernel, recurrent, bias = v["lstm/kernel"], v["lstm/recurrent_kernel"], v["lstm/bias"]
        batch = tf.shape(x)[0]
        h = tf.zeros(tf.stack([batch, spec.hidden]))
        c = tf.zeros(tf.stack([batch, spec.hidden]))
        for x_t in tf.unstack(x, axis=1):
            z = tf.matmul(x_t, kernel) + tf.matmul(h, recurrent) + bias
            i_g, f_g, g_g, o_g = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f_g) * c + tf.sigmoid(i_g) * tf.tanh(g_g)
            h = tf.sigmoid(o_g) * tf.tanh(c)
        return tf.matmul(h, v["dense0/kernel"]) + v["dense0/bias"]
    if spec.kind == "cnn":
        h = x
        for i in range(len(spec.conv_channels)):
            h = tf.nn.conv2d(h, v[f"conv{i}/kernel"], strides=1, padding="VALID") + v[f"conv{i}/bias"]
            h = tf.nn.max_pool2d(tf.nn.relu(h), ksize=2, strides=2, padding="VALID")
        fh, fw, fc = cnn_flat_shape(spec)
        h = tf.reshape(h, [-1, fh * fw * fc])
        return tf.matmul(h, v["dense0/kernel"]) + v["dense0/bias"]
    if spec.kind == "transformer":
        return _v1_transformer(spec, v, x)
    raise ValueError(f"unknown workload kind {spec.kind!r}")


def _v1_transformer(spec: WorkloadSpec, v: dict[str, Any], x: Any) -> Any:
    """The transformer in ``tf.nn`` ops: same maths as :class:`SelfAttentionBlock` and torch's."""
    d = transformer_dims(spec)

    def dense(name: str, t: Any) -> Any:
        return tf.tensordot(t, v[f"{name}/kernel"], axes=1) + v[f"{name}/bias"]

    def norm(name: str, t: Any) -> Any:
        mean, var = tf.nn.moments(t, axes=[-1], keepdims=True)
        return tf.nn.batch_normalization(t, mean, var, v[f"{name}/beta"], v[f"{name}/gamma"], spec.ln_eps)

    def heads(t: Any) -> Any:
        return tf.transpose(tf.reshape(t, [-1, d["s"], d["h"], d["dh"]]), [0, 2, 1, 3])

    h = tf.gather(v["embed/tokens"], x) + v["embed/positions"]
    a = norm("ln0", h)
    q, k, val = heads(dense("attn/query", a)), heads(dense("attn/key", a)), heads(dense("attn/value", a))
    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / float(np.sqrt(d["dh"])))
    weights = tf.nn.softmax(tf.where(attention_mask(spec), scores, MASKED_SCORE), axis=-1)
    o = tf.reshape(tf.transpose(tf.matmul(weights, val), [0, 2, 1, 3]), [-1, d["s"], d["d"]])
    h = h + dense("attn/output", o)
    h = h + dense("mlp/dense1", tf.nn.relu(dense("mlp/dense0", norm("ln1", h))))
    return dense("head", norm("ln_f", h))


class GraphV1Program:
    """``graph-v1``: a ``tf.compat.v1`` graph built in step 0, then ``Session.run`` per step."""

    def __init__(self, spec: WorkloadSpec, state: WorkloadState, mode: str = "graph-v1", device: str = "cpu") -> None:
        self.spec = spec
        self.state = state
        self.device = tf_device(device)
        self.batches = state.batches()
        self.session: Any = None
        self.fetches: list[Any] = []
        self.x_ph: Any = None
        self.y_ph: Any = None

    def _build(self) -> None:
        spec = self.spec
        v1 = tf.compat.v1
        graph = tf.Graph()
        with graph.as_default(), tf.device(self.device):
            v1.set_random_seed(spec.seed)
            x_dtype = tf.int64 if spec.token_input else tf.float32
            self.x_ph = v1.placeholder(x_dtype, (None, *spec.input_shape), name="x")
            if spec.loss == "mse":
                self.y_ph = v1.placeholder(tf.float32, (None, spec.layers[-1]), name="y")
            else:
                self.y_ph = v1.placeholder(tf.int64, (None, *self.state.y.shape[1:]), name="y")
            variables = {
                name: tf.Variable(value, name=name.replace("/", "_")) for name, value in self.state.params.items()
            }
            trainable = list(variables.values())
            if spec.batch_norm:
                for i, width in enumerate(spec.layers[1:-1]):
                    variables[f"bn{i}/moving_mean"] = tf.Variable(np.zeros(width, np.float32), trainable=False)
                    variables[f"bn{i}/moving_variance"] = tf.Variable(np.ones(width, np.float32), trainable=False)
            updates: list[Any] = []
            out = _v1_forward(spec, variables, self.x_ph, spec.train, updates)
            if spec.loss == "mse":
                loss = tf.reduce_mean(tf.square(out - self.y_ph))
            else:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=self.y_ph, logits=out))
            if spec.train:
                if spec.optimizer == "sgd":
                    opt = v1.train.GradientDescentOptimizer(spec.lr)
                else:
                    b1, b2 = spec.adam_betas
                    opt = v1.train.AdamOptimizer(spec.lr, beta1=b1, beta2=b2, epsilon=spec.adam_eps)
                train_op = tf.group(opt.minimize(loss, var_list=trainable), *updates)
                self.fetches = [train_op, loss]
            else:
                self.fetches = [loss]
            init = v1.global_variables_initializer()
        config = v1.ConfigProto(
            intra_op_parallelism_threads=tf.config.threading.get_intra_op_parallelism_threads(),
            inter_op_parallelism_threads=tf.config.threading.get_inter_op_parallelism_threads(),
        )
        self.session = v1.Session(graph=graph, config=config)
        self.session.run(init)

    def step(self, i: int) -> float:
        if self.session is None:
            with tf.profiler.experimental.Trace(V1_GRAPH_BUILD_MARKER):
                self._build()
        x, y = self.batches[i % len(self.batches)]
        values = self.session.run(self.fetches, feed_dict={self.x_ph: x, self.y_ph: y})
        return float(values[-1])

    def run(self, steps: int, recorder: StepRecorder) -> None:
        try:
            run_steps(self.step, steps, recorder)
        finally:
            if self.session is not None:
                self.session.close()


def build_program(spec: WorkloadSpec, state: WorkloadState, mode: str, device: str) -> Any:
    if mode in ("eager", "function", "xla"):
        return KerasLoopProgram(spec, state, mode, device)
    if mode == "fit":
        return FitProgram(spec, state, mode, device)
    if mode == "graph-v1":
        return GraphV1Program(spec, state, mode, device)
    raise ValueError(f"tf has no mode {mode!r}")


# ---------------------------------------------------------------------------------------------
# Profiler
# ---------------------------------------------------------------------------------------------


class TFProfilerSession(ContextStepMarkers):
    """``tf.profiler.experimental`` set up the traceview way; one xplane.pb per session."""

    framework = FRAMEWORK
    trace_format = TRACE_FORMAT

    def __init__(self, folder: Path, device: str = "cpu") -> None:
        super().__init__(lambda step: tf.profiler.experimental.Trace(STEP_MARKER, step_num=step, _r=1))
        self.folder = Path(folder)
        self.device = device
        self._runs = ProfileRuns(self.folder, "TensorFlow")
        self._running = False

    def start(self) -> None:
        self._runs.snapshot()
        try:
            tf.profiler.experimental.start(str(self.folder))
        except tf.errors.AlreadyExistsError as err:
            raise RuntimeError(
                "another TensorFlow profiler session is running in this process; stop it first"
            ) from err
        self._running = True

    def stop(self) -> Path:
        self.close_open_marker()
        self._runs.wait_for_fresh_run()
        tf.profiler.experimental.stop()
        self._running = False
        return self._runs.new_trace()

    def describe(self) -> dict[str, Any]:
        return {
            "profiler": "tf.profiler.experimental.start/stop",
            "options": "defaults (host_tracer_level 2; python tracer off)",
            "step_marker": f"Trace('{STEP_MARKER}', step_num=N, _r=1) on the python line of /host:CPU",
            "step_marker_offset": 0,
            "logdir_layout": "plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb",
        }


def python_events_default(mode: str) -> bool:
    """TensorFlow 2.21 records no Python events on any API path (benchmarks/truth/README.md)."""
    return False


def profiler_session(
    folder: Path, device: str, python_events: bool = False, memory: bool = False
) -> TFProfilerSession:
    # python_events and memory are accepted for symmetry with torch: TF's profiler options ignore the
    # Python tracer level in 2.21, and TF records allocations by itself (GPU allocators; its CPU
    # allocator records none), so there is nothing to switch on.
    return TFProfilerSession(folder, device)
