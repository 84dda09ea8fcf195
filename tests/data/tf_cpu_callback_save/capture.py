"""How the TensorFlow profile beside this file was captured (tensorflow-cpu 2.21, Keras 3, 2
cores): Keras ``model.fit`` of a 256-512-512-10 MLP (Adam, batches of 64) with a callback that
writes the model's weights to an HDF5 file after every batch (``save_weights`` in
``on_train_batch_end``); a second callback marks each batch with
``tf.profiler.experimental.Trace("train", step_num=batch, _r=1)``, opened at the batch's start and
closed after the saving callback. The train function (a tf.function) takes ~5 ms of a ~24 ms
step; the rest is the save: eager ReadVariableOp / VarHandleOp ops and the gaps between them in
which h5py writes the file.

Unprofiled, on the capturing machine (median time between batches): 22 ms a batch with the
saving callback, 3.9 ms without it.

    python tests/data/tf_cpu_callback_save/capture.py tests/data/tf_cpu_callback_save
"""

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from keras_mlp import BATCH, compiled_mlp, data  # noqa: E402 - tests/data/keras_mlp.py


class SaveWeights(keras.callbacks.Callback):
    """Writes the weights after every batch (a checkpoint each step)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.model.save_weights(self.path)


class MarkSteps(keras.callbacks.Callback):
    """A tf.profiler step marker from each batch's start to its end (after the callbacks before it)."""

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.marker = tf.profiler.experimental.Trace("train", step_num=batch, _r=1)
        self.marker.__enter__()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.marker.__exit__(None, None, None)


def main(out: Path) -> None:
    tf.config.threading.set_intra_op_parallelism_threads(2)
    x, y = data(20)
    model = compiled_mlp()
    with tempfile.TemporaryDirectory() as scratch:
        save = SaveWeights(str(Path(scratch) / "w.weights.h5"))
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False, callbacks=[save])  # (warm)
        tf.profiler.experimental.start(str(out))
        model.fit(x[:BATCH * 8], y[:BATCH * 8], batch_size=BATCH, epochs=1, verbose=0, shuffle=False,
                  callbacks=[save, MarkSteps()])
        tf.profiler.experimental.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
