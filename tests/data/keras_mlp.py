"""Shared by the Keras capture scripts beside it: the same small classifier and its data, on
whichever backend the script chose (KERAS_BACKEND is set before Keras is imported)."""

from typing import Any

import numpy as np

BATCH = 64


def data(batches: int) -> tuple[np.ndarray, np.ndarray]:
    """``batches`` batches of 256 random features and labels among 10 classes (seeded)."""
    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH * batches, 256)).astype("float32"),
            rng.integers(0, 10, BATCH * batches))


def compiled_mlp() -> Any:
    """A 256-512-512-10 MLP compiled with Adam and a cross-entropy on logits (weights seeded)."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
