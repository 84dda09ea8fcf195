"""How the TensorFlow profile beside this file was captured (tensorflow-cpu 2.21): a custom
``@tf.function`` SGD step that prints a (64, 64) weight matrix with ``tf.print`` each step, six steps
under ``tf.profiler.experimental.start`` / ``stop``, each marked with ``tf.profiler.experimental.Trace``.
tf.print runs as two op kernels on the executor's threads: StringFormat (formatting the tensor as
text) and PrintV2 (writing it), while the step's thread waits in the call.

    python tests/data/tf_cpu_print/capture.py tests/data/tf_cpu_print
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402


def main(out: Path) -> None:
    tf.random.set_seed(0)
    w = tf.Variable(tf.random.normal((64, 64)) * 0.05)
    x, y = tf.random.normal((32, 64)), tf.random.normal((32, 64))

    @tf.function
    def step() -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.tanh(x @ w) - y) ** 2)
        w.assign_sub(0.01 * tape.gradient(loss, w))
        tf.print("weights", w, summarize=-1, output_stream=sys.stderr)
        return loss

    for _ in range(3):
        step()
    tf.profiler.experimental.start(str(out))
    for i in range(6):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            step()
    tf.profiler.experimental.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
