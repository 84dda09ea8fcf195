"""How the JAX profile beside this file was captured (jax CPU, 2 cores): a jitted MLP training
step (512-1024-1024-10, batches of 256, SGD) sharded over the batch on two host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``, a NamedSharding over a one-axis Mesh:
parameters replicated, the batch split), each step marked with
``jax.profiler.StepTraceAnnotation("train", step_num=i)`` and blocked on. The gradients are
all-reduced across the two devices: ``all-reduce.N`` thunks (stat hlo_op) on XLA's worker
threads, each waiting in a Rendezvous for the other device.

    python tests/data/jax_cpu_sharded/capture.py tests/data/jax_cpu_sharded
"""

import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402


def loss(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> jax.Array:
    hidden = jax.nn.relu(jax.nn.relu(x @ params["w1"]) @ params["w2"])
    return jnp.mean((hidden @ params["w3"] - y) ** 2)


@jax.jit
def step(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> tuple[dict[str, jax.Array], jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value


def main(out: Path) -> None:
    devices = jax.devices()
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    shapes = {"w1": (512, 1024), "w2": (1024, 1024), "w3": (1024, 10)}
    params = {name: jax.random.normal(key, shape) * 0.02 for key, (name, shape) in zip(keys, shapes.items())}
    rng = np.random.default_rng(0)
    mesh = Mesh(np.array(devices), ("batch",))
    params = jax.device_put(params, NamedSharding(mesh, PartitionSpec()))
    split = NamedSharding(mesh, PartitionSpec("batch"))
    x = jax.device_put(rng.standard_normal((256, 512)).astype(np.float32), split)
    y = jax.device_put(rng.standard_normal((256, 10)).astype(np.float32), split)
    for _ in range(10):  # (compiled and warm before the capture)
        params, value = step(params, x, y)
        value.block_until_ready()
    jax.profiler.start_trace(str(out))
    for i in range(6):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            params, value = step(params, x, y)
            value.block_until_ready()
    jax.profiler.stop_trace()
    for copy in out.rglob("*.trace.json.gz"):  # (JAX's trace-viewer copy of the same events)
        copy.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
