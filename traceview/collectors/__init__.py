"""Collectors: paired workloads captured with torch.profiler, the TensorFlow profiler and jax.profiler.

``workloads`` defines each problem once; ``torch_collector``, ``tf_collector``, ``jax_collector``
and ``numpy_baseline`` run it in their framework (one module each, imported only when used);
``runner`` captures (framework, mode) pairs into folders with a ``manifest.json``;
``parity`` checks that the paired runs compute the same losses.
"""
