"""How the JAX profile beside this file was captured (jax 0.10 CPU): ``jax.profiler.trace`` with its
defaults, as a user would run it — the Python tracer on, which records each Python frame as
``$<file base name>:<line> <function>`` — around two un-jitted ``jax.grad`` steps.

    python tests/data/jax_cpu_python/capture.py tests/data/jax_cpu_python

then the run's ``vm.trace.json.gz`` (the same events as JSON, which traceview does not read) removed and
``vm.xplane.pb`` gzipped.
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp


def loss(params: list[jax.Array], x: jax.Array, y: jax.Array) -> jax.Array:
    w1, w2 = params
    logits = jnp.tanh(x @ w1) @ w2
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(x.shape[0]), y])


def main(out: Path) -> None:
    key = jax.random.PRNGKey(0)
    params = [jax.random.normal(key, (16, 32)) * 0.1, jax.random.normal(key, (32, 4)) * 0.1]
    x, y = jax.random.normal(key, (8, 16)), jax.random.randint(key, (8,), 0, 4)
    jax.grad(loss)(params, x, y)  # (warm: the capture holds no first-call compilation)
    with jax.profiler.trace(str(out)):
        for _ in range(2):
            grads = jax.grad(loss)(params, x, y)
            params = [p - 0.01 * g for p, g in zip(params, grads)]
        jax.block_until_ready(params)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
