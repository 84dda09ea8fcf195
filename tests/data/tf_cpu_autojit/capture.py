"""How the TensorFlow profile beside this file was captured (tensorflow-cpu 2.21): a tf.function
SGD step of a 256-512-512-10 MLP under XLA auto-clustering (``TF_XLA_FLAGS=--tf_xla_auto_jit=2
--tf_xla_cpu_global_jit``, set before TensorFlow is imported; no jit_compile on the function),
profiled from the first call, each step marked with ``tf.profiler.experimental.Trace("train",
step_num=i, _r=1)``. The graph's clusters run as ``_XlaCompile`` / ``_XlaRun`` op kernels: the
first call compiles them, every later ``_XlaCompile`` finds its executable in XLA's cache.

    python tests/data/tf_cpu_autojit/capture.py tests/data/tf_cpu_autojit
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_XLA_FLAGS"] = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"

import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tf_mlp_step import profile_steps, sgd_step  # noqa: E402 - tests/data/tf_mlp_step.py


def main(out: Path) -> None:
    profile_steps(str(out), tf.function(sgd_step()), 6)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
