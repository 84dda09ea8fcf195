"""A TensorFlow XPlane of about 1 GB, for the memory and speed of ``traceview diagnose`` at that size.

Usage::

    .venv/bin/python -m benchmarks.large_xplane OUT.xplane.pb [--windows 10] [--steps 4000]
                                                [--workload mlp-adam]

TensorFlow's profiler cannot write a file that large here: it holds every event of a window in
memory until the window ends, about 0.5 KB each (the collector's worker held 9.7 GB after ~13,000
steps of the eager ``mlp-adam`` step, ~1,470 events a step, on its way to the 59 M events of a
1 GB file). So this captures the step ``traceview collect`` runs (``tf_collector.build_program``,
eager) in ``--windows`` profiler windows of ``--steps`` steps, one after another in one process,
the step numbers running on across windows (``Trace('train', step_num=...)``, as the collector
marks its steps), and writes one XSpace holding them all: an XSpace's planes are a repeated field,
so the serialized windows, concatenated, are one XSpace whose host planes are the windows'. Each
window's line timestamps count from its own start (the ``Task Environment`` plane's
``profile_start_time``), so every later window's lines are moved by its start's distance from the
first window's, and only the first window keeps its ``Task Environment`` plane: one clock, one
session start. Every event in it is one TensorFlow recorded; what differs from one long window is
that each window's events sit in a plane of their own.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from traceview.readers.xplane import TASK_ENVIRONMENT, plane_stats


def _session_start(space: Any) -> int:
    """The window's ``profile_start_time`` (epoch ns), read as traceview's XPlane reader reads it."""
    for plane in space.planes:
        if plane.name == TASK_ENVIRONMENT:
            start = plane_stats(plane).get("profile_start_time")
            if isinstance(start, int):
                return start
    raise SystemExit("a window without profile_start_time: cannot put the windows on one clock")


def _on_first_clock(data: bytes, first_start: int | None) -> tuple[bytes, int]:
    """A window's XSpace moved onto the first window's clock (``first_start``: that window's start;
    None for the first window itself, returned as it is), and the start it is on."""
    from traceview.readers.proto.xplane_descriptor import message_classes

    space = message_classes()["XSpace"]()
    space.ParseFromString(data)
    start = _session_start(space)
    if first_start is None:
        return data, start
    for plane in space.planes:
        for line in plane.lines:
            line.timestamp_ns += start - first_start
    kept = [plane for plane in space.planes if plane.name != TASK_ENVIRONMENT]
    del space.planes[:]
    space.planes.extend(kept)
    return space.SerializeToString(), first_start


def capture(out: Path, windows: int, steps: int, workload: str) -> None:
    import tensorflow as tf

    from traceview.collectors import tf_collector, workloads
    from traceview.collectors.harness import StepRecorder

    spec = workloads.get(workload)
    program = tf_collector.build_program(spec, workloads.materialize(spec), "eager", "cpu")
    offset = [0]

    class Marked(StepRecorder):
        """The collector's step marker, numbered across windows."""

        def begin(self, step: int) -> None:
            self._trace = tf.profiler.experimental.Trace("train", step_num=offset[0] + step, _r=1)
            self._trace.__enter__()
            super().begin(step)

        def end(self, step: int, loss: float | None) -> None:
            super().end(step, loss)
            self._trace.__exit__(None, None, None)

    program.run(2, StepRecorder())  # the cold step and a warm-up, outside every window
    parts = []
    with tempfile.TemporaryDirectory(prefix="large-xplane-") as tmp:
        for window in range(windows):
            logdir = Path(tmp) / f"w{window}"
            tf.profiler.experimental.start(str(logdir))
            program.run(steps, Marked())
            tf.profiler.experimental.stop()
            offset[0] += steps
            found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
            if len(found) != 1:
                raise SystemExit(f"window {window}: expected one .xplane.pb under {logdir}, found {len(found)}")
            part = Path(tmp) / f"w{window}.xplane.pb"
            shutil.move(str(found[0]), part)
            shutil.rmtree(logdir)
            parts.append(part)
            print(f"window {window + 1}/{windows}: {part.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
        out.parent.mkdir(parents=True, exist_ok=True)
        first_start = None
        with out.open("wb") as sink:
            for part in parts:
                data, first_start = _on_first_clock(part.read_bytes(), first_start)
                sink.write(data)
    print(f"{out}: {out.stat().st_size / 1e6:.1f} MB, {windows * steps} steps", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the .xplane.pb to write")
    ap.add_argument("--windows", type=int, default=10, help="profiler windows (default 10)")
    ap.add_argument("--steps", type=int, default=4000, help="steps a window (default 4000: ~104 MB of mlp-adam)")
    ap.add_argument("--workload", default="mlp-adam", help="a traceview collect workload (default mlp-adam)")
    args = ap.parse_args()
    capture(args.out, args.windows, args.steps, args.workload)


if __name__ == "__main__":
    main()
