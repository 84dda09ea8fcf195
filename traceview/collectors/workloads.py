"""Paired workloads: each training problem defined once, run by every framework from the same start.

A :class:`WorkloadSpec` is the whole definition (layer sizes, loss, optimizer, learning rate,
batch, data shape, default step counts, parity tolerance). :func:`materialize` draws the
initial weights and the data from one ``numpy.random.default_rng(spec.seed)``, so torch,
TensorFlow, JAX and the numpy baseline start from identical numbers; comparing their step times is
then a comparison of frameworks, not of problems.

Parameters are kept in one framework-neutral layout (the "canonical" layout below); each
collector converts them once when loading them into its framework:

============  ===============================  ==========================  ===========================
parameter     canonical (here)                 torch                        Keras / tf.compat.v1
============  ===============================  ==========================  ===========================
dense kernel  (in, out), ``y = x @ W + b``     ``Linear.weight`` (out, in)  ``Dense.kernel`` (in, out)
conv kernel   (kh, kw, in, out) "HWIO"         ``Conv2d.weight`` OIHW       ``Conv2D.kernel`` HWIO
images        (N, H, W, C) channels-last       NCHW (transposed)            NHWC
flatten       H, W, C order (Keras)            C, H, W order: first dense   as is
                                               kernel rows are permuted
lstm kernel   (in, 4H), gates i, f, g, o       ``weight_ih_l0`` (4H, in)    ``LSTM`` kernel (in, 4H)
lstm recur.   (H, 4H)                          ``weight_hh_l0`` (4H, H)     recurrent_kernel (H, 4H)
lstm bias     (4H,)                            ``bias_ih_l0``; ``bias_hh_l0``  bias (4H,)
                                               held at 0 and frozen
embeddings    (vocab, D) and positions (S, D)  ``Embedding.weight`` as is  ``Embedding`` as is
tokens        (N, S) int64 ids                 LongTensor                   int64
============  ===============================  ==========================  ===========================

JAX takes the canonical layout as it is (``x @ W + b``, NHWC/HWIO convolutions, Keras' flatten
order) and is written with ``jax.numpy`` directly, so it needs no conversion table.

LSTM gate order: torch documents ``W_ii|W_if|W_ig|W_io`` (input, forget, cell "g", output);
Keras splits its kernel as ``i, f, c, o`` (``keras/src/layers/rnn/lstm.py``), the same order
under another name for the cell candidate, so no gate reordering is needed. torch keeps two bias
vectors where Keras keeps one; training both would move the effective bias twice as fast under
Adam, so torch's ``bias_hh_l0`` is zero and excluded from training.

Batch norm: torch's ``momentum`` weighs the new batch statistic (default 0.1), Keras' weighs the
old running value (default 0.99): the specs store the torch convention and Keras gets
``1 - momentum``; epsilon is matched explicitly (torch 1e-5, Keras default 1e-3). In training
mode both normalize with the biased batch variance, so training losses agree.

Adam: torch and Keras place epsilon differently (torch adds it to the bias-corrected
``sqrt(v_hat)``, Keras to ``sqrt(v)`` before a bias-corrected step size); with ``eps=1e-8``
(Keras' default is 1e-7, set explicitly) the difference is far below the parity tolerance.
The JAX collector writes Adam by hand the way ``torch.optim.Adam`` computes it. An embedding's
gradient reaches Keras' Adam as sparse slices, one per token occurrence, which it squares one by
one; the Keras collector sums them first (``tf_collector.SummedGradientAdam``), as torch and
tf.compat.v1 do, or the transformer's losses drift apart by ~1e-3 within two steps.

Transformer: one pre-layer-norm block, written with explicit matmuls and softmax in every
framework (no fused attention module, whose initialisation and maths differ between libraries):
``h = tok[x] + pos``; ``h += proj(softmax(mask(q k^T / sqrt(d_head))) v)`` on ``LN(h)``;
``h += W2 relu(W1 LN(h))``; ``logits = head(LN(h))``; next-token cross-entropy over every
position. Layer-norm epsilon is matched explicitly (torch 1e-5, Keras' default 1e-3); masked
scores are set to -1e9 rather than -inf, so a fully masked row could never turn into NaN.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

FRAMEWORKS: tuple[str, ...] = ("torch", "tf", "jax", "numpy")

# Modes per framework, in display order, with what each one means.
MODES: dict[str, tuple[str, ...]] = {
    "torch": ("eager", "compile", "torchscript"),
    "tf": ("eager", "function", "xla", "fit", "graph-v1"),
    "jax": ("jit",),
    "numpy": ("eager",),
}
# Modes captured only when named (``-m cudagraphs``), never by ``all``: each needs a device that
# the default captures do not have (DEVICE_MODES).
EXPLICIT_MODES: dict[str, tuple[str, ...]] = {
    "torch": ("cudagraphs",),
}
# Modes that exist on one device only: (framework, mode) -> the device.
DEVICE_MODES: dict[tuple[str, str], str] = {
    ("torch", "cudagraphs"): "cuda",
}
MODE_HELP: dict[tuple[str, str], str] = {
    ("torch", "eager"): "plain Python loop, autograd for training",
    ("torch", "compile"): "torch.compile(model) with the inductor backend",
    ("torch", "torchscript"): "torch.jit.script(model) in the same loop",
    ("torch", "cudagraphs"): "torch.compile(model, mode='reduce-overhead'): inductor's code replayed as CUDA graphs "
                             "(--device cuda; named only, not in all)",
    ("tf", "eager"): "plain Python loop calling the Keras model eagerly (GradientTape for training)",
    ("tf", "function"): "the step function wrapped in tf.function",
    ("tf", "xla"): "tf.function(jit_compile=True)",
    ("tf", "fit"): "Keras model.fit(x, y, batch_size, epochs)",
    ("tf", "graph-v1"): "tf.compat.v1 graph and Session.run",
    ("jax", "jit"): "the step function in jax.jit (jax.numpy, jax.grad, optimizer written by hand)",
    ("numpy", "eager"): "hand-written gradient descent in numpy",
}

KINDS = ("mlp", "linreg", "lstm", "cnn", "transformer")


@dataclass(frozen=True)
class WorkloadSpec:
    """One training (or inference) problem, framework-neutral.

    ``layers`` are the dense widths from input to output (for ``cnn`` only the dense head's
    output; for ``transformer`` the model width and the MLP width, with ``n_classes`` the
    vocabulary); ``input_shape`` is one sample's shape in the canonical layout (for
    ``transformer`` the sequence length, the input being token ids).
    """

    name: str
    kind: str  # one of KINDS
    description: str
    input_shape: tuple[int, ...]
    layers: tuple[int, ...]
    loss: str  # "mse" or "cross_entropy" (softmax cross-entropy on logits, integer labels)
    optimizer: str  # "sgd" or "adam"
    lr: float
    n_samples: int
    batch: int
    steps: int  # default steady (measured) steps
    warmup: int = 1  # default warm-up steps after the cold step(s)
    n_classes: int = 0
    batch_norm: bool = False
    dropout: float = 0.0
    hidden: int = 0  # lstm units
    conv_channels: tuple[int, ...] = ()
    kernel_size: int = 3
    train: bool = True  # False: forward pass and loss only (inference)
    adam_eps: float = 1e-8
    adam_betas: tuple[float, float] = (0.9, 0.999)
    bn_eps: float = 1e-5
    bn_momentum: float = 0.1  # torch convention (weight of the new batch statistic)
    heads: int = 0  # transformer attention heads
    causal: bool = False  # transformer: each position attends to itself and earlier ones only
    ln_eps: float = 1e-5  # layer norm epsilon (torch's default; Keras gets it explicitly)
    parity_steps: int = 5
    parity_rtol: float = 1e-4
    parity_atol: float = 1e-6
    parity_note: str = "same weights, same data order, deterministic: losses compared as run"
    seed: int = 0
    dtype: str = "float32"
    numpy_baseline: bool = False
    question: str = ""

    @property
    def n_batches(self) -> int:
        return self.n_samples // self.batch

    @property
    def token_input(self) -> bool:
        """Inputs are integer token ids (int64), not float32 features."""
        return self.kind == "transformer"

    def parity_variant(self) -> WorkloadSpec:
        """The spec the loss-parity run uses: randomness that cannot match across frameworks off.

        Dropout masks come from each framework's own generator, so the parity run uses p=0;
        batch norm in training mode is deterministic and stays on.
        """
        if self.dropout:
            return replace(self, dropout=0.0)
        return self

    @property
    def parity_same_as_run(self) -> bool:
        return self.parity_variant() == self

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["input_shape"] = list(self.input_shape)
        data["layers"] = list(self.layers)
        data["conv_channels"] = list(self.conv_channels)
        data["adam_betas"] = list(self.adam_betas)
        return data


WORKLOADS: dict[str, WorkloadSpec] = {
    spec.name: spec
    for spec in (
        WorkloadSpec(
            name="mlp2",
            kind="mlp",
            description="Linear(10->50)-ReLU-Linear(50->1), MSE, SGD lr 0.01, full batch of 1000",
            input_shape=(10,),
            layers=(10, 50, 1),
            loss="mse",
            optimizer="sgd",
            lr=0.01,
            n_samples=1000,
            batch=1000,
            steps=10,
            question="why is my tiny MLP slower in TensorFlow than in PyTorch?",
        ),
        WorkloadSpec(
            name="mlp-adam",
            kind="mlp",
            description="100->128 ReLU->10, softmax cross-entropy, Adam 1e-3, 1000x100 in batches of 100",
            input_shape=(100,),
            layers=(100, 128, 10),
            n_classes=10,
            loss="cross_entropy",
            optimizer="adam",
            lr=1e-3,
            n_samples=1000,
            batch=100,
            steps=10,
            question="is the optimizer step a real share of a small model's step time?",
        ),
        WorkloadSpec(
            name="mlp-bn",
            kind="mlp",
            description="100->256 BN ReLU Dropout(0.5)->128 BN ReLU Dropout(0.5)->10, Adam 1e-3, cross-entropy",
            input_shape=(100,),
            layers=(100, 256, 128, 10),
            n_classes=10,
            batch_norm=True,
            dropout=0.5,
            loss="cross_entropy",
            optimizer="adam",
            lr=1e-3,
            n_samples=1000,
            batch=100,
            steps=10,
            parity_note=(
                "parity run with dropout p=0 (masks come from each framework's own generator); batch norm "
                "in training mode on both sides with eps 1e-5 and momentum matched (torch 0.1 = Keras 0.9); "
                "the profiled and timed runs use real dropout p=0.5"
            ),
            question="what do batch norm and dropout add to a step?",
        ),
        WorkloadSpec(
            name="linreg-gd",
            kind="linreg",
            description="linear regression 3x2 by plain gradient descent (SGD lr 0.01, full batch), 1000 iterations",
            input_shape=(2,),
            layers=(2, 1),
            loss="mse",
            optimizer="sgd",
            lr=0.01,
            n_samples=3,
            batch=3,
            steps=1000,
            numpy_baseline=True,
            question="why is TensorFlow gradient descent slower than numpy?",
        ),
        WorkloadSpec(
            name="linreg-gd-large",
            kind="linreg",
            description="linear regression 10000x100 by plain gradient descent (SGD lr 0.01, full batch)",
            input_shape=(100,),
            layers=(100, 1),
            loss="mse",
            optimizer="sgd",
            lr=0.01,
            n_samples=10000,
            batch=10000,
            steps=100,
            numpy_baseline=True,
            question="does the framework overhead still matter once the matrices are large?",
        ),
        WorkloadSpec(
            name="lstm",
            kind="lstm",
            description="LSTM(1->32) on sine windows of 20, last state -> Linear(32->1), MSE, Adam 1e-3, batch 64",
            input_shape=(20, 1),
            layers=(32, 1),
            hidden=32,
            loss="mse",
            optimizer="adam",
            lr=1e-3,
            n_samples=1024,
            batch=64,
            steps=10,
            question="how much of an LSTM step is per-timestep op overhead?",
        ),
        WorkloadSpec(
            name="cnn",
            kind="cnn",
            description=(
                "Conv(1->8,3)-ReLU-MaxPool2-Conv(8->16,3)-ReLU-MaxPool2-Dense(400->10) on 28x28x1, Adam, batch 32"
            ),
            input_shape=(28, 28, 1),
            layers=(400, 10),
            conv_channels=(8, 16),
            n_classes=10,
            loss="cross_entropy",
            optimizer="adam",
            lr=1e-3,
            n_samples=256,
            batch=32,
            steps=10,
            question="where does a small conv net's training step go on CPU?",
        ),
        WorkloadSpec(
            name="cnn-infer",
            kind="cnn",
            description="the cnn workload's network, forward pass and loss only (inference), batch 32",
            input_shape=(28, 28, 1),
            layers=(400, 10),
            conv_channels=(8, 16),
            n_classes=10,
            loss="cross_entropy",
            optimizer="adam",
            lr=1e-3,
            n_samples=256,
            batch=32,
            steps=10,
            train=False,
            question="what does a framework cost per inference call on a small conv net?",
        ),
        WorkloadSpec(
            name="transformer",
            kind="transformer",
            description=(
                "token embedding (64 ids) + positions, one pre-LN causal self-attention block (2 heads, width 32), "
                "ReLU MLP (64), next-token cross-entropy, Adam 1e-3, batch 16 x 32 tokens"
            ),
            input_shape=(32,),
            layers=(32, 64),
            n_classes=64,
            heads=2,
            causal=True,
            loss="cross_entropy",
            optimizer="adam",
            lr=1e-3,
            n_samples=256,
            batch=16,
            steps=10,
            question="how much of a small transformer step is matmul, and how much softmax, layer-norm and dispatch glue?",
        ),
    )
}


def get(name: str) -> WorkloadSpec:
    """Look a workload up by name; ``KeyError`` lists the known names."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


def not_applicable(spec: WorkloadSpec, framework: str, mode: str) -> str | None:
    """Why (framework, mode) does not exist for ``spec``, or ``None`` when it does.

    Only reasons that follow from the workload are given here; a missing library or compiler
    is found when the capture starts (see ``traceview.collectors.runner.availability``).
    """
    if framework not in MODES:
        return f"unknown framework {framework!r}"
    if mode not in MODES[framework] + EXPLICIT_MODES.get(framework, ()):
        return f"{framework} has no mode {mode!r} (modes: {', '.join(MODES[framework])})"
    if framework == "numpy" and not spec.numpy_baseline:
        names = ", ".join(s.name for s in WORKLOADS.values() if s.numpy_baseline)
        return f"the numpy baseline exists only for {names}"
    if framework == "tf" and mode == "fit" and not spec.train:
        return "Keras fit trains; this workload is inference only"
    return None


def pairs(spec: WorkloadSpec) -> list[tuple[str, str]]:
    """Every (framework, mode) that exists for ``spec``, in display order."""
    return [(fw, mode) for fw in FRAMEWORKS for mode in MODES[fw] if not_applicable(spec, fw, mode) is None]


def cold_step_count(framework: str, mode: str) -> int:
    """Steps at the start of a run that carry one-time work (tracing, compilation, graph setup).

    TorchScript's profiling executor records shapes on the first call and builds the optimized
    graph on the second (``torch._C._jit_get_num_profiled_runs()`` is 1), so two steps are cold.
    """
    if framework == "torch" and mode == "torchscript":
        return 2
    if framework == "torch" and mode == "cudagraphs":  # compile and warm up, then record the graphs
        return 2
    return 1


# ---------------------------------------------------------------------------------------------
# Initial weights and data
# ---------------------------------------------------------------------------------------------


@dataclass
class WorkloadState:
    """Initial parameters (canonical layout) and the full data set, all float32 except labels and tokens."""

    spec: WorkloadSpec
    params: dict[str, np.ndarray]
    x: np.ndarray  # float32 features, or (n, S) int64 token ids (spec.token_input)
    y: np.ndarray  # (n, 1) float32 for mse, (n,) int64 labels for cross-entropy, (n, S) next tokens

    def batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """The batch step ``step`` trains on: batches in order, wrapping around, never shuffled."""
        b = self.spec.batch
        start = (step % self.spec.n_batches) * b
        return self.x[start : start + b], self.y[start : start + b]

    def batches(self) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.batch(i) for i in range(self.spec.n_batches)]


def _uniform(rng: np.random.Generator, bound: float, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def _cnn_dims(spec: WorkloadSpec) -> list[tuple[int, int, int]]:
    """(height, width, channels) after each conv+pool block, for a 'valid' conv and 2x2 pooling."""
    h, w, _ = spec.input_shape
    dims = []
    for c in spec.conv_channels:
        h, w = (h - spec.kernel_size + 1) // 2, (w - spec.kernel_size + 1) // 2
        dims.append((h, w, c))
    return dims


def cnn_flat_shape(spec: WorkloadSpec) -> tuple[int, int, int]:
    """(H, W, C) of the feature map the dense head flattens."""
    return _cnn_dims(spec)[-1]


# Transformer parameters. Dense layers are drawn uniform in +-1/sqrt(fan_in) like torch's nn.Linear; the token table is
# N(0, 1) like torch's nn.Embedding; the positional table has no torch module and gets N(0, 0.02)
# as in GPT-2; layer norms start at gamma 1, beta 0.
TRANSFORMER_DENSE: tuple[tuple[str, str, str], ...] = (
    # (name, fan_in, fan_out) with "d" the model width, "f" the MLP width, "v" the vocabulary
    ("attn/query", "d", "d"),
    ("attn/key", "d", "d"),
    ("attn/value", "d", "d"),
    ("attn/output", "d", "d"),
    ("mlp/dense0", "d", "f"),
    ("mlp/dense1", "f", "d"),
    ("head", "d", "v"),
)
TRANSFORMER_NORMS: tuple[str, ...] = ("ln0", "ln1", "ln_f")  # before attention, before the MLP, final


def transformer_dims(spec: WorkloadSpec) -> dict[str, int]:
    """The transformer's sizes by letter: vocabulary, sequence, model width, MLP width, head width."""
    d, f = spec.layers
    if d % spec.heads:
        raise ValueError(f"{spec.name}: width {d} does not split into {spec.heads} heads")
    return {"v": spec.n_classes, "s": spec.input_shape[0], "d": d, "f": f, "h": spec.heads, "dh": d // spec.heads}


MASKED_SCORE = -1e9  # what a masked attention score becomes before the softmax, in every framework


def attention_mask(spec: WorkloadSpec) -> np.ndarray:
    """(seq, seq) booleans: True where a query position may attend (the lower triangle when causal)."""
    seq = spec.input_shape[0]
    allowed = np.ones((seq, seq), bool)
    return np.tril(allowed) if spec.causal else allowed


def _transformer_params(spec: WorkloadSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    dims = transformer_dims(spec)
    params = {
        "embed/tokens": rng.standard_normal((dims["v"], dims["d"])).astype(np.float32),
        "embed/positions": (0.02 * rng.standard_normal((dims["s"], dims["d"]))).astype(np.float32),
    }
    for name, fan_in, fan_out in TRANSFORMER_DENSE:
        bound = 1.0 / math.sqrt(dims[fan_in])
        params[f"{name}/kernel"] = _uniform(rng, bound, (dims[fan_in], dims[fan_out]))
        params[f"{name}/bias"] = _uniform(rng, bound, (dims[fan_out],))
    for norm in TRANSFORMER_NORMS:
        params[f"{norm}/gamma"] = np.ones(dims["d"], np.float32)
        params[f"{norm}/beta"] = np.zeros(dims["d"], np.float32)
    return params


def _token_sequences(spec: WorkloadSpec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sequences from a random Markov teacher (the next id is a fixed permutation of this one 90 %
    of the time, uniform otherwise): learnable, with inputs and next-token targets as int64."""
    vocab, seq, n = spec.n_classes, spec.input_shape[0], spec.n_samples
    successor = rng.permutation(vocab)
    tokens = np.empty((n, seq + 1), np.int64)
    tokens[:, 0] = rng.integers(0, vocab, n)
    follow = rng.random((n, seq)) < 0.9
    noise = rng.integers(0, vocab, (n, seq))
    for t in range(seq):
        tokens[:, t + 1] = np.where(follow[:, t], successor[tokens[:, t]], noise[:, t])
    return tokens[:, :-1].copy(), tokens[:, 1:].copy()


def materialize(spec: WorkloadSpec) -> WorkloadState:
    """Draw initial weights, then data, from ``default_rng(spec.seed)`` (always in that order).

    Weight bounds follow torch's default init (uniform in +-1/sqrt(fan_in)) so both frameworks
    start where a torch user would; the data are synthetic but learnable (a random teacher).
    """
    rng = np.random.default_rng(spec.seed)
    params: dict[str, np.ndarray] = {}
    if spec.kind in ("mlp", "linreg"):
        for i, (fan_in, fan_out) in enumerate(zip(spec.layers[:-1], spec.layers[1:])):
            bound = 1.0 / math.sqrt(fan_in)
            params[f"dense{i}/kernel"] = _uniform(rng, bound, (fan_in, fan_out))
            is_hidden = i < len(spec.layers) - 2
            if spec.batch_norm and is_hidden:
                params[f"bn{i}/gamma"] = np.ones(fan_out, np.float32)
                params[f"bn{i}/beta"] = np.zeros(fan_out, np.float32)
            else:
                params[f"dense{i}/bias"] = _uniform(rng, bound, (fan_out,))
    elif spec.kind == "lstm":
        features = spec.input_shape[-1]
        units = spec.hidden
        bound = 1.0 / math.sqrt(units)
        params["lstm/kernel"] = _uniform(rng, bound, (features, 4 * units))
        params["lstm/recurrent_kernel"] = _uniform(rng, bound, (units, 4 * units))
        params["lstm/bias"] = _uniform(rng, bound, (4 * units,))
        params["dense0/kernel"] = _uniform(rng, bound, (units, spec.layers[-1]))
        params["dense0/bias"] = _uniform(rng, bound, (spec.layers[-1],))
    elif spec.kind == "cnn":
        c_in = spec.input_shape[-1]
        k = spec.kernel_size
        for i, c_out in enumerate(spec.conv_channels):
            bound = 1.0 / math.sqrt(c_in * k * k)
            params[f"conv{i}/kernel"] = _uniform(rng, bound, (k, k, c_in, c_out))
            params[f"conv{i}/bias"] = _uniform(rng, bound, (c_out,))
            c_in = c_out
        h, w, c = cnn_flat_shape(spec)
        flat = h * w * c
        if flat != spec.layers[0]:
            raise ValueError(f"{spec.name}: conv stack flattens to {flat}, spec says {spec.layers[0]}")
        bound = 1.0 / math.sqrt(flat)
        params["dense0/kernel"] = _uniform(rng, bound, (flat, spec.layers[-1]))
        params["dense0/bias"] = _uniform(rng, bound, (spec.layers[-1],))
    elif spec.kind == "transformer":
        params = _transformer_params(spec, rng)
    else:
        raise ValueError(f"unknown workload kind {spec.kind!r}")

    n = spec.n_samples
    if spec.kind == "transformer":
        x, y = _token_sequences(spec, rng)
    elif spec.kind == "lstm":
        seq, features = spec.input_shape
        phase = rng.uniform(0, 2 * math.pi)
        t = np.arange(n + seq, dtype=np.float64) * 0.1 + phase
        series = (np.sin(t) + 0.1 * rng.standard_normal(t.shape)).astype(np.float32)
        idx = np.arange(seq)[None, :] + np.arange(n)[:, None]
        x = series[idx][..., None].repeat(features, axis=-1).astype(np.float32)
        y = series[np.arange(n) + seq][:, None].astype(np.float32)
    else:
        x = rng.standard_normal((n, *spec.input_shape)).astype(np.float32)
        flat_x = x.reshape(n, -1)
        if spec.loss == "mse":
            teacher = rng.standard_normal((flat_x.shape[1], spec.layers[-1])).astype(np.float32)
            noise = 0.1 * rng.standard_normal((n, spec.layers[-1]))
            y = (flat_x @ teacher + 1.0 + noise).astype(np.float32)
        else:
            teacher = rng.standard_normal((flat_x.shape[1], spec.n_classes)).astype(np.float32)
            y = np.argmax(flat_x @ teacher, axis=1).astype(np.int64)
    if n % spec.batch:
        raise ValueError(f"{spec.name}: {n} samples do not split into batches of {spec.batch}")
    return WorkloadState(spec=spec, params=params, x=x, y=y)
