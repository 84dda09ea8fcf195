"""traceview: explain deep-learning training-step time from profiler traces.

A small facade mirroring the command line::

    import traceview
    timeline = traceview.load("rank-0.pt.trace.json.gz")      # normalized timeline (docs/schema.md)
    diag = traceview.diagnose("logdir/")                      # steps, attribution, top kernels/ops
    cmp = traceview.compare("torch.json.gz", "tf.xplane.pb")  # why one is N× slower
    with traceview.capture("runs/mine", framework="torch") as cap: ...

Heavy modules (and torch / TensorFlow, in the collectors) are imported only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from traceview.analyzers.compare import Comparison
    from traceview.analyzers.diagnosis import Diagnosis
    from traceview.schema import Timeline


def load(path: Any) -> "Timeline":
    """Read one trace file (Kineto JSON or XPlane) into the normalized, step-annotated timeline."""
    from traceview.loader import load as _load

    return _load(path)


def diagnose(path: Any) -> "Diagnosis":
    """Run every analysis on one trace file."""
    from traceview.analyzers.diagnosis import diagnose as _diagnose

    return _diagnose(path)


def compare(baseline: Any, candidate: Any) -> "Comparison":
    """Explain the step-time difference between two traces (``candidate`` vs ``baseline``)."""
    from traceview.analyzers.compare import compare_paths

    return compare_paths(baseline, candidate)


def capture(*args: Any, **kwargs: Any) -> Any:
    """Profile a user's own training loop the way ``traceview collect`` does (see traceview.capture)."""
    from traceview.capture import capture as _capture

    # Importing the submodule traceview.capture rebinds this package attribute to the module;
    # put the function back so `traceview.capture(...)` keeps working on later calls.
    globals()["capture"] = _capture
    return _capture(*args, **kwargs)


__all__ = ["__version__", "capture", "compare", "diagnose", "load"]
