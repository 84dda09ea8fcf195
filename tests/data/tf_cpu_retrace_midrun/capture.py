"""How the TensorFlow profile beside this file was captured (tensorflow-cpu 2.21): a tf.function
SGD step of a 256-512-512-10 MLP called with batches of 48 rows, then from step 5 on with a new
batch size (56), which makes tf.function trace the step again in the middle of the run
(reduce_retracing=True: one more trace, with a relaxed shape). Profiled from the first call,
each step marked with ``tf.profiler.experimental.Trace("train", step_num=i, _r=1)``: step 0
traces the function (warm-up), step 5 traces it again (a recompile in the steady state).

    python tests/data/tf_cpu_retrace_midrun/capture.py tests/data/tf_cpu_retrace_midrun
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tf_mlp_step import sgd_step  # noqa: E402 - tests/data/tf_mlp_step.py

NEW_SHAPE_AT = 5


def main(out: Path) -> None:
    step = tf.function(reduce_retracing=True)(sgd_step())

    batches = {rows: (tf.random.normal((rows, 256)), tf.random.uniform((rows,), maxval=10, dtype=tf.int32))
               for rows in (48, 56)}
    tf.profiler.experimental.start(str(out))
    for i in range(8):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            step(*batches[48 if i < NEW_SHAPE_AT else 56]).numpy()
    tf.profiler.experimental.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
