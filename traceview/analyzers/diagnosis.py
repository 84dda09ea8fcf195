"""Everything ``traceview diagnose`` reports about one trace, as plain data.

``diagnose(path)`` runs every analysis once and returns a :class:`Diagnosis`; renderers only
read it. ``Diagnosis.to_dict()`` is the JSON document (keys documented in docs/json.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceview.analyzers.attribution import Attribution, AttributionOptions, attribute, shown_buckets
from traceview.analyzers.communication import CommOverlap, comm_overlap
from traceview.analyzers.device_time import device_time
from traceview.analyzers.launch import LaunchStats, launch_stats
from traceview.analyzers.memory import MemoryUse, memory_use
from traceview.analyzers.modes import execution_mode
from traceview.analyzers.quality import Quality, trace_quality
from traceview.analyzers.steps import Steps
from traceview.analyzers.top import TOP_N, top_kernels, top_ops
from traceview.loader import load_with_steps
from traceview.schema import Timeline

REPORT_VERSION = "1"
# Profiled / unprofiled step time from which the report warns that the profiler distorts the
# attribution (torch.profiler inflates tiny-op steps by up to ~50 %; with the Python tracer on
# Python-heavy steps it is larger).
INFLATION_WARNING = 1.5


@dataclass
class Diagnosis:
    timeline: Timeline
    steps: Steps
    attribution: Attribution
    kernels: pd.DataFrame
    ops: pd.DataFrame
    launch: LaunchStats
    device: pd.DataFrame
    findings: list[Any] = field(default_factory=list)
    communication: CommOverlap | None = None  # None: the trace runs no collective-communication kernel
    quality: Quality = field(default_factory=Quality)  # what makes the numbers less trustworthy
    memory: MemoryUse | None = None  # None: the profiler recorded no allocator samples
    # How the program ran (torch-compile, tensorflow-xla …; analyzers/modes.py). Decided once, from
    # the events: a diagnosis sent back from a worker process carries no event rows.
    mode: str = "unknown"

    @property
    def buckets(self) -> tuple[str, ...]:
        """The buckets the reports show (``communication`` only for traces with collectives)."""
        return shown_buckets(self.communication is not None)

    @property
    def steady_positions(self) -> np.ndarray:
        return self.steps.steady_positions

    @property
    def steady_step_ns(self) -> float:
        """Median duration of the steady-state steps (robust to one slow outlier)."""
        durations = self.steps.table["duration"].to_numpy()[self.steady_positions]
        return float(np.median(durations)) if len(durations) else 0.0

    @property
    def unprofiled_step_ns(self) -> float | None:
        """The capture's steady step time without the profiler (its manifest), when known."""
        value = (self.timeline.meta.extra.get("capture") or {}).get("unprofiled_step_ns")
        return float(value) if value else None

    @property
    def profiler_inflation(self) -> float | None:
        """Profiled / unprofiled steady step time, when the capture measured both."""
        unprofiled = self.unprofiled_step_ns
        return self.steady_step_ns / unprofiled if unprofiled and self.steady_step_ns else None

    def steady_attribution(self) -> dict[str, float]:
        """Mean ns per shown bucket over the steady steps (sums to the mean steady step time: a
        bucket not shown has no time)."""
        rows = self.attribution.per_step.iloc[self.steady_positions]
        return {b: float(rows[b].mean()) if len(rows) else 0.0 for b in self.buckets}

    def steady_details(self) -> dict[str, float]:
        rows = self.attribution.details.iloc[self.steady_positions] if len(self.attribution.details.columns) else None
        if rows is None or not len(rows):
            return {}
        return {c: float(rows[c].mean()) for c in sorted(rows.columns) if rows[c].any()}

    def to_dict(self) -> dict[str, Any]:
        meta = self.timeline.meta
        table = self.steps.table
        per = self.attribution.per_step
        steady = self.steady_attribution()
        mean_steady = sum(steady.values())
        return {
            "report_version": REPORT_VERSION,
            "schema_version": meta.schema_version,
            "trace": {
                "source": meta.source,
                "format": meta.format,
                "framework": meta.framework,
                "mode": self.mode,
                "host_name": meta.host_name,
                "devices": [{"index": d.index, "name": d.name, "vendor": d.vendor} for d in meta.devices],
                "events_in_file": meta.input_events,
                "events_kept": int(sum(meta.kept.values())),
                "kept_by_kind": dict(sorted(meta.kept.items())),
                "dropped_by_reason": dict(sorted(meta.dropped.items())),
                "notes": list(meta.notes),
            },
            "steps": {
                "rule": self.steps.rule,
                "detail": self.steps.rule_detail,
                "count": int(len(table)),
                "cold": [int(n) for n in table.loc[table["cold"], "number"]],
                "steady": int(len(self.steady_positions)),
                "table": [
                    {
                        "number": int(r.number),
                        "name": str(r.name),
                        "start_ns": int(r.start),
                        "duration_ns": int(r.duration),
                        "cold": bool(r.cold),
                        "graph_build_events": int(r.graph_build_events),
                        "buckets_ns": {b: int(per.at[i, b]) for b in self.buckets},
                    }
                    for i, r in enumerate(table.itertuples(index=False))
                ],
            },
            "steady_state": {
                "step_time_ns": self.steady_step_ns,
                "unprofiled_step_time_ns": self.unprofiled_step_ns,
                "profiler_inflation": self.profiler_inflation,
                "mean_step_time_ns": mean_steady,
                "attribution_mode": self.attribution.mode,
                "buckets_ns": steady,
                "buckets_share": {b: (v / mean_steady if mean_steady else 0.0) for b, v in steady.items()},
                "details_ns": self.steady_details(),
                "dispatch_gap_ns": self.attribution.gap_threshold_ns,
                "dispatch_gap_rule": self.attribution.gap_rule,
            },
            "top_kernels": _records(self.kernels),
            "top_ops": _records(self.ops),
            "launch": self.launch.to_dict(),
            "device_time": _records(self.device),
            "findings": [f.to_dict() for f in self.findings],
            "quality": self.quality.to_dict(),
            # Only for traces with collective communication (docs/json.md).
            **({"communication": self.communication.to_dict(self.steady_positions)}
               if self.communication is not None else {}),
            # Only for traces with allocator samples (torch profile_memory=True).
            **({"memory": self.memory.to_dict()} if self.memory is not None else {}),
        }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()})
    return out


def diagnose(path: str | Path, options: AttributionOptions | None = None, top: int | None = TOP_N) -> Diagnosis:
    """Load one trace and run every analysis on it; ``top`` rows in the kernel and op tables
    (``None``: all of them)."""
    timeline, steps = load_with_steps(path)
    return diagnose_timeline(timeline, steps, options, top)


def diagnose_timeline(timeline: Timeline, steps: Steps, options: AttributionOptions | None = None,
                      top: int | None = TOP_N) -> Diagnosis:
    from traceview.analyzers.rules import findings

    result = Diagnosis(
        timeline=timeline,
        steps=steps,
        attribution=attribute(timeline, steps, options),
        kernels=top_kernels(timeline, steps, top),
        ops=top_ops(timeline, steps, top),
        launch=launch_stats(timeline, steps),
        device=device_time(timeline),
        communication=comm_overlap(timeline, steps),
        quality=trace_quality(timeline, steps),  # before the notes below: only the readers' notes
        memory=memory_use(timeline, steps, top),
        mode=execution_mode(timeline),
    )
    result.findings = findings(result)
    inflation = result.profiler_inflation
    if inflation is not None and inflation >= INFLATION_WARNING:
        timeline.meta.notes.append(
            f"the profiler inflates the steady step {inflation:.1f}× (unprofiled {result.unprofiled_step_ns / 1e6:.3g} "
            "ms, from the capture's manifest): per-op host costs (dispatch, Python) are over-represented in the "
            "attribution; compare shares, not absolute times")
    return result
