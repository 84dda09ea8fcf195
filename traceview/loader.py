"""read → normalize → find steps → analyse: a trace file to its timeline, its diagnosis, its rank
summary. The one place that reaches both the readers and the analyses; every command starts here."""

from __future__ import annotations

from pathlib import Path

from typing import Any

from traceview.analyzers.diagnosis import diagnose_timeline
from traceview.analyzers.steps import find_steps
from traceview.analyzers.top import TOP_N
from traceview.capture_facts import capture_facts
from traceview.errors import FormatError
from traceview.readers import detect, discover
from traceview.results import AttributionOptions, Diagnosis, RankSummary, Steps
from traceview.schema import Timeline


def load(path: str | Path) -> Timeline:
    """Read one trace file (format detected by content) into a normalized, step-annotated timeline."""
    timeline, _ = load_with_steps(path)
    return timeline


def load_with_steps(path: str | Path) -> tuple[Timeline, Steps]:
    """Read one trace file and find its steps (which also fills the ``step`` column)."""
    path = Path(path)
    reader = detect(path)
    timeline = reader.read(path)
    if not len(timeline.table):
        dropped = ", ".join(f"{reason} {count}" for reason, count in sorted(timeline.meta.dropped.items()))
        raise FormatError(f"{path}: no usable timed events ({timeline.meta.input_events} in the file"
                          + (f"; dropped: {dropped}" if dropped else "") + "); nothing to analyse — check the export")
    facts = capture_facts(path)
    if facts:
        timeline.meta.extra["capture"] = facts
    steps = find_steps(timeline)
    return timeline, steps


def trace_paths(path: str | Path, run: str | None = None) -> list[Path]:
    """The trace files a path names: a file, a TensorBoard logdir, or a folder of captures."""
    return discover(Path(path), run)


def diagnose(path: str | Path, options: AttributionOptions | None = None, top: int | None = TOP_N) -> Diagnosis:
    """Load one trace and run every analysis on it; ``top`` rows in the kernel and op tables
    (``None``: all of them)."""
    timeline, steps = load_with_steps(path)
    return diagnose_timeline(timeline, steps, options, top)


def summarize_trace(path: str | Path, options: Any = None) -> RankSummary:  # noqa: ANN401 - AttributionOptions or None
    """Load one trace, diagnose it and keep only its summary (no event rows): the function to map
    over ranks (a process pool, Dask, Spark)."""
    from traceview.analyzers.ranks import summarize  # (pandas: only where ranks are summarized)

    return summarize(diagnose(path, options))
