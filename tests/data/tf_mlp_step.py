"""Shared by the TensorFlow capture scripts beside it: a 256-512-512-10 MLP's SGD step written
with a GradientTape, its weights seeded, wrapped by the script's own tf.function options."""

from collections.abc import Callable
from typing import Any


def sgd_step() -> Callable[[Any, Any], Any]:
    """The step (x, y) -> loss, updating its own weights; not yet a tf.function."""
    import tensorflow as tf

    tf.random.set_seed(0)
    weights = [tf.Variable(tf.random.normal(shape) * 0.05) for shape in ((256, 512), (512, 512), (512, 10))]

    def step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.nn.relu(x @ weights[0]) @ weights[1])
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, hidden @ weights[2]))
        for weight, grad in zip(weights, tape.gradient(loss, weights)):
            weight.assign_sub(0.01 * grad)
        return loss

    return step


def profile_steps(out: str, step: Callable[[Any, Any], Any], steps: int) -> None:
    """Profile ``steps`` calls of ``step`` on one fixed batch of 64 rows into ``out``, each marked
    with ``tf.profiler.experimental.Trace("train", step_num=i, _r=1)`` and ending on its loss's value."""
    import tensorflow as tf

    x, y = tf.random.normal((64, 256)), tf.random.uniform((64,), maxval=10, dtype=tf.int32)
    tf.profiler.experimental.start(out)
    for i in range(steps):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            step(x, y).numpy()
    tf.profiler.experimental.stop()
