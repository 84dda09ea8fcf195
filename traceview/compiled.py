"""The compiled passes over the timeline's columns (traceview/_passes.c), or None where the
extension was not built: every caller then takes its array passes, which give the same results,
only slower (tests/test_nesting_paths.py checks both).

Callers read :data:`passes` at call time (``compiled.passes``), so that a test can set it to None
in one place to run the array passes.
"""

from __future__ import annotations

from types import ModuleType

passes: ModuleType | None
try:
    from traceview import _passes as passes
except ImportError:  # pragma: no cover - a build without a C compiler
    passes = None
