"""A small Keras training script with no profiler in it, for ``traceview run``.

    python examples/train_keras.py [--batches 30] [--batch 128]
    traceview run -- python examples/train_keras.py

A 2-layer MLP on random regression data trained with ``model.fit`` for one epoch of ``--batches``
batches, on CPU (TensorFlow backend).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=30, help="train batches (one epoch)")
    parser.add_argument("--batch", type=int, default=128, help="rows per batch")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batches * args.batch, 32)).astype("float32")
    y = (x[:, :1] * 2.0 - x[:, 1:2]).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse")
    history = model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0)
    print(f"trained {args.batches} batches, loss {history.history['loss'][-1]:.4f}", flush=True)


if __name__ == "__main__":
    main()
