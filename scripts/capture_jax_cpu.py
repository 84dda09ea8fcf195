"""Capture a small JAX CPU trace of a 2-layer MLP step (jax.jit, StepTraceAnnotation) — the fixture
in tests/data/jax_cpu_mlp2 was written by:

    pip install jax && python scripts/capture_jax_cpu.py tests/data/jax_cpu_mlp2

Python tracer and HLO protos off (ProfileOptions) to keep it small; JAX also writes
<host>.trace.json.gz beside the .xplane.pb, which traceview skips in favour of the XPlane.
A second argument adds ~pure-Python work after each step's result is ready.
"""
import jax, jax.numpy as jnp, sys
from jax.profiler import ProfileOptions
key = jax.random.PRNGKey(0)
X = jax.random.normal(key, (1000, 10)); Y = jax.random.normal(key, (1000, 1))
params = {"w1": jax.random.normal(key, (10, 50)) * 0.1, "b1": jnp.zeros(50), "w2": jax.random.normal(key, (50, 1)) * 0.1, "b2": jnp.zeros(1)}
def loss(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)
@jax.jit
def step(p, x, y):
    l, g = jax.value_and_grad(loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 0.01 * b, p, g), l
user_python = len(sys.argv) > 2
opts = ProfileOptions(); opts.python_tracer_level = 0; opts.enable_hlo_proto = False
jax.profiler.start_trace(sys.argv[1], profiler_options=opts)
for i in range(6):
    with jax.profiler.StepTraceAnnotation("train", step_num=i):
        params, l = step(params, X, Y)
        l.block_until_ready()
        if user_python:
            s = 0
            for j in range(300000): s += j * j % 7
jax.profiler.stop_trace()
