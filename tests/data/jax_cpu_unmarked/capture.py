"""How the JAX profile beside this file was captured (jax CPU): a user's own jax.profiler.trace of
a loop without step markers, JAX's Python tracer on (the function's default).

- ``async/``: 20 steps of a jitted SGD step on a batch sliced from a device array each step
  (``X[i % 4]``: JAX's own ``__getitem__`` frame, repeated at the top level beside the jitted
  call), blocking on the result every fifth step only (asynchronous dispatch).

    python tests/data/jax_cpu_unmarked/capture.py tests/data/jax_cpu_unmarked
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py


def loss(p: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((jax.nn.relu(x @ p["w1"]) @ p["w2"] - y) ** 2)


@jax.jit
def one_step(p: dict, x: jax.Array, y: jax.Array) -> dict:
    grads = jax.grad(loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads)


def main(out: Path) -> None:
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (64, 128)) * 0.1, "w2": jax.random.normal(k2, (128, 4)) * 0.1}
    inputs, targets = jax.random.normal(key, (4, 32, 64)), jnp.zeros((4, 32, 4))
    for i in range(3):
        params = jax.block_until_ready(one_step(params, inputs[i], targets[i]))
    folder = out / "async"
    with jax.profiler.trace(str(folder)):
        for i in range(20):
            params = one_step(params, inputs[i % 4], targets[i % 4])
            if i % 5 == 4:
                jax.block_until_ready(params)
    _gzipped(folder)
    _never_blocks(out / "never_blocks")


def _never_blocks(folder: Path) -> None:
    k1, k2 = jax.random.split(jax.random.PRNGKey(1))
    params = {"w1": jax.random.normal(k1, (256, 512)) * 0.05, "w2": jax.random.normal(k2, (512, 10)) * 0.05}
    inputs, targets = jax.random.normal(k1, (8, 64, 256)), jax.random.normal(k2, (8, 64, 10))
    batches = [(inputs[i], targets[i]) for i in range(8)]
    for i in range(3):
        params = jax.block_until_ready(one_step(params, *batches[i]))
    with jax.profiler.trace(str(folder)):
        for i in range(16):
            params = one_step(params, *batches[i % 8])
        jax.block_until_ready(params)
    _gzipped(folder)


def _gzipped(folder: Path) -> None:
    gzip_in_place(folder, "*.xplane.pb")
    for other in folder.rglob("*.trace.json.gz"):  # (JAX's trace-viewer copy of the same events)
        other.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
