"""What fixing a cause would buy: the steps replayed (analyzers/replay.py) with a cause removed or
scaled, and the critical path of each step as recorded.

A **transformation** names what changes: causes removed (``without``: a bucket such as ``input``,
or a detail such as ``idle.paused``), classes of work scaled (``scale``: ``kernel`` × 0.5), and
the dispatch cost per framework op (``dispatch_per_op_ns``: what compiling the step — CUDA
graphs, tf.function, torch.compile, jax.jit — makes of the per-op overhead, the ops' own math
kept). Each becomes a factor per attribution layer; the replay gives each step's length under
them. Every diagnosis replays its steps once as recorded (the critical path) and once without
each cause a finding can name (:data:`FIXES`), so that a finding carries the step predicted
without its cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from traceview.analyzers.findings.table import DIAGNOSIS_FINDINGS
from traceview.analyzers.replay import LaneTable, Replayed, lane_table, replay
from traceview.results import BUCKETS, LANE_KEYS, Diagnosis, WhatIf
from traceview.table import Table

# The causes a finding's fix removes, each a bucket or a detail of one: every diagnosis predicts
# its steps without each (Attribution.whatif, "without.<cause>").
FIXES: tuple[str, ...] = ("input", "host_compute", "graph_build", "sync_wait", "memcpy", "communication",
                          "launch_overhead", "idle.paused", "idle.gil_wait")


@dataclass(frozen=True)
class Transform:
    """What a replay changes: causes removed, classes of work scaled, the dispatch cost per op."""

    without: tuple[str, ...] = ()  # buckets or details ("input", "idle.paused") removed
    scale: dict[str, float] = field(default_factory=dict)  # bucket or detail -> factor on its time
    dispatch_per_op_ns: float | None = None  # the launch/dispatch overhead per framework op, replayed

    def label(self) -> str:
        """The transformation in words: "without input, with kernel ×0.5"."""
        parts = [f"without {cause}" for cause in self.without]
        parts += [f"with {cause} ×{factor:g}" for cause, factor in sorted(self.scale.items())]
        if self.dispatch_per_op_ns is not None:
            parts.append(f"with dispatch {self.dispatch_per_op_ns / 1e3:g} µs per op")
        return ", ".join(parts) or "as recorded"


def causes() -> list[str]:
    """Every cause a transformation may name: each bucket, and each detail of one."""
    from traceview.analyzers.layers import LAYERS

    details = sorted({layer.name for layer in LAYERS if "." in layer.name and layer.bucket in BUCKETS})
    return [*BUCKETS, *details]


def _matches(name: str, cause: str) -> bool:
    """Whether a layer (``bucket.detail``) is the cause (a bucket, or that very detail)."""
    return name == cause or name.split(".")[0] == cause


def layer_factors(table: LaneTable, transform: Transform, dispatch_scale: float = 1.0) -> np.ndarray:
    """Each layer's factor under ``transform`` (``dispatch_scale``: the launch/dispatch factor the
    per-op cost gives, see :func:`dispatch_scale`)."""
    factors = np.ones(len(table.names))
    for i, name in enumerate(table.names):
        bucket = BUCKETS[table.bucket[i]] if table.bucket[i] >= 0 else ""
        keyed = f"{bucket}.{name.split('.', 1)[1]}" if "." in name else bucket
        if bucket == "launch_overhead" and transform.dispatch_per_op_ns is not None:
            factors[i] = dispatch_scale
        for cause, factor in transform.scale.items():
            if bucket and _matches(keyed, cause):
                factors[i] = factor
        if bucket and any(_matches(keyed, cause) for cause in transform.without):
            factors[i] = 0.0
    return factors


def dispatch_scale(launch_ns_per_step: float, ops_per_step: float, per_op_ns: float) -> float:
    """The factor on launch/dispatch time that gives ``per_op_ns`` per framework op."""
    if launch_ns_per_step <= 0 or ops_per_step <= 0:
        return 1.0
    return max(0.0, per_op_ns * ops_per_step / launch_ns_per_step)


@dataclass(frozen=True)
class Segments:
    """What the replay reads of the attribution: its elementary segments, their layers' bit masks,
    the layer that won each, and the layers' lanes."""

    start: np.ndarray
    length: np.ndarray
    step: np.ndarray
    in_step: np.ndarray
    active: np.ndarray
    winner: np.ndarray
    table: LaneTable
    mode: str
    n_steps: int


def segments_of(seg: object, mode: str, n_steps: int) -> Segments:
    """The replay's view of the attribution's segments (``attribution._Segments``)."""
    return Segments(seg.start, seg.length, seg.step, seg.in_step, seg.active, seg.winner_layer,  # type: ignore[attr-defined]
                    lane_table(seg.layers, mode), mode, n_steps)  # type: ignore[attr-defined]


def replayed(segments: Segments, factors: np.ndarray) -> list[Replayed]:
    """The steps replayed under each row of per-layer ``factors``."""
    s = segments
    return replay(s.start, s.length, s.step, s.in_step, s.active, s.winner, s.table, s.mode, s.n_steps, factors)


def whatif_tables(segments: Segments, steady: np.ndarray) -> tuple[Table, Table]:
    """Per step: the step replayed as recorded and without each of :data:`FIXES` (ns); then, beside
    the fix that saves most over the ``steady`` steps (positions), without each other one too
    (``without.<first>+<cause>``: what that fix saves once the first is made — where two lanes each
    set the step's length, removing one cause alone saves nothing); and the steps' critical path
    as recorded (ns of each bucket and each lane on it, and of waits the trace cannot tie to the
    work they wait for)."""
    table = segments.table
    present = _present_layers(segments)
    alone = [layer_factors(table, Transform(without=(cause,))) for cause in FIXES]
    changes = _changes(alone, np.ones(len(table.names)), present)
    # The recorded steps and each fix that changes them, in one replay.
    recorded, *fixed = replayed(segments, np.stack([np.ones(len(table.names))]
                                                   + [row for row, changed in zip(alone, changes) if changed]))
    columns = {"replayed": np.rint(recorded.length_ns).astype(np.int64)}
    by_fix = iter(fixed)
    for cause, changed in zip(FIXES, changes):
        columns[f"without.{cause}"] = (np.rint(next(by_fix).length_ns).astype(np.int64) if changed
                                       else columns["replayed"])
    first = first_fix(columns, steady)
    if first:
        others = [cause for cause in FIXES if cause != first]
        pairs = [layer_factors(table, Transform(without=(first, cause))) for cause in others]
        for cause, lengths in zip(others, _lengths(segments, pairs, present, columns[f"without.{first}"], first=first)):
            columns[f"without.{first}+{cause}"] = lengths
    critical = {f"path.{bucket}": np.rint(recorded.path_ns[:, i]).astype(np.int64) for i, bucket in enumerate(BUCKETS)}
    critical.update({f"lane.{lane}": np.rint(recorded.lane_ns[:, i]).astype(np.int64)
                     for i, lane in enumerate(LANE_KEYS)})
    critical["unsupported"] = np.rint(recorded.unsupported_ns).astype(np.int64)
    return Table(columns, segments.n_steps), Table(critical, segments.n_steps)


def _present_layers(segments: Segments) -> np.ndarray:
    """Per layer, whether it is active in any moment of the steps: a factor on a layer that never
    is changes no replay."""
    inside = segments.active[segments.in_step & (segments.step >= 0)]
    bits = int(np.bitwise_or.reduce(inside)) if len(inside) else 0
    return np.array([bool(bits >> k & 1) for k in range(len(segments.table.names))], dtype=bool)


def _lengths(segments: Segments, rows: list[np.ndarray], present: np.ndarray, base: np.ndarray,
             first: str = "") -> list[np.ndarray]:
    """The step lengths (ns) replayed under each row of factors, in one pass for the rows that
    change a layer the steps hold; a row that changes none beyond ``first``'s (the base's own
    transformation) gives the ``base`` lengths without a replay."""
    own = layer_factors(segments.table, Transform(without=(first,))) if first else np.ones(len(present))
    changes = _changes(rows, own, present)
    out = [base] * len(rows)
    needed = [row for row, changed in zip(rows, changes) if changed]
    if needed:
        results = iter(replayed(segments, np.stack(needed)))
        out = [np.rint(next(results).length_ns).astype(np.int64) if changed else base
               for changed in changes]
    return out


def _changes(rows: list[np.ndarray], own: np.ndarray, present: np.ndarray) -> list[bool]:
    """Per row of factors, whether it changes a layer the steps hold beyond ``own`` (the factors
    the replay is based on): a row that does not replays to the base's steps."""
    return [bool(((row != own) & present).any()) for row in rows]


def first_fix(columns: dict[str, np.ndarray], steady: np.ndarray) -> str:
    """The cause whose removal saves most over the ``steady`` steps (all steps where none is
    steady), "" where none saves anything; ties go to the first in :data:`FIXES`."""
    rows = steady if len(steady) else np.arange(len(columns["replayed"]))
    if not len(rows):
        return ""
    now = float(columns["replayed"][rows].mean())
    savings = [now - float(columns[f"without.{cause}"][rows].mean()) for cause in FIXES]
    best = int(np.argmax(savings))
    return FIXES[best] if savings[best] > 0 else ""


def whatif(diag: Diagnosis, segments: Segments, transform: Transform) -> WhatIf:
    """The diagnosed trace's steps replayed under ``transform`` (``segments``: its attribution's,
    ``attribution.replay_segments``), with every finding's fix replayed on its own beside it."""
    steady = diag.steady_attribution()
    dispatch = 1.0
    if transform.dispatch_per_op_ns is not None:
        dispatch = dispatch_scale(steady.get("launch_overhead", 0.0), diag.launch.ops_per_step,
                                  transform.dispatch_per_op_ns)
    factors = np.stack([np.ones(len(segments.table.names)), layer_factors(segments.table, transform, dispatch)])
    recorded, predicted = replayed(segments, factors)
    table = diag.steps.table
    steps = Table({"number": table["number"], "cold": table["cold"], "recorded_ns": table["duration"],
                   "replayed_ns": np.rint(recorded.length_ns).astype(np.int64),
                   "predicted_ns": np.rint(predicted.length_ns).astype(np.int64)}, len(table))
    positions = diag.steady_positions
    fixes = tuple((f.rule, fix_of(f.rule), f.predicted_step_ns, f.predicted_saving_ns, f.predicted_saving_after_ns)
                  for f in diag.findings
                  if f.predicted_step_ns is not None and f.predicted_saving_ns is not None
                  and (f.grade in ("high", "moderate") or f.predicted_saving_ns > 0))
    return WhatIf(diag, transform.label(), steps,
                  {b: float(predicted.path_ns[positions, i].mean()) for i, b in enumerate(BUCKETS)},
                  {key: float(predicted.lane_ns[positions, i].mean()) for i, key in enumerate(LANE_KEYS)},
                  float(predicted.unsupported_ns[positions].mean()), fixes)


def fix_of(rule: str) -> str:
    """The cause a finding's fix removes (its row's, analyzers/findings/table.py)."""
    return next((row.fix for row in DIAGNOSIS_FINDINGS if row.name == rule), "")
