"""How the JAX profile beside this file was captured (jax 0.10 CPU): ``jax.profiler.trace`` with its
defaults (the Python tracer on) around four steps of a jitted SGD step that prints its loss from
inside the jitted code with ``jax.debug.print`` — a host callback: the XLA program stops in a
thunk (``debug_print.1``) that calls back into Python to format and print the value.

    python tests/data/jax_cpu_callback/capture.py tests/data/jax_cpu_callback
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gzip_in_place import gzip_in_place  # noqa: E402 - tests/data/gzip_in_place.py


def loss(p: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)


@jax.jit
def train_step(p: dict, x: jax.Array, y: jax.Array) -> dict:
    value, grads = jax.value_and_grad(loss)(p, x, y)
    jax.debug.print("loss {}", value)
    return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads)


def main(out: Path) -> None:
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"w1": jax.random.normal(k1, (64, 64)) * 0.05, "w2": jax.random.normal(k2, (64, 4)) * 0.05}
    x, y = jax.random.normal(k1, (16, 64)), jax.random.normal(k2, (16, 4))
    for _ in range(3):
        params = jax.block_until_ready(train_step(params, x, y))
    with jax.profiler.trace(str(out)):
        for i in range(4):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                params = jax.block_until_ready(train_step(params, x, y))
    gzip_in_place(out, "*.xplane.pb")
    for other in out.rglob("*.trace.json.gz"):  # (JAX's trace-viewer copy of the same events)
        other.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
