"""What ``traceview run`` puts inside the process it profiles, and the contract with that process.

The profiled interpreter loads this folder by file path under the name ``_traceview_inject``
(from a ``sitecustomize.py`` that ``traceview run`` writes into a temporary folder first on
``PYTHONPATH``), so it works in an interpreter that has no traceview installed. Everything the
child loads is standard library only until the script itself imports a framework; then only that
framework is used.

- :mod:`.protocol` — the settings the parent passes (one environment variable) and the files
  the child writes back (status, claim).
- :mod:`.hook` — installed at start-up: watches imports, owns the step window (which steps are
  profiled and timed), writes the status.
- :mod:`.torch_hooks`, :mod:`.tf_hooks`, :mod:`.jax_hooks` — each framework's step boundary and
  profiler session.
- ``_site.py`` — the template of that ``sitecustomize.py``.
- :mod:`.launcher` — the parent's side (runs the command, reads the status, writes the
  manifest); never loaded in the child.
"""
