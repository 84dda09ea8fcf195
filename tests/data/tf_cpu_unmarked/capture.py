"""How the TensorFlow profiles beside this file were captured (tensorflow-cpu 2.21, Keras 3):
tf.profiler runs a user would write without traceview's collectors, with no step markers.

- ``fit/``: two epochs of Keras ``model.fit`` (8 batches each) under
  ``tf.profiler.experimental.start`` / ``stop``: Keras 3 records each step as a call of its
  ``multi_step_on_iterator`` function, next to many eager ops of its own.
- ``loop/``: ten calls of a custom ``@tf.function`` train step.
- ``fit_callback/``: one epoch of the same ``fit`` with a callback whose ``on_train_batch_end``
  runs a pure-Python loop (60,000 iterations, a few ms) after each step call: work of the step
  that the profiler records nothing of.
- ``fit_validation/``: two epochs of the same ``fit`` with ``validation_data`` (4 batches): at each
  epoch's end Keras calls ``multi_step_on_iterator`` again, running its evaluation function.

    python tests/data/tf_cpu_unmarked/capture.py tests/data/tf_cpu_unmarked
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main(out: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.random((256, 32), dtype=np.float32)
    y = rng.integers(0, 4, 256)
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    tf.profiler.experimental.start(str(out / "fit"))
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    tf.profiler.experimental.stop()
    time.sleep(1.1)  # (profile runs are named to the second)

    optimizer = keras.optimizers.SGD(0.01)

    @tf.function
    def train_step(xb: tf.Tensor, yb: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(yb, model(xb), from_logits=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    train_step(x[:32], y[:32])
    tf.profiler.experimental.start(str(out / "loop"))
    for i in range(10):
        train_step(x[i * 16:i * 16 + 32], y[i * 16:i * 16 + 32])
    tf.profiler.experimental.stop()
    time.sleep(1.1)

    tf.profiler.experimental.start(str(out / "fit_callback"))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[_BusyCallback()])
    tf.profiler.experimental.stop()
    time.sleep(1.1)

    tf.profiler.experimental.start(str(out / "fit_validation"))
    model.fit(x, y, batch_size=32, epochs=2, verbose=0, validation_data=(x[:128], y[:128]))
    tf.profiler.experimental.stop()


class _BusyCallback(keras.callbacks.Callback):
    def on_train_batch_end(self, batch: int, logs: object = None) -> None:
        total = 0
        for i in range(60_000):
            total += i


if __name__ == "__main__":
    main(Path(sys.argv[1]))
