"""How the JAX profile beside this file was captured (jax 0.10 CPU): ``jax.profiler.trace`` with its
defaults (the Python tracer on, which names each frame ``$<file base name>:<line> <function>``)
around ten steps of a jitted SGD step, each marked with ``StepTraceAnnotation`` and ending with
``jax.device_get(loss)`` — the loss fetched to the host, as a loop that logs it does.

    python tests/data/jax_cpu_fetch/capture.py tests/data/jax_cpu_fetch
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
def train_step(p: dict, x: jax.Array, y: jax.Array) -> tuple[dict, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), value


def main(out: Path) -> None:
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"w1": jax.random.normal(k1, (128, 256)) * 0.05, "w2": jax.random.normal(k2, (256, 10)) * 0.05}
    x, y = jax.random.normal(k1, (32, 128)), jax.random.normal(k2, (32, 10))
    for _ in range(3):
        params, value = train_step(params, x, y)
        jax.device_get(value)
    with jax.profiler.trace(str(out)):
        for i in range(10):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                params, value = train_step(params, x, y)
                jax.device_get(value)
    gzip_in_place(out, "*.xplane.pb")
    for other in out.rglob("*.trace.json.gz"):  # (JAX's trace-viewer copy of the same events)
        other.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
