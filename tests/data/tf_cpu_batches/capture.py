"""How the TensorFlow profiles beside this file were captured (tensorflow-cpu 2.21, Keras 3): the
same Keras ``model.fit`` (a 128-256-256-10 MLP, Adam, batches of 64) profiled by Keras' own
``TensorBoard(profile_batch=...)`` callback, which marks each profiled step with its batch number.

- ``spe1/``: ``steps_per_execution=1``: one batch per step; the markers count 19, 20, 21 …
- ``spe4/``: ``steps_per_execution=4``: each step runs four batches in one call of the train
  function (a while loop inside it); the markers count 76, 80, 84 …, back to back.
  (profile_batch counts the train function's calls: (20, 27) profiles eight of them either way.)

Unprofiled, on the machine that captured them (Keras callback timing, median between batches):
spe1 1.60-1.77 ms a batch, spe4 3.96-4.08 ms per step of four = ~1.0 ms a batch.

    python tests/data/tf_cpu_batches/capture.py tests/data/tf_cpu_batches
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
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64 * 160, 128), dtype=np.float32)
    y = rng.integers(0, 10, 64 * 160)
    for batches in (1, 4):
        model = keras.Sequential([keras.Input((128,)), keras.layers.Dense(256, activation="relu"),
                                  keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
        model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      steps_per_execution=batches)
        board = keras.callbacks.TensorBoard(log_dir=str(out / f"spe{batches}"), profile_batch=(20, 27))
        model.fit(x, y, batch_size=64, epochs=1, verbose=0, callbacks=[board])
        time.sleep(1.1)  # (profile runs are named to the second)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
