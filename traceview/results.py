"""What an analysis returns: typed, frozen data that analyzers produce and renderers consume.

One module holds every result type, so the layers depend on it and never on each other:
``analyzers`` build these objects, ``renderers`` read them, and neither imports the other's
modules to know a shape. Results hold data: numbers, and the sentences the analyses phrased
(a finding's summary and advice); the words the reports wrap around them are :mod:`traceview.text`'s.

The top-level results are :class:`Diagnosis` (one trace), :class:`FolderDiagnosis` (every trace
of a folder, with the comparisons and multi-rank sections the folder gets) and
:class:`Comparison` (two traces). Each has a one-line ``repr`` and ``to_dict()``: the JSON
document ``--format json`` writes (keys in docs/json.md). The tables of one trace's diagnosis are
:class:`~traceview.table.Table` objects (named numpy columns; ``.to_pandas()`` gives a DataFrame),
so that a diagnosis needs no pandas; those of comparisons and multi-rank summaries are pandas
DataFrames.

The dataclasses are frozen: a field cannot be reassigned (use :func:`dataclasses.replace`). The
tables inside are not copied on access — treat them as read-only. Results holding tables
compare by identity (``eq=False``): two tables have no single truth value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from traceview.text import BUCKET_LABEL, fmt_ns, fmt_pct, fmt_ratio, overlap_note, trace_label
from traceview.schema import OVERLAPS_KEY, Timeline
from traceview.table import Labels, Table

if TYPE_CHECKING:
    import pandas as pd

REPORT_VERSION = "1"

# ---------------------------------------------------------------------------------------------
# Buckets: the causes a step's time is attributed to

# The idle time of pauses: the step's thread stopped where the other steps did not (the machine
# took its core; traceview/analyzers/pauses.py).
PAUSED_DETAIL = "idle.paused"
# A calibration is in doubt where either run's steady steps' upper quartile is more than this many
# times their lower quartile, or the inflation's interval spans more than this factor: a quiet
# machine's steps vary by tens of per cent; a busy spell stretched one run's steps 136 ms – 3.0 s.
CALIBRATION_SPREAD = 2.0
# The step's thread waited for Python's interpreter lock (traceview/analyzers/gil_waits.py).
GIL_WAIT_DETAIL = "idle.gil_wait"
BUCKETS: tuple[str, ...] = (
    "kernel",
    "communication",
    "memcpy",
    "graph_build",
    "sync_wait",
    "launch_overhead",
    "input",
    "host_compute",
    "idle",
)


# The resources a step's time runs on, as the reports name them and as the tables key them
# (analyzers/replay.py): the step's thread (on a device trace, the host), the other host threads,
# the device streams.
LANES: tuple[str, ...] = ("step thread", "other threads", "device")
LANE_KEYS: tuple[str, ...] = ("step_thread", "other_threads", "device")


def shown_buckets(has_communication: bool) -> tuple[str, ...]:
    """The buckets a report shows: ``communication`` only for traces that run collective kernels
    (even when compute hides them all: 0 ns exposed is then the finding); collectives exist only
    in multi-device training, and a row of zeros in every single-device report would say nothing."""
    return BUCKETS if has_communication else tuple(b for b in BUCKETS if b != "communication")


def records(frame: pd.DataFrame | Table) -> list[dict[str, Any]]:
    """A table's rows as JSON-ready dicts (numpy scalars as Python numbers)."""
    if isinstance(frame, Table):
        return frame.records()
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()})
    return out


# ---------------------------------------------------------------------------------------------
# Parts of a diagnosis


# Up to this many steps left out of the steady state, Steps.in_steady compares each event's step
# with each of them; beyond, it looks the steps up in a table.
_COMPARED_STEPS = 4


@dataclass(frozen=True, eq=False)
class Steps:
    """The steps found in a trace: one row per step, ordered by start."""

    table: Table  # columns: number, name, start, end, host_end, duration, cold, graph_build_events
    rule: str  # "markers", "repeated-top-level", "optimizer-updates", "repeated-sequence" or "whole-trace"
    rule_detail: str  # human sentence: which events, which track
    driver_track: str = ""  # the host track that drives the steps (markers / the user's loop)
    # Numbers of the steps left out for holding no event but their marker, before a step that does
    # (not the run at the end: the stretch from the last step() to the profiler's stop).
    empty_inside: tuple[int, ...] = ()
    # Positions of the steps whose window is known to miss part of the step: the last run of a loop
    # found without markers, whose window ends with the run (there is no next run to end it at).
    partial: tuple[int, ...] = ()
    # Batches of the training loop one step holds (analyzers/steps.batches_per_step): Keras
    # steps_per_execution, a loop marking a step per k batches; 1 for one batch per step.
    batches_per_step: int = 1

    @property
    def steady(self) -> Table:
        """The rows of the steady-state steps."""
        return self.table.take(self.steady_positions)

    @property
    def steady_positions(self) -> np.ndarray:
        """Positions of the steady-state steps: neither cold nor partial; every complete step when
        all of those are cold, every step when all are partial."""
        cold = self.table["cold"]
        complete = np.ones(len(cold), dtype=bool)
        complete[list(self.partial)] = False
        for candidates in (~cold & complete, complete):
            idx = np.flatnonzero(candidates)
            if len(idx):
                return idx
        return np.arange(len(cold))

    def in_steady(self, events: Table) -> np.ndarray:
        """Per event: whether it belongs to a steady-state step."""
        step = events["step"]
        n_steps = len(self.table)
        positions = self.steady_positions
        if len(positions) and positions[-1] - positions[0] == len(positions) - 1 and step.dtype.kind == "i":
            # Steady steps one run of positions (the usual: cold steps first): one subtraction and
            # one unsigned comparison, which puts steps before the run (and -1, no step) beyond it.
            shifted = np.asarray(step) - step.dtype.type(positions[0])
            return shifted.view(np.dtype(f"u{shifted.itemsize}")) < len(positions)
        left_out = np.setdiff1d(np.arange(n_steps), positions)
        if len(left_out) <= _COMPARED_STEPS:
            # The usual few cold steps: a comparison per step left out, no gather through a table
            # (a third of the time on 5.9 M events).
            steady = (step >= 0) & (step < n_steps)
            for position in left_out.tolist():
                steady &= step != position
            return steady
        table = np.zeros(n_steps + 1, dtype=bool)  # the last entry: step -1 (no step)
        table[self.steady_positions] = True
        return table[step]

    @property
    def cold(self) -> Table:
        """The rows of the cold steps (tracing, compilation, warm-up)."""
        return self.table.take(self.table["cold"])

    def __repr__(self) -> str:
        cold = int(self.table["cold"].sum()) if len(self.table) else 0
        return f"Steps({len(self.table)} by rule {self.rule!r}, {cold} cold, {len(self.steady_positions)} steady)"


@dataclass(frozen=True)
class AttributionOptions:
    """Knobs of the attribution rules (documented in :mod:`traceview.analyzers.attribution`)."""

    dispatch_gap_ns: int | None = None  # None: calibrated per trace; 0 disables the inferred-gap rule
    # Keep each step's bucket runs (Attribution.segments) for the timelines: the HTML report's
    # picture and the Perfetto export. Off, they are not kept (a 1 GB trace's runs hold ~170 MB).
    keep_segments: bool = True
    # Count the recorded events' entries and exits in each bucket's runs (Attribution.record_boundaries:
    # what a comparison's "unprofiled" column spreads the profiler's cost by) for a capture with
    # unprofiled step times. Off where the diagnosis is only rendered (a lone trace's diagnose
    # command): two searches over every host event that no report of one trace reads.
    count_records: bool = True


@dataclass(frozen=True, eq=False)
class Attribution:
    """Per-step time in each bucket (ns), plus sub-bucket details."""

    per_step: Table  # a row per step position; columns: BUCKETS + "total"
    details: Table  # a row per step position; columns like "memcpy.H2D", "launch_overhead.inferred"
    mode: str  # "device" or "cpu"
    options: AttributionOptions = field(default_factory=AttributionOptions)  # the rules' knobs used
    gap_threshold_ns: int = 0  # the inferred-gap threshold used
    gap_rule: str = ""  # how it was chosen
    # Step positions compared with steps of their shape for pauses (traceview/analyzers/pauses.py).
    compared_steps: tuple[int, ...] = ()
    # The pause taken off the own time of each paused event: (event rows, ns).
    paused_events: tuple[np.ndarray, np.ndarray] = ()  # type: ignore[assignment]
    # Per step position: the launch/dispatch time (ns) inside the outermost compiled calls on the
    # step's thread (tf.function / jitted / torch.compile calls, compiled code); the rest lies
    # outside them (analyzers/attribution._launch_in_calls; launch_bound's advice).
    launch_in_calls: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # The event rows of the autograd engine's node ranges around which it ran hooks, their own time
    # beyond the engine's bookkeeping counted as host_compute.hooks (analyzers/attribution.hooked_nodes).
    hooked_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # The wait for Python's interpreter lock taken off the own time of each event that held one
    # (idle.gil_wait; traceview/analyzers/gil_waits.py): (event rows, ns).
    gil_wait_events: tuple[np.ndarray, np.ndarray] = ()  # type: ignore[assignment]
    # What fixing each cause would buy (analyzers/whatif.py), per step position: the step replayed
    # as recorded ("replayed"), without each cause a finding's fix removes ("without.<cause>"), and
    # without the one that saves most together with each other ("without.<first>+<cause>"), ns.
    whatif: Table = field(default_factory=lambda: Table({}, 0))
    # Per step position, how many entries and exits of host events fall in each bucket's moments
    # (a column per bucket): where the profiler's per-record cost sits (analyzers/unprofiled.py).
    # Counted only for captures that also timed their steps without the profiler; empty otherwise.
    record_boundaries: Table = field(default_factory=lambda: Table({}, 0))
    # Each step's critical path as recorded: ns of each bucket ("path.<bucket>") and each lane
    # ("lane.step_thread", "lane.other_threads", "lane.device") on it, and of the waits the trace
    # cannot tie to the work they wait for ("unsupported").
    critical: Table = field(default_factory=lambda: Table({}, 0))
    # The step windows as consecutive runs of one bucket (the timelines of the HTML report and the
    # Perfetto export): step (position), start, end (ns), bucket (Labels of BUCKETS). Per step the
    # lengths of a bucket's runs sum exactly to per_step.
    segments: Table = field(default_factory=lambda: Table({"step": np.zeros(0, dtype=np.int64),
                                                           "start": np.zeros(0, dtype=np.int64),
                                                           "end": np.zeros(0, dtype=np.int64),
                                                           "bucket": Labels(np.zeros(0, dtype=np.int8), BUCKETS)}, 0))

    @property
    def stalled_events(self) -> tuple[np.ndarray, np.ndarray]:
        """The time taken off events' own time because their thread was stopped — pauses and
        waits for the interpreter lock — (event rows, ns), for tables of ops by name, whose
        times leave it out as the attribution does."""
        parts = [p for p in (self.paused_events, self.gil_wait_events) if len(p) and len(p[0])]
        if len(parts) < 2:
            return parts[0] if parts else self.paused_events
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def __repr__(self) -> str:
        return (f"Attribution({self.mode}, {len(self.per_step)} steps, dispatch-gap threshold "
                f"{fmt_ns(self.gap_threshold_ns)})")


@dataclass(frozen=True)
class LaunchStats:
    """Launch and dispatch statistics: per steady-state step averages and distributions."""

    steady_steps: int  # steps averaged over
    ops_per_step: float  # framework ops dispatched one at a time (normalize.dispatched_ops)
    host_ns_per_op: float  # inclusive host time of the top-level framework calls, per dispatched op
    launches_per_step: float = 0.0  # kernels launched from the host (device traces)
    launch_call_median_ns: float = 0.0  # host time of a launch call
    launch_call_p95_ns: float = 0.0  # its 95th percentile
    launch_delay_median_ns: float = 0.0  # from the end of the launch call to the kernel's start
    launch_delay_p95_ns: float = 0.0  # its 95th percentile
    short_kernels_per_step: float = 0.0  # kernels shorter than their launch call
    short_kernel_share: float = 0.0  # of launched kernels
    launch_call_outliers: int = 0  # launch calls over 50 µs
    launch_delay_outliers: int = 0  # launch delays over 100 µs
    device_ns_per_kernel: float = 0.0  # mean kernel duration
    graph_launches_per_step: float = 0.0  # CUDA/HIP graph launches (categories.GRAPH_LAUNCH)
    kernels_per_graph_launch: float = 0.0  # kernels a graph launch replays, on average
    graph_kernel_share: float = 0.0  # of launched kernels: those a graph launch replays
    short_kernel_share_outside_graphs: float = 0.0  # short_kernel_share of the kernels launched one by one

    def to_dict(self) -> dict[str, float | int]:
        """The ``launch`` object of the JSON report."""
        return asdict(self)


@dataclass(frozen=True, eq=False)
class CommOverlap:
    """Communication kernel time per step, and the part compute kernels overlap."""

    per_step: Table  # a row per step position: comm_ns, overlapped_ns, exposed_ns, collectives, overlap_share
    trace_comm_ns: int  # whole trace (HTA's scope)
    trace_overlapped_ns: int  # the part compute kernels overlap

    @property
    def trace_overlap_share(self) -> float:
        """The share of the whole trace's communication time that compute overlaps."""
        return self.trace_overlapped_ns / self.trace_comm_ns if self.trace_comm_ns else 0.0

    def steady(self, positions: np.ndarray) -> dict[str, float]:
        """Means per step over ``positions`` (the steady steps); the share is of the summed times."""
        rows = self.per_step.take(positions)
        comm = float(rows["comm_ns"].sum())
        n = max(len(rows), 1)
        return {"comm_ns": comm / n, "overlapped_ns": float(rows["overlapped_ns"].sum()) / n,
                "exposed_ns": float(rows["exposed_ns"].sum()) / n, "collectives": float(rows["collectives"].sum()) / n,
                "overlap_share": float(rows["overlapped_ns"].sum()) / comm if comm else 0.0}

    def to_dict(self, positions: np.ndarray) -> dict[str, object]:
        """The ``communication`` object of the JSON report (steady means over ``positions``)."""
        return {
            "steady": self.steady(positions),
            "per_step": [{k: (float(v) if k == "overlap_share" else int(v)) for k, v in row.items()}
                         for row in self.per_step.records()],
            "trace": {"comm_ns": self.trace_comm_ns, "overlapped_ns": self.trace_overlapped_ns,
                      "overlap_share": self.trace_overlap_share},
        }

    def __repr__(self) -> str:
        return (f"CommOverlap({fmt_ns(self.trace_comm_ns)} of collectives, {fmt_pct(self.trace_overlap_share)} "
                "overlapped by compute)")


@dataclass(frozen=True, eq=False)
class MemoryUse:
    """Allocator samples summed per step and per op (only for traces with allocator samples)."""

    steps: Table  # step (position), number, device, peak_allocated, allocated, freed, samples
    ops: Table  # op, device, allocations, bytes (steady steps), bytes per step; largest first
    steady_peak: int  # the largest steady-step peak over all devices, bytes
    samples: int  # allocator samples in the trace

    def to_dict(self) -> dict[str, Any]:
        """The ``memory`` object of the JSON report."""
        return {
            "samples": self.samples,
            "steady_peak_bytes": self.steady_peak,
            "steps": self.steps.records(),
            "ops": self.ops.records(),
        }

    def __repr__(self) -> str:
        return f"MemoryUse({self.samples} samples, steady peak {self.steady_peak:,} bytes)"


@dataclass(frozen=True)
class Check:
    """One trace-quality check: its JSON key, a label that reads after a count, and what a count
    above zero means for the report's numbers."""

    key: str
    label: str
    meaning: str


CHECKS: tuple[Check, ...] = (
    Check("dropped", "events dropped as lost or broken data",
          "their time is missing from every number in this report"),
    Check("device_before_launch", "device events that start before their launch call",
          "clock skew or a misattributed correlation id: their launch delays, and the step they count in, "
          "are unreliable"),
    Check("overlaps", "host events overlapping another on their thread without nesting",
          "they are treated as siblings, so the self time of the event they overlap is off by the overlapped part"),
    Check("clock_skew", "devices whose clock runs behind the host's",
          "their events start before their launches in the median: launch delays, queueing and step windows "
          "on them are shifted by about that much"),
    Check("duplicate_correlation", "correlation ids shared by several launches or device activities",
          "the launch → device links of those events, hence their launching op and launch delay, may be wrong"),
    Check("empty_steps", "steps without events",
          "nothing but the step marker was recorded in them: events are missing there, and the steps are left "
          "out (when every step is empty, they are kept: their time counts as idle)"),
)
CHECK_KEYS: tuple[str, ...] = tuple(c.key for c in CHECKS)


@dataclass(frozen=True)
class Quality:
    """The trace-quality counts of one trace (docs/bad_input.md, docs/json.md)."""

    dropped: Mapping[str, int] = field(default_factory=dict)  # lost or broken data, by reason
    expected_drops: Mapping[str, int] = field(default_factory=dict)  # not a problem, by reason
    device_before_launch: int = 0  # device events starting before their launch call
    overlaps: int = 0  # host events overlapping another on their thread without nesting
    launch_offset_ns: Mapping[int, float] = field(default_factory=dict)  # device -> median(device start − launch start)
    duplicate_host_ids: int = 0  # correlation ids on several host calls
    duplicate_device_ids: int = 0  # … on several device activities
    duplicate_ids: int = 0  # distinct ids duplicated on either side
    empty_steps: tuple[int, ...] = ()  # step numbers
    notes: tuple[str, ...] = ()  # reader notes (the overlap note is the overlaps check)

    @property
    def skewed_devices(self) -> tuple[int, ...]:
        """Devices whose clock runs behind the host's."""
        return tuple(d for d, offset in sorted(self.launch_offset_ns.items()) if offset < 0)

    def counts(self) -> dict[str, int]:
        """Per check (in :data:`CHECKS` order): its count."""
        return {
            "dropped": int(sum(self.dropped.values())),
            "device_before_launch": self.device_before_launch,
            "overlaps": self.overlaps,
            "clock_skew": len(self.skewed_devices),
            "duplicate_correlation": self.duplicate_ids,
            "empty_steps": len(self.empty_steps),
        }

    def problems(self) -> list[Check]:
        """The checks with a count above zero: what ``--strict`` fails on."""
        counts = self.counts()
        return [c for c in CHECKS if counts[c.key] > 0]

    def to_dict(self) -> dict[str, Any]:
        """The ``quality`` object of the JSON report."""
        counts = self.counts()
        details: dict[str, dict[str, Any]] = {
            "dropped": {"by_reason": dict(sorted(self.dropped.items()))},
            "clock_skew": {"devices": list(self.skewed_devices),
                           "median_launch_to_device_ns": {str(d): v for d, v in sorted(self.launch_offset_ns.items())}},
            "duplicate_correlation": {"host_ids": self.duplicate_host_ids, "device_ids": self.duplicate_device_ids},
            "empty_steps": {"steps": list(self.empty_steps)},
        }
        return {
            "problems": [c.key for c in self.problems()],
            "checks": {c.key: {"count": counts[c.key], **details.get(c.key, {})} for c in CHECKS},
            "expected_drops": dict(sorted(self.expected_drops.items())),
            "notes": list(self.notes),
        }


GRADES = ("high", "moderate", "none", "skipped")


@dataclass(frozen=True)
class Finding:
    """A rule's verdict on a trace (or on a comparison): its grade and the numbers behind it.

    ``evidence`` holds the measures the rule looked at; ``summary`` states them in one sentence
    (phrased by the rule, :mod:`traceview.analyzers.findings`)."""

    rule: str  # the rule's name (docs/findings.md); gap_<bucket> and gap_explained for a comparison
    detects: str  # what the rule looks for
    grade: str  # one of GRADES: high, moderate, none (no problem), skipped (the trace lacks what it needs)
    evidence: Mapping[str, float | int | str] = field(default_factory=dict)  # the measures, by name
    advice: str = ""  # what to try
    threshold: str = ""  # the grading thresholds in words
    explains_ns: float = 0.0  # time per steady step the finding accounts for (its bucket's)
    summary: str = ""  # the evidence in one sentence
    # The mean steady step replayed without the finding's cause, and what that saves (ns; its rank
    # where known): analyzers/whatif.py. None where the cause is no removable work of the steps.
    predicted_step_ns: float | None = None
    predicted_saving_ns: float | None = None
    prediction: str = ""  # what the prediction removes and rests on, or why there is none
    # What its fix saves once the fix that saves most (``first_fix``, a cause) is made: where two
    # lanes each set the step's length, removing one alone saves nothing. None for that fix itself,
    # and where there is no prediction.
    predicted_saving_after_ns: float | None = None
    first_fix: str = ""
    # The grade its measure alone gives, where what its fix saves (alone, or after the first fix,
    # whichever is more) grades it milder: its time runs beside the work that sets the step's
    # length; "" where the two agree.
    measure_grade: str = ""

    def to_dict(self) -> dict[str, Any]:
        """One entry of the JSON report's ``findings``."""
        return {"rule": self.rule, "detects": self.detects, "grade": self.grade, "summary": self.summary,
                "explains_ns": self.explains_ns, "evidence": dict(self.evidence), "advice": self.advice,
                "threshold": self.threshold, "predicted_step_ns": self.predicted_step_ns,
                "predicted_saving_ns": self.predicted_saving_ns, "prediction": self.prediction,
                "predicted_saving_after_ns": self.predicted_saving_after_ns, "first_fix": self.first_fix,
                "measure_grade": self.measure_grade}

    @property
    def saves_ns(self) -> float:
        """The time per steady step fixing it saves, its rank: once the fix that saves most is
        made where that is predicted (fix that first, then the next), alone where there is no first
        fix or it is this one's, else the time it explains."""
        if self.predicted_saving_after_ns is not None:
            return self.predicted_saving_after_ns
        return self.predicted_saving_ns if self.predicted_saving_ns is not None else self.explains_ns

    @property
    def best_saving_ns(self) -> float | None:
        """What its fix saves alone or after the first fix, whichever is more (its grade's
        measure); None where there is no prediction."""
        if self.predicted_saving_ns is None:
            return None
        return max(self.predicted_saving_ns, self.predicted_saving_after_ns or 0.0)

    def __repr__(self) -> str:
        return f"Finding({self.rule}, {self.grade}, explains {fmt_ns(self.explains_ns)} per step)"


# ---------------------------------------------------------------------------------------------
# One trace


@dataclass(frozen=True, eq=False)
class Diagnosis:
    """Everything ``traceview diagnose`` reports about one trace."""

    timeline: Timeline  # the normalized events (docs/schema.md) and the trace's metadata
    steps: Steps  # which rule found the steps; one row per step
    attribution: Attribution  # ns of each cause in each step
    kernels: Table  # top kernels (CPU traces: compute ops): name, count_per_step, time_per_step_ns, mean_ns, share
    ops: Table  # top-level framework ops, the same columns
    launch: LaunchStats  # framework ops and kernel launches per steady step
    device: Table  # per device: busy / idle / compute time over the whole trace
    findings: tuple[Finding, ...] = ()  # ranked: the largest cause first (docs/findings.md)
    communication: CommOverlap | None = None  # None: the trace runs no collective-communication kernel
    quality: Quality = field(default_factory=Quality)  # what makes the numbers less trustworthy
    memory: MemoryUse | None = None  # None: the profiler recorded no allocator samples
    # How the program ran (torch-compile, tensorflow-xla …; analyzers/modes.py). Decided once, from
    # the events: a diagnosis sent back from a worker process carries no event rows.
    mode: str = "unknown"
    # What the analyses note about the steps (uneven steps, a cycle of heavy steps, no framework op,
    # the profiler's inflation): after the readers' notes in the reports (trace_notes).
    notes: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """The trace file."""
        return self.timeline.meta.source

    @property
    def trace_notes(self) -> tuple[str, ...]:
        """Every note the reports show about the trace: the readers', the partial overlaps nesting
        found, then the analyses'."""
        overlaps = int(self.timeline.meta.extra.get(OVERLAPS_KEY, 0))
        return (*self.timeline.meta.notes, *([overlap_note(overlaps)] if overlaps else []), *self.notes)

    @property
    def buckets(self) -> tuple[str, ...]:
        """The buckets the reports show (``communication`` only for traces with collectives)."""
        return shown_buckets(self.communication is not None)

    @property
    def steady_positions(self) -> np.ndarray:
        """Positions of the steady-state steps in the steps table."""
        return self.steps.steady_positions

    @property
    def steady_step_ns(self) -> float:
        """Median duration of the steady-state steps (robust to one slow outlier)."""
        durations = self.steps.table["duration"][self.steady_positions]
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

    @property
    def profiler_inflation_range(self) -> tuple[float, float] | None:
        """The inflation's interval from the two runs' spread: the profiled steady steps' lower
        quartile over the unprofiled ones' upper quartile, and the reverse; None where the
        capture kept no unprofiled step times."""
        unprofiled = (self.timeline.meta.extra.get("capture") or {}).get("unprofiled_steps_ns")
        profiled = self.steps.table["duration"][self.steady_positions]
        if not unprofiled or not len(profiled):
            return None
        p25, p75 = np.percentile(profiled, [25, 75])
        u25, u75 = np.percentile(np.asarray(unprofiled, dtype=np.float64), [25, 75])
        return float(p25 / u75), float(p75 / u25)

    @property
    def calibration_doubt(self) -> str | None:
        """Why the profiler's inflation is no fact to act on, or None: the profiled steps ran
        faster than the unprofiled ones beyond the runs' spread, or either run's steps spread so
        wide that the machine was busy (CALIBRATION_SPREAD)."""
        inflation = self.profiler_inflation
        if inflation is None:
            return None
        reasons = []
        interval = self.profiler_inflation_range
        # (Below 1 within the runs' spread is noise: a quiet machine's ×0.98.)
        if (interval[1] if interval is not None else inflation) < 1.0:
            reasons.append(f"the steps ran faster under the profiler (×{inflation:.2f}) than without it, which the "
                           "profiler cannot cause: the two runs differed in more than the profiler")
        unprofiled = (self.timeline.meta.extra.get("capture") or {}).get("unprofiled_steps_ns") or []
        profiled = self.steps.table["duration"][self.steady_positions].tolist()
        for what, times in (("unprofiled", unprofiled), ("profiled", profiled)):
            if len(times) < 3:
                continue
            low, high = np.percentile(np.asarray(times, dtype=np.float64), [25, 75])
            if low > 0 and high > CALIBRATION_SPREAD * low:  # (quartiles: one slow step is a pause, not a busy run)
                reasons.append(f"the {what} steps' middle half ranged {fmt_ns(low)}–{fmt_ns(high)}")
        if interval is not None and interval[0] > 0 and interval[1] > CALIBRATION_SPREAD * interval[0]:
            reasons.append(f"the runs' spread puts it anywhere in ×{interval[0]:.2f}–{interval[1]:.2f}")
        if not reasons:
            return None
        return "; ".join(reasons) + " — time both runs again on an otherwise idle machine"

    def steady_attribution(self) -> dict[str, float]:
        """Mean ns per shown bucket over the steady steps (sums to the mean steady step time: a
        bucket not shown has no time)."""
        rows = self.attribution.per_step.take(self.steady_positions)
        return {b: float(rows[b].mean()) if len(rows) else 0.0 for b in self.buckets}

    def steady_details(self) -> dict[str, float]:
        """Mean ns per sub-bucket (``memcpy.H2D``, ``launch_overhead.inferred`` …) over the steady steps."""
        rows = self.attribution.details.take(self.steady_positions) if len(self.attribution.details.columns) else None
        if rows is None or not len(rows):
            return {}
        return {c: float(rows[c].mean()) for c in sorted(rows.columns) if rows[c].any()}

    def critical_path(self) -> dict[str, Any] | None:
        """The steady steps' critical path, as recorded (means per steady step): the ns of each
        bucket and each lane on it, and of the waits the trace cannot tie to their work; None
        where the steps were not replayed."""
        critical = self.attribution.critical
        positions = self.steady_positions
        if "unsupported" not in critical.columns or not len(positions):
            return None
        rows = critical.take(positions)
        return {"buckets_ns": {b: float(rows[f"path.{b}"].mean()) for b in self.buckets},
                "lanes_ns": {lane: float(rows[f"lane.{lane}"].mean()) for lane in LANE_KEYS},
                "unsupported_ns": float(rows["unsupported"].mean())}

    def per_step(self) -> pd.DataFrame:
        """One row per step: number, name, start and duration (ns), cold, and the ns of each shown bucket."""
        table, per = self.steps.table, self.attribution.per_step
        return Table({**{c: table[c] for c in ("number", "name", "start", "duration", "cold")},
                      **{b: per[b] for b in self.buckets}}, len(table)).to_pandas()

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of ``traceview diagnose TRACE --format json`` (docs/json.md)."""
        meta = self.timeline.meta
        table = self.steps.table
        per = self.attribution.per_step
        steady = self.steady_attribution()
        mean_steady = sum(steady.values())
        bucket_ns = {b: per[b].tolist() for b in self.buckets}
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
                "notes": list(self.trace_notes),
            },
            "steps": {
                "rule": self.steps.rule,
                "detail": self.steps.rule_detail,
                "count": int(len(table)),
                "cold": [int(n) for n in table["number"][table["cold"]]],
                "partial": [int(table["number"][p]) for p in self.steps.partial],
                "batches_per_step": self.steps.batches_per_step,
                "steady": int(len(self.steady_positions)),
                "table": [
                    {
                        "number": int(r["number"]),
                        "name": str(r["name"]),
                        "start_ns": int(r["start"]),
                        "duration_ns": int(r["duration"]),
                        "cold": bool(r["cold"]),
                        "graph_build_events": int(r["graph_build_events"]),
                        "buckets_ns": {b: int(bucket_ns[b][i]) for b in self.buckets},
                    }
                    for i, r in enumerate(table.records())
                ],
            },
            "steady_state": {
                "step_time_ns": self.steady_step_ns,
                "unprofiled_step_time_ns": self.unprofiled_step_ns,
                "profiler_inflation": self.profiler_inflation,
                "profiler_inflation_range": list(self.profiler_inflation_range or ()) or None,
                "calibration_doubt": self.calibration_doubt,
                "mean_step_time_ns": mean_steady,
                "attribution_mode": self.attribution.mode,
                "buckets_ns": steady,
                "buckets_share": {b: (v / mean_steady if mean_steady else 0.0) for b, v in steady.items()},
                "details_ns": self.steady_details(),
                "dispatch_gap_ns": self.attribution.gap_threshold_ns,
                "dispatch_gap_rule": self.attribution.gap_rule,
                "critical_path": self.critical_path(),
            },
            "top_kernels": records(self.kernels),
            "top_ops": records(self.ops),
            "launch": self.launch.to_dict(),
            "device_time": records(self.device),
            "findings": [f.to_dict() for f in self.findings],
            "quality": self.quality.to_dict(),
            # Only for traces with collective communication (docs/json.md).
            **({"communication": self.communication.to_dict(self.steady_positions)}
               if self.communication is not None else {}),
            # Only for traces with allocator samples (torch profile_memory=True).
            **({"memory": self.memory.to_dict()} if self.memory is not None else {}),
        }

    def __repr__(self) -> str:
        buckets = self.steady_attribution()
        total = sum(buckets.values())
        largest = max(self.buckets, key=lambda b: (buckets[b], -BUCKETS.index(b)))
        problems = sum(f.grade in ("high", "moderate") for f in self.findings)
        share = fmt_pct(buckets[largest] / total if total else 0.0)
        return (f"Diagnosis({trace_label(self.source)!r}: {self.timeline.meta.framework}, {len(self.steps.table)} steps, "
                f"steady step {fmt_ns(self.steady_step_ns)}, largest cause {BUCKET_LABEL[largest]} {share}, "
                f"{problems} problem finding{'s' if problems != 1 else ''})")


# ---------------------------------------------------------------------------------------------
# Two traces


@dataclass(frozen=True)
class BucketDelta:
    """One bucket's mean time per steady step in each trace."""

    bucket: str  # a name of BUCKETS, or a detail of one that is a cause of its own (Comparison.ranked)
    baseline_ns: float  # mean ns per steady step in the baseline
    candidate_ns: float  # … in the candidate

    @property
    def delta_ns(self) -> float:
        """Candidate − baseline."""
        return self.candidate_ns - self.baseline_ns


@dataclass(frozen=True)
class ColdStart:
    """The first cold step of each trace, and when the faster steady state pays back a larger one."""

    baseline_cold_ns: float | None  # the first cold step's duration; None: no cold step
    candidate_cold_ns: float | None  # … of the candidate
    baseline_graph_build_ns: float  # graph building / compilation in that step
    candidate_graph_build_ns: float  # … of the candidate
    payback_steps: float | None  # steady steps for the faster-steady trace to recover a larger cold step
    payback_note: str  # the payback in words

    def to_dict(self) -> dict[str, Any]:
        """The ``cold_start`` object of the comparison's JSON report."""
        return {
            "baseline_cold_step_ns": self.baseline_cold_ns,
            "candidate_cold_step_ns": self.candidate_cold_ns,
            "baseline_graph_build_ns": self.baseline_graph_build_ns,
            "candidate_graph_build_ns": self.candidate_graph_build_ns,
            "payback_steps": self.payback_steps,
            "note": self.payback_note,
        }


# Columns of Comparison.op_diff, in order.
OP_DIFF_COLUMNS: tuple[str, ...] = ("name", "kind", "baseline_count_per_step", "candidate_count_per_step",
                                    "baseline_time_per_step_ns", "candidate_time_per_step_ns", "delta_ns")


@dataclass(frozen=True, eq=False)
class Comparison:
    """Why one trace's steady-state step is slower than another's (``candidate`` vs ``baseline``)."""

    baseline: Diagnosis  # the reference trace
    candidate: Diagnosis  # the trace explained
    buckets: tuple[BucketDelta, ...]  # every shown bucket, in BUCKETS order
    families: pd.DataFrame  # index family; columns <side>_{ops_per_step,compute_ns,dispatch_ns_per_op}
    # Ops and kernels aligned by exact name (OP_DIFF_COLUMNS): count and time per steady step on each
    # side (NaN where a side has no such name), sorted by the absolute time difference.
    op_diff: pd.DataFrame
    cold: ColdStart  # the first cold step of each side
    ratio_interval: tuple[float, float] | None = None  # 95 % interval of ratio (None: < 2 steady steps a side)
    interval_without_pauses: bool = False  # the interval is of the steps less their pauses (compare.ratio_interval)
    findings: tuple[Finding, ...] = ()  # what explains the gap
    # Sides too thin for the ratio to carry its usual weight, as (side, why) in side order; why is
    # one of text.THIN_SIDE_REASONS.
    thin_sides: tuple[tuple[str, str], ...] = ()
    # torch.compile regions a steady step runs on each side (baseline, candidate), where either ran
    # torch.compile (analyzers/modes.compiled_regions_per_step): more than one means graph breaks.
    compiled_regions: tuple[float, float] | None = None
    # Time per steady step (baseline, candidate) of the compute ops both sides run as many times a
    # step (analyzers/compare.same_count_compute): the same work, whose time can only differ by the
    # CPU each op got or the size of its tensors. None: no such op.
    same_count_compute_ns: tuple[float, float] | None = None
    # Whether each side (baseline, candidate) reads its batches from DataLoader worker processes.
    dataloader_workers: tuple[bool, bool] = (False, False)
    # What each side's trace records beside the ops (baseline, candidate), of RECORDED_EXTRAS
    # (analyzers/compare.recorded_extras): a side captured with more records its ops differently.
    recorded: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    # Input pipeline work on threads other than the step's, per steady step, on each side (baseline,
    # candidate): analyzers/compare.input_beside_step_ns.
    input_beside_step_ns: tuple[float, float] = (0.0, 0.0)
    # Dtype casts a steady step runs on each side (baseline, candidate): analyzers/compare.dtype_casts_per_step.
    dtype_casts_per_step: tuple[float, float] = (0.0, 0.0)
    # Share of each side's op and kernel time (baseline, candidate) in the ops both run at the same
    # count per step (analyzers/compare.same_work_shares): 1.0 on both where they run the same work.
    same_work_shares: tuple[float, float] = (0.0, 0.0)
    # What the traces record differently about how they ran (analyzers/compare.known_differences):
    # framework, host, devices, recorded, or a capture fact's name. Empty: nothing tells the runs apart.
    known_differences: tuple[str, ...] = ()
    # Whether both traces record their ops' input shapes (torch record_shapes), so that inputs of
    # another size would be a known difference; without them, a change of batch or model size that
    # keeps the ops looks like the same work.
    shapes_compared: bool = False
    # The ops both traces run whose recorded input dtypes differ (analyzers/compare.dtype_changes):
    # (baseline dtypes, candidate dtypes, ops a steady step runs so changed), most ops first; empty
    # where they differ nowhere or a trace records no input types.
    input_dtype_changes: tuple[tuple[str, str, float], ...] = ()
    # Whether each side's steady steps hold torch's autograd anomaly detection's work (baseline,
    # candidate): analyzers/findings/diagnosis.anomaly_detection_on.
    anomaly_detection: tuple[bool, bool] = (False, False)
    # What the analysis concludes of the gap (analyzers/compare.concluded, where its thresholds are):
    # whether the step-time ratio is outside the noise (its interval excludes 1; assumed without one),
    significant: bool = True
    # whether both traces run the same ops and kernels at the same counts per step,
    same_work: bool = False
    # the share of the gap in the buckets a run's speed moves for the same work (kernel, communication,
    # memcpy, sync wait, launch/dispatch),
    ops_gap_share: float = 0.0
    # whether the gap is the same ops running slower (the same work, most of the gap in those buckets),
    gap_in_same_ops: bool = False
    # (slower / faster step, the runs' own variation it is held against, whether unprofiled): the
    # captures' unprofiled steps where both timed them, else the profiled ones,
    run_spread: tuple[float, float, bool] = (math.inf, math.inf, False)
    # whether the gap is no more than separate runs of one program show (nothing recorded tells the
    # runs apart, the same work, the gap in the ops' own time, the spread within the runs' variation),
    run_to_run: bool = False
    # and whether the profiler slows the two sides by factors far apart: the profiled ratio and its
    # per-cause split then over-weigh the more inflated side's host costs.
    uneven_inflation: bool = False
    # Each bucket's estimated size without the profiler on both sides (analyzers/unprofiled.py),
    # where both captures timed their steps without it as well; () where either did not.
    unprofiled_buckets: tuple[BucketDelta, ...] = ()

    @property
    def baseline_step_ns(self) -> float:
        """Mean steady step of the baseline (the bucket means sum to it)."""
        return sum(d.baseline_ns for d in self.buckets)

    @property
    def candidate_step_ns(self) -> float:
        """Mean steady step of the candidate."""
        return sum(d.candidate_ns for d in self.buckets)

    @property
    def gap_ns(self) -> float:
        """Candidate − baseline mean steady step (the bucket deltas sum to it)."""
        return self.candidate_step_ns - self.baseline_step_ns

    @property
    def ratio(self) -> float:
        """Candidate / baseline mean steady step."""
        return self.candidate_step_ns / self.baseline_step_ns if self.baseline_step_ns else math.inf

    @property
    def unexplained_ns(self) -> float:
        """The delta of ``idle`` less that of its pauses and of its waits for the interpreter lock:
        time in which the traces record nothing and the step's thread was not known to be stopped."""
        return (next(d.delta_ns for d in self.buckets if d.bucket == "idle") - self.paused_delta_ns
                - self.gil_wait_delta_ns)

    @property
    def paused_delta_ns(self) -> float:
        """The delta of the pauses (``idle.paused``: the machine took the step thread's core), an
        explanation of the gap that is neither framework's doing."""
        return self.detail_delta(PAUSED_DETAIL).delta_ns

    @property
    def gil_wait_delta_ns(self) -> float:
        """The delta of the waits for Python's interpreter lock (``idle.gil_wait``: another thread
        of the process held it), an explanation of the gap."""
        return self.detail_delta(GIL_WAIT_DETAIL).delta_ns

    def detail_delta(self, detail: str) -> BucketDelta:
        """One detail of a bucket (``idle.paused``), its mean time per steady step in each trace."""
        return BucketDelta(detail, self.baseline.steady_details().get(detail, 0.0),
                           self.candidate.steady_details().get(detail, 0.0))

    @property
    def explained_share(self) -> float:
        """1 − |unexplained| / |gap|: the share of the gap named causes explain."""
        if self.gap_ns == 0:
            return 1.0
        # Unrecorded time counts against the explanation whichever way it moves.
        return max(0.0, 1.0 - abs(self.unexplained_ns) / abs(self.gap_ns))

    @property
    def unprofiled_ratio(self) -> float | None:
        """Candidate / baseline steady step without the profiler, when both captures' manifests
        carry it (the collectors time the same steps unprofiled)."""
        a, b = self.baseline.unprofiled_step_ns, self.candidate.unprofiled_step_ns
        return b / a if a and b else None

    @property
    def batches_per_step(self) -> tuple[int, int]:
        """Batches one step holds on each side (baseline, candidate): Steps.batches_per_step."""
        return self.baseline.steps.batches_per_step, self.candidate.steps.batches_per_step

    @property
    def batch_ratio(self) -> float | None:
        """Candidate / baseline mean time per batch, where a step holds a different number of
        batches on each side (a step-to-step ratio is then no like-for-like measure); else None."""
        a, b = self.batches_per_step
        if a == b or not self.baseline_step_ns:
            return None
        return (self.candidate_step_ns / b) / (self.baseline_step_ns / a)

    def ranked(self) -> list[BucketDelta]:
        """Named causes in the direction of the gap, largest first: the buckets but idle, and the
        part of idle that has a cause of the program's — the waits for the interpreter lock
        (``idle.gil_wait``), where either side has them."""
        sign = 1.0 if self.gap_ns >= 0 else -1.0
        named = [d for d in self.buckets if d.bucket != "idle"]
        waits = self.detail_delta(GIL_WAIT_DETAIL)
        if waits.baseline_ns or waits.candidate_ns:
            named.append(waits)
        return sorted(named, key=lambda d: (-sign * d.delta_ns, BUCKETS.index(d.bucket.split(".")[0]), d.bucket))

    def slower_is_candidate(self) -> bool:
        """Whether the candidate is the slower trace."""
        return self.gap_ns >= 0

    def comparison_dict(self) -> dict[str, Any]:
        """The ``comparison`` part of :meth:`to_dict`: the numbers without the two diagnoses."""
        gap = self.gap_ns
        return {
            "baseline_step_ns": self.baseline_step_ns,
            "candidate_step_ns": self.candidate_step_ns,
            "baseline_median_step_ns": self.baseline.steady_step_ns,
            "candidate_median_step_ns": self.candidate.steady_step_ns,
            "ratio": self.ratio,
            "ratio_interval": list(self.ratio_interval) if self.ratio_interval else None,
            "interval_without_pauses": self.interval_without_pauses,
            "significant": self.significant,
            "same_work_shares": list(self.same_work_shares),
            "known_differences": list(self.known_differences),
            "run_to_run": self.run_to_run,
            "shapes_compared": self.shapes_compared,
            "unprofiled_ratio": self.unprofiled_ratio,
            "batches_per_step": list(self.batches_per_step),
            "batch_ratio": self.batch_ratio,
            "baseline_inflation": self.baseline.profiler_inflation,
            "candidate_inflation": self.candidate.profiler_inflation,
            "gap_ns": gap,
            "explained_share": self.explained_share,
            "unexplained_ns": self.unexplained_ns,
            "paused_delta_ns": self.paused_delta_ns,
            "gil_wait_delta_ns": self.gil_wait_delta_ns,
            "thin_sides": [{"side": side, "why": why} for side, why in self.thin_sides],
            "compiled_regions_per_step": list(self.compiled_regions) if self.compiled_regions else None,
            "recorded": {"baseline": list(self.recorded[0]), "candidate": list(self.recorded[1])},
            "buckets": [
                {"bucket": d.bucket, "baseline_ns": d.baseline_ns, "candidate_ns": d.candidate_ns,
                 "delta_ns": d.delta_ns, "share_of_gap": (d.delta_ns / gap if gap else 0.0)}
                for d in self.buckets
            ],
            "unprofiled_buckets": [
                {"bucket": d.bucket, "baseline_ns": d.baseline_ns, "candidate_ns": d.candidate_ns, "delta_ns": d.delta_ns}
                for d in self.unprofiled_buckets
            ] or None,
            "ranked_causes": [d.bucket for d in self.ranked()],
            "families": [
                {"family": fam, **{k: float(v) for k, v in row.items()}}
                for fam, row in self.families.iterrows()
            ],
            "op_diff": [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                        for row in records(self.op_diff)],
            "cold_start": self.cold.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of ``traceview compare --format json`` (docs/json.md)."""
        return {
            "report_version": REPORT_VERSION,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "comparison": self.comparison_dict(),
            "findings": [f.to_dict() for f in self.findings],
        }

    def __repr__(self) -> str:
        causes = self.ranked()
        gap = self.gap_ns
        top = (f", largest cause {BUCKET_LABEL[causes[0].bucket]} {fmt_pct(causes[0].delta_ns / gap)} of the gap"
               if gap and causes and causes[0].delta_ns / gap > 0 else "")
        interval = (f" (95 % {self.ratio_interval[0]:.2f}–{self.ratio_interval[1]:.2f})"
                    if self.ratio_interval else "")
        return (f"Comparison({trace_label(self.candidate.source)!r} vs {trace_label(self.baseline.source)!r}: "
                f"{fmt_ratio(self.ratio)}{interval}, gap {fmt_ns(gap)} per steady step{top})")


# ---------------------------------------------------------------------------------------------
# Several ranks of one run

RANK_FROM_DISTRIBUTED = "distributedInfo"
RANK_FROM_HOST_ORDER = "host order"
RANK_FROM_INPUT_ORDER = "input order"


@dataclass(frozen=True)
class RankInfo:
    """Which rank a trace is, and how that is known."""

    rank: int
    world_size: int | None = None
    backend: str = ""
    origin: str = RANK_FROM_DISTRIBUTED  # RANK_FROM_* : where the number comes from


@dataclass(frozen=True, eq=False)
class RankSummary:
    """What the cross-rank analysis needs from one trace (no event rows)."""

    source: str
    format: str
    framework: str
    declared: RankInfo | None  # from the trace itself (distributedInfo); None when it says nothing
    steady_step_ns: float  # median steady step (the diagnose report's number)
    steady_buckets_ns: Mapping[str, float]  # mean ns per steady step, per bucket
    steps: pd.DataFrame  # per step: number, duration, cold, then one ns column per bucket

    def __repr__(self) -> str:
        return f"RankSummary({trace_label(self.source)!r}, {len(self.steps)} steps, steady step {fmt_ns(self.steady_step_ns)})"


def short_names(sources: Sequence[str]) -> list[str]:
    """Each source relative to the folder all of them share (rank0/trace.json, or the file name)."""
    try:
        common = os.path.commonpath([str(Path(s).parent) for s in sources])
    except ValueError:  # absolute and relative paths mixed, or different drives
        return [Path(s).name for s in sources]
    return [Path(os.path.relpath(s, common)).as_posix() if common else Path(s).as_posix() for s in sources]


@dataclass(frozen=True, eq=False)
class MultiRank:
    """The ranks of one run compared. Tables are ordered by rank, then step number."""

    label: str  # "nccl, world size 2", or "hosts of one profile run" for XPlane hosts
    world_size: int | None  # as the traces declare it
    backend: str  # nccl, gloo … (distributedInfo)
    rank_origin: str  # RANK_FROM_DISTRIBUTED or RANK_FROM_HOST_ORDER
    ranks: pd.DataFrame  # rank, source, trace (short name), steady_step_ns, vs_median, steps, slowest_steps
    step_ns: pd.DataFrame  # index: step number (steps on every rank); one column per rank: step time ns
    # Per step on every rank: number, cold, median_ns, min_ns, max_ns, slowest_rank (-1: all equal),
    # over_median_ns, over_median_share, straggler.
    stragglers: pd.DataFrame
    spread: pd.DataFrame  # per bucket: bucket, min_ns, median_ns, max_ns, min_rank, max_rank
    threshold: float  # straggler: the slowest rank this share above the median (analyzers/ranks.py)
    notes: tuple[str, ...] = ()  # ranks missing, steps not on every rank

    def relabel(self, sources: Mapping[str, str]) -> MultiRank:
        """The same result with trace sources replaced (``--redact``)."""
        renamed = [sources.get(s, s) for s in self.ranks["source"]]
        return replace(self, ranks=self.ranks.assign(source=renamed, trace=short_names(renamed)))

    def to_dict(self) -> dict[str, Any]:
        """One entry of the JSON report's ``multi_rank`` (docs/multi_rank.md)."""
        ranks = [int(r) for r in self.ranks["rank"]]
        return {
            "run": self.label,
            "world_size": self.world_size,
            "backend": self.backend,
            "rank_from": self.rank_origin,
            "ranks": [
                {"rank": int(r.rank), "source": str(r.source), "trace": str(r.trace), "steady_step_ns": float(r.steady_step_ns),
                 "vs_median": float(r.vs_median), "steps": int(r.steps), "slowest_steps": int(r.slowest_steps)}
                for r in self.ranks.itertuples(index=False)
            ],
            "stragglers": {
                "threshold_share": self.threshold,
                "ranks": ranks,
                "steps": [
                    {"number": int(s.number), "cold": bool(s.cold), "median_ns": float(s.median_ns),
                     "min_ns": int(s.min_ns), "max_ns": int(s.max_ns),
                     "slowest_rank": int(s.slowest_rank) if s.slowest_rank >= 0 else None,
                     "over_median_ns": float(s.over_median_ns), "over_median_share": float(s.over_median_share),
                     "straggler": bool(s.straggler),
                     "step_ns": [int(v) for v in self.step_ns.loc[s.number].to_numpy()]}
                    for s in self.stragglers.itertuples(index=False)
                ],
            },
            "bucket_spread": [
                {"bucket": str(b.bucket), "min_ns": float(b.min_ns), "median_ns": float(b.median_ns),
                 "max_ns": float(b.max_ns), "min_rank": int(b.min_rank), "max_rank": int(b.max_rank)}
                for b in self.spread.itertuples(index=False)
            ],
            "notes": list(self.notes),
        }

    def __repr__(self) -> str:
        stragglers = int(self.stragglers["straggler"].sum()) if len(self.stragglers) else 0
        return f"MultiRank({self.label!r}, {len(self.ranks)} ranks, {stragglers} straggler steps)"


# ---------------------------------------------------------------------------------------------
# A folder of traces


@dataclass(frozen=True)
class LeftOut:
    """A trace of a folder that could not be read: left out of the report, which names it and why."""

    source: str
    reason: str  # the one-line error reading it gave, without the path it names it by

    @classmethod
    def of(cls, path: object, message: str) -> LeftOut:
        """The trace at ``path`` left out for the one-line error ``message``."""
        named = f"{path}: "
        return cls(str(path), message[len(named):] if message.startswith(named) else message)

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "reason": self.reason}


@dataclass(frozen=True, eq=False)
class FolderDiagnosis:
    """Every trace a folder (or logdir) holds, diagnosed: what ``traceview diagnose FOLDER`` reports
    when the folder holds two or more traces."""

    diagnoses: tuple[Diagnosis, ...]  # in path order
    # Each trace compared with its workload's baseline (analyzers.compare.workload_comparisons).
    comparisons: tuple[Comparison, ...] = ()
    multi_rank: tuple[MultiRank, ...] = ()  # each run of two or more ranks among the traces
    # The folder's traces that could not be read (a truncated or corrupt rank file), in path order:
    # the others are reported, and the command line's exit status says the report is partial.
    left_out: tuple[LeftOut, ...] = ()
    # ``--top``: the most ranks a run's per-rank table lists in a text report (the report's own
    # bound, 8, caps it; None: that bound alone). JSON holds every rank whatever it is.
    rank_rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of ``traceview diagnose FOLDER --format json`` (docs/json.md)."""
        document: dict[str, Any] = {"report_version": REPORT_VERSION,
                                    "traces": [d.to_dict() for d in self.diagnoses],
                                    "left_out": [item.to_dict() for item in self.left_out]}
        if self.comparisons:
            document["comparisons"] = [{"baseline": c.baseline.source, "candidate": c.candidate.source,
                                        **c.comparison_dict()} for c in self.comparisons]
        if self.multi_rank:  # several ranks of one run (docs/multi_rank.md)
            document["multi_rank"] = [run.to_dict() for run in self.multi_rank]
        return document

    def __repr__(self) -> str:
        try:
            folder = os.path.commonpath([str(Path(d.source).parent) for d in self.diagnoses])
        except ValueError:  # no traces, or absolute and relative paths mixed
            folder = ""
        return (f"FolderDiagnosis({len(self.diagnoses)} traces in {folder!r}, {len(self.comparisons)} comparisons, "
                f"{len(self.multi_rank)} multi-rank runs" + (f", {len(self.left_out)} left out" if self.left_out else "")
                + ")")


@dataclass(frozen=True, eq=False)
class WhatIf:
    """A trace's steps replayed under a transformation (``traceview whatif``): the steady step
    predicted, what it saves, and what sets its length then (analyzers/whatif.py)."""

    diagnosis: Diagnosis  # the trace as recorded
    transform: str  # what the replay changed, in words ("without input, kernel ×0.5")
    steps: Table  # per step: number, cold, recorded_ns, replayed_ns (as recorded), predicted_ns
    path_ns: Mapping[str, float]  # the predicted steady step's critical path: ns per bucket (mean)
    lane_ns: Mapping[str, float]  # … ns per lane (LANE_KEYS)
    unsupported_ns: float  # waits the trace cannot tie to the work they wait for, kept (mean per steady step)
    # Every finding's fix replayed, in the order to make them (the findings' ranking): (rule, the
    # cause removed, predicted step, saving alone, saving once the first fix is made — None for the
    # first itself), ns.
    fixes: tuple[tuple[str, str, float, float, float | None], ...] = ()

    @property
    def steady_step_ns(self) -> float:
        """The mean steady step as recorded."""
        return float(self.steps["recorded_ns"][self.diagnosis.steady_positions].mean())

    @property
    def predicted_step_ns(self) -> float:
        """The mean steady step predicted under the transformation."""
        return float(self.steps["predicted_ns"][self.diagnosis.steady_positions].mean())

    @property
    def saving_ns(self) -> float:
        return self.steady_step_ns - self.predicted_step_ns

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of ``traceview whatif --format json`` (docs/json.md)."""
        positions = set(self.diagnosis.steady_positions.tolist())
        return {
            "report_version": REPORT_VERSION,
            "trace": self.diagnosis.source,
            "transform": self.transform,
            "steady_step_ns": self.steady_step_ns,
            "predicted_step_ns": self.predicted_step_ns,
            "saving_ns": self.saving_ns,
            "steps": [{**row, "steady": i in positions} for i, row in enumerate(self.steps.records())],
            "critical_path": {"buckets_ns": dict(self.path_ns), "lanes_ns": dict(self.lane_ns),
                              "unsupported_ns": self.unsupported_ns},
            "fixes": [{"rule": rule, "removes": cause, "predicted_step_ns": step, "saving_ns": saving,
                       "saving_after_first_ns": after} for rule, cause, step, saving, after in self.fixes],
        }

    def __repr__(self) -> str:
        return (f"WhatIf({trace_label(self.diagnosis.source)!r}, {self.transform}: {fmt_ns(self.steady_step_ns)} → "
                f"{fmt_ns(self.predicted_step_ns)} per steady step)")


@dataclass(frozen=True)
class Export:
    """What ``traceview export`` wrote: a Trace-Event JSON file for ui.perfetto.dev."""

    path: Path  # the file written
    sources: tuple[str, ...]  # the traces, one process each (pid 1, 2 … in this order)
    events: int  # kept events written
    bytes: int  # file size (compressed when the name ends in .gz)


# What traceview.diagnose returns: one trace's diagnosis, or a folder's.
DiagnoseResult = Union[Diagnosis, FolderDiagnosis]
