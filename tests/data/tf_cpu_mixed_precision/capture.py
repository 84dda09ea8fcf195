"""How the TensorFlow profiles beside this file were captured (tensorflow-cpu 2.21, Keras 3, a
2-core CPU without native half-precision units): the same Keras ``model.fit`` of a small CNN
(three 3x3 convolutions of 16 filters on 16x16x3 images, pooling, a dense layer, batches of 32,
Adam) under two global dtype policies, profiled by Keras' ``TensorBoard(profile_batch=...)``.

- ``float32/``: the default policy.
- ``mixed_float16/``: ``keras.mixed_precision.set_global_policy("mixed_float16")`` (the last
  layer kept float32): the same ops compute in float16, with Cast ops around them.

Unprofiled, on the machine that captured them (median between batches): float32 ~4 ms a batch,
mixed_float16 ~165 ms: half-precision math without hardware support is emulated.

    python tests/data/tf_cpu_mixed_precision/capture.py tests/data/tf_cpu_mixed_precision
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402


def main(out: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32 * 24, 16, 16, 3), dtype=np.float32)
    y = rng.integers(0, 10, 32 * 24)
    for policy in ("float32", "mixed_float16"):
        keras.backend.clear_session()  # (layer names restart: both runs name their ops alike)
        keras.mixed_precision.set_global_policy(policy)
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, dtype="float32"),
        ])
        model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        board = keras.callbacks.TensorBoard(log_dir=str(out / policy), profile_batch=(10, 14))
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[board])
        time.sleep(1.1)  # (profile runs are named to the second)
    for events in out.rglob("events.out.tfevents.*"):  # (TensorBoard summaries: not the profile)
        events.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
