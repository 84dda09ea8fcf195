"""Run one capture in a fresh interpreter: ``python -m traceview.collectors.worker '<json job>'``.

:func:`traceview.collectors.runner.collect` starts one worker per (framework, mode) so that each capture's
cold step is the process's first contact with the framework, as in a user's script, and no
capture inherits caches another capture warmed. The job is the JSON of ``capture_pair``'s
arguments; the result is the manifest the worker writes. Exit status 3 means the mode is
unavailable on this machine (the last stderr line says why), 2 any other traceview error.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m traceview.collectors.worker '<json job>'", file=sys.stderr)
        return 2
    from traceview.collectors.runner import CaptureSettings, ModeUnavailable, capture_pair
    from traceview.collectors.workloads import get
    from traceview.errors import TraceviewError

    job = json.loads(args[0])
    settings = CaptureSettings(
        steps=job.get("steps"), warmup=job.get("warmup"), device=job.get("device", "cpu"), threads=int(job["threads"]),
        unprofiled=bool(job.get("unprofiled", True)),
    )
    try:
        capture_pair(get(job["workload"]), job["framework"], job["mode"], Path(job["folder"]), settings)
    except ModeUnavailable as err:
        print(str(err), file=sys.stderr)
        return 3
    except TraceviewError as err:
        print(str(err), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
