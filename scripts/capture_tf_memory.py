"""Capture a small TensorFlow CPU trace with allocator samples — the fixture in tests/data/tf_cpu_memory
was written by:

    python scripts/capture_tf_memory.py tests/data/tf_cpu_memory

A 2-layer MLP (Linear 10→50, ReLU, Linear 50→1, MSE, SGD, 1000 rows) trained in a ``tf.function``
for 6 steps through ``traceview.capture(memory=True)``. TensorFlow's default CPU allocator records
no allocations; its BFC allocator records each one (``MemoryAllocation`` / ``MemoryDeallocation``),
so ``TF_CPU_ALLOCATOR_USE_BFC`` is set before TensorFlow starts. Known by construction:

- every step, the function broadcasts a scalar into a ``SCRATCH_BYTES`` tensor (graph node
  ``scratch``) and sums it: one ``scratch`` allocation of ``SCRATCH_BYTES`` per step;
- step 3 also fills a ``BIG_BYTES`` tensor eagerly (op ``Fill``): that step's peak stands out.

With ``--xprof-reference FILE`` the script instead converts a copy of the fixture's trace with xprof's
own memory profile (``pip install xprof``; xprof writes cache files next to its input) and writes
the per-allocator summary that tests/test_memory.py compares with traceview's numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

SCRATCH_ELEMENTS = 2**20  # float32: 4 MiB
SCRATCH_BYTES = SCRATCH_ELEMENTS * 4
BIG_ELEMENTS = 4 * 2**20  # float32: 16 MiB
BIG_BYTES = BIG_ELEMENTS * 4
STEPS = 6
BIG_STEP = 3


def capture(folder: str) -> None:
    os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"  # read when TensorFlow creates its CPU device
    import tensorflow as tf

    import traceview

    tf.random.set_seed(0)
    x = tf.random.normal((1000, 10))
    y = tf.random.normal((1000, 1))
    w1 = tf.Variable(tf.random.normal((10, 50), stddev=0.3))
    b1 = tf.Variable(tf.zeros(50))
    w2 = tf.Variable(tf.random.normal((50, 1), stddev=0.3))
    b2 = tf.Variable(tf.zeros(1))
    params = [w1, b1, w2, b2]

    @tf.function
    def step(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(x @ w1 + b1)
            loss = tf.reduce_mean((hidden @ w2 + b2 - y) ** 2)
        for param, grad in zip(params, tape.gradient(loss, params)):
            param.assign_sub(0.01 * grad)
        scratch = tf.broadcast_to(x[0, 0], [SCRATCH_ELEMENTS], name="scratch")
        return loss, tf.reduce_sum(scratch)

    with traceview.capture(folder, "tf", memory=True, overwrite=True,
                           description="mlp2 SGD in a tf.function with allocator samples (BFC CPU allocator); "
                                       "a 4 MiB scratch tensor every step, a 16 MiB eager fill in step 3") as cap:
        for i in range(STEPS):
            with cap.step() as handle:
                loss, _ = step(x, y)
                if i == BIG_STEP:
                    tf.fill([BIG_ELEMENTS], 1.0)  # allocated, then freed as nothing keeps it
                handle.loss = float(loss)


def xprof_reference(folder: str, out: str) -> None:
    """xprof's memory profile of the fixture's trace: per allocator, its peak within the profile."""
    from xprof.convert import raw_to_tool_data

    trace = next(Path(folder).glob("plugins/profile/*/*.xplane.pb"))
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / trace.name
        shutil.copyfile(trace, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "memory_profile", {})
    profile = json.loads(data)
    summary = {
        name: {
            "peak_heap_allocated_bytes": int(p["profileSummary"]["peakStats"]["heapAllocatedBytes"]),
            "peak_stack_reserved_bytes": int(p["profileSummary"]["peakStats"].get("stackReservedBytes", 0)),
            "peak_time_ps": int(p["profileSummary"]["peakStatsTimePs"]),
            "peak_bytes_usage_lifetime": int(p["profileSummary"]["peakBytesUsageLifetime"]),
        }
        for name, p in sorted(profile["memoryProfilePerAllocator"].items())
    }
    reference = {
        "source": f"xprof memory_profile of {trace.relative_to(folder).as_posix()} (scripts/capture_tf_memory.py)",
        "allocators": summary,
    }
    Path(out).write_text(json.dumps(reference, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--xprof-reference":
        xprof_reference(sys.argv[1], sys.argv[3])
    elif len(sys.argv) == 2:
        capture(sys.argv[1])
    else:
        sys.exit("usage: capture_tf_memory.py FOLDER [--xprof-reference FILE]")
