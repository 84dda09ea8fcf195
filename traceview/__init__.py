"""traceview: explain deep-learning training-step time from profiler traces.

The library is the command line's own functions (:mod:`traceview.api`; reference in docs/api.md)::

    import traceview
    timeline = traceview.load("rank-0.pt.trace.json.gz")      # normalized timeline (docs/schema.md)
    diag = traceview.diagnose("logdir/")                      # steps, attribution, top kernels/ops, findings
    cmp = traceview.compare("torch.json.gz", "tf.xplane.pb")  # why one is N× slower
    print(traceview.render(cmp, "md"))                        # the report `traceview compare --format md` prints
    what = traceview.whatif("logdir/", without=["input"])    # the steady step replayed without a cause
    traceview.write_parquet("runs/", "parquet/")              # traceview normalize runs/ -o parquet/
    print(traceview.query("parquet/", "SELECT rank, max(duration_ns) FROM steps GROUP BY rank"))
    with traceview.capture("runs/mine", framework="torch") as cap: ...
    with traceview.capture("runs/mine", "tf", schedule=traceview.schedule(wait=1, warmup=1, active=3)) as cap: ...

The result types (``traceview.Diagnosis``, ``Comparison`` …) live in :mod:`traceview.results`.
Heavy modules (pandas, and torch / TensorFlow in the collectors) are imported only when used.
"""

from __future__ import annotations

from typing import Any

from traceview.api import compare, diagnose, export, load, query, render, whatif, write_parquet
from traceview.profile_schedule import schedule

__version__ = "0.1.0"

# Result types, importable from the package without importing pandas until one is asked for.
_RESULT_TYPES = ("Attribution", "BucketDelta", "ColdStart", "Comparison", "Diagnosis", "Export", "Finding",
                 "FolderDiagnosis", "LaunchStats", "LeftOut", "MultiRank", "Quality", "Steps", "WhatIf")


def __getattr__(name: str) -> Any:  # noqa: ANN401 - a result type, or the capture function
    if name in _RESULT_TYPES:
        from traceview import results

        return getattr(results, name)
    if name == "capture":
        # traceview.capture (traceview.collectors.capture: it drives the collectors' profiler
        # sessions) is loaded when first asked for, so that `import traceview` loads no collector;
        # kept as the package attribute from then on.
        from traceview.collectors.capture import capture

        globals()["capture"] = capture
        return capture
    raise AttributeError(f"module 'traceview' has no attribute {name!r}")


__all__ = ["__version__", "capture", "compare", "diagnose", "export", "load", "query", "render", "schedule",
           "whatif", "write_parquet", *_RESULT_TYPES]
