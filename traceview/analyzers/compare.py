"""Explain why one trace's steady-state step is slower than another's.

``compare(baseline, candidate)`` takes two diagnoses and returns a :class:`Comparison`:

- step times and ratio: mean steady-state step of each (the per-bucket means sum to it exactly,
  so the bucket deltas sum exactly to the gap) and the median, which the diagnose report shows;
- bucket deltas: candidate − baseline per bucket, in ns per step and as a share of the gap.
  ``idle`` (time in which the trace records nothing) is not an explanation: its delta is reported
  as *unexplained*; ``explained_share`` = 1 − unexplained / gap;
- op families: framework ops and kernels mapped to common families (matmul, conv, elementwise,
  reduction, normalization, loss, optimizer, copy, other; patterns in ``categories.OP_FAMILIES``)
  with, per steady step: top-level op count, compute time (device kernels on device traces,
  leaf compute ops on CPU traces) and host dispatch time per op (inclusive host time of the
  top-level op minus the compute inside it);
- cold start: first cold step, its graph-build time, and how many steady steps it takes for the
  trace with the faster steady state to pay back a larger cold step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceview import categories as cat
from traceview.analyzers.attribution import BUCKETS, shown_buckets
from traceview.analyzers.diagnosis import Diagnosis, diagnose
from traceview.normalize import compute_ops, nearest_ancestor, op_names, self_time, top_level_ops
from traceview.schema import Kind

FAMILIES: tuple[str, ...] = tuple(f for f, _ in cat.OP_FAMILIES) + ("other",)
_OPTIMIZER_SCOPE = ("Optimizer.step#", "Optimizer.zero_grad#")


@dataclass
class BucketDelta:
    bucket: str
    baseline_ns: float
    candidate_ns: float

    @property
    def delta_ns(self) -> float:
        return self.candidate_ns - self.baseline_ns


@dataclass
class ColdStart:
    baseline_cold_ns: float | None
    candidate_cold_ns: float | None
    baseline_graph_build_ns: float
    candidate_graph_build_ns: float
    payback_steps: float | None  # steady steps for the faster-steady trace to recover a larger cold step
    payback_note: str


@dataclass
class Comparison:
    baseline: Diagnosis
    candidate: Diagnosis
    buckets: list[BucketDelta]
    families: pd.DataFrame  # index family; columns <side>_{ops_per_step,compute_ns,dispatch_ns_per_op}
    cold: ColdStart
    findings: list[Any] = field(default_factory=list)

    @property
    def baseline_step_ns(self) -> float:
        return sum(d.baseline_ns for d in self.buckets)

    @property
    def candidate_step_ns(self) -> float:
        return sum(d.candidate_ns for d in self.buckets)

    @property
    def gap_ns(self) -> float:
        return self.candidate_step_ns - self.baseline_step_ns

    @property
    def ratio(self) -> float:
        return self.candidate_step_ns / self.baseline_step_ns if self.baseline_step_ns else math.inf

    @property
    def unexplained_ns(self) -> float:
        return next(d.delta_ns for d in self.buckets if d.bucket == "idle")

    @property
    def explained_share(self) -> float:
        if self.gap_ns == 0:
            return 1.0
        # Unrecorded time counts against the explanation whichever way it moves.
        return max(0.0, 1.0 - abs(self.unexplained_ns) / abs(self.gap_ns))

    @property
    def ratio_interval(self) -> tuple[float, float] | None:
        """95 % interval of :attr:`ratio` from the steady steps' spread (a bootstrap over the steps of
        each side, seeded: the same traces give the same interval); None with fewer than two steady
        steps on a side (no spread to measure)."""
        return ratio_interval(self.baseline, self.candidate)

    @property
    def significant(self) -> bool:
        """Whether the step-time ratio is outside the noise: its interval excludes 1 (assumed
        without an interval)."""
        interval = self.ratio_interval
        return interval is None or not interval[0] <= 1.0 <= interval[1]

    def ranked(self) -> list[BucketDelta]:
        """Named causes (idle excluded) in the direction of the gap, largest first."""
        sign = 1.0 if self.gap_ns >= 0 else -1.0
        named = [d for d in self.buckets if d.bucket != "idle"]
        return sorted(named, key=lambda d: (-sign * d.delta_ns, BUCKETS.index(d.bucket)))

    def slower_is_candidate(self) -> bool:
        return self.gap_ns >= 0

    def to_dict(self) -> dict[str, Any]:
        gap = self.gap_ns
        return {
            "report_version": "1",
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "comparison": {
                "baseline_step_ns": self.baseline_step_ns,
                "candidate_step_ns": self.candidate_step_ns,
                "baseline_median_step_ns": self.baseline.steady_step_ns,
                "candidate_median_step_ns": self.candidate.steady_step_ns,
                "ratio": self.ratio,
                "ratio_interval": list(self.ratio_interval) if self.ratio_interval else None,
                "significant": self.significant,
                "gap_ns": gap,
                "explained_share": self.explained_share,
                "unexplained_ns": self.unexplained_ns,
                "buckets": [
                    {"bucket": d.bucket, "baseline_ns": d.baseline_ns, "candidate_ns": d.candidate_ns,
                     "delta_ns": d.delta_ns, "share_of_gap": (d.delta_ns / gap if gap else 0.0)}
                    for d in self.buckets
                ],
                "ranked_causes": [d.bucket for d in self.ranked()],
                "families": [
                    {"family": fam, **{k: float(v) for k, v in row.items()}}
                    for fam, row in self.families.iterrows()
                ],
                "cold_start": {
                    "baseline_cold_step_ns": self.cold.baseline_cold_ns,
                    "candidate_cold_step_ns": self.cold.candidate_cold_ns,
                    "baseline_graph_build_ns": self.cold.baseline_graph_build_ns,
                    "candidate_graph_build_ns": self.cold.candidate_graph_build_ns,
                    "payback_steps": self.cold.payback_steps,
                    "note": self.cold.payback_note,
                },
            },
            "findings": [f.to_dict() for f in self.findings],
        }


BOOTSTRAP_RESAMPLES = 2000
INTERVAL = 0.95


def steady_durations(diag: Diagnosis) -> np.ndarray:
    return diag.steps.table["duration"].to_numpy()[diag.steady_positions].astype(np.float64)


def ratio_interval(baseline: Diagnosis, candidate: Diagnosis) -> tuple[float, float] | None:
    """Percentile bootstrap of mean(candidate steps) / mean(baseline steps), steps resampled with
    replacement on each side independently (seed 0)."""
    base, cand = steady_durations(baseline), steady_durations(candidate)
    if len(base) < 2 or len(cand) < 2 or base.sum() <= 0:
        return None
    rng = np.random.default_rng(0)
    base_means = base[rng.integers(0, len(base), (BOOTSTRAP_RESAMPLES, len(base)))].mean(axis=1)
    cand_means = cand[rng.integers(0, len(cand), (BOOTSTRAP_RESAMPLES, len(cand)))].mean(axis=1)
    ratios = cand_means / np.maximum(base_means, 1.0)
    tail = (1.0 - INTERVAL) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def compare_paths(baseline: str | Path, candidate: str | Path) -> Comparison:
    return compare(diagnose(baseline), diagnose(candidate))


def compare(baseline: Diagnosis, candidate: Diagnosis) -> Comparison:
    a = baseline.steady_attribution()
    b = candidate.steady_attribution()
    # The buckets either report shows (communication only where a trace has collectives).
    shown = shown_buckets(baseline.communication is not None or candidate.communication is not None)
    buckets = [BucketDelta(bucket, a.get(bucket, 0.0), b.get(bucket, 0.0)) for bucket in shown]
    fam_a = op_families(baseline)
    fam_b = op_families(candidate)
    families = pd.concat([fam_a.add_prefix("baseline_"), fam_b.add_prefix("candidate_")], axis=1).fillna(0.0)
    families = families.reindex([f for f in FAMILIES if f in families.index])
    result = Comparison(baseline, candidate, buckets, families, _cold_start(baseline, candidate))
    from traceview.analyzers.rules import comparison_findings

    result.findings = comparison_findings(result)
    return result


def op_families(diag: Diagnosis) -> pd.DataFrame:
    """Per family, per steady step: top-level ops, compute time, host dispatch time per op."""
    ev = diag.timeline.events
    steady = diag.steps.in_steady(ev)
    n = max(len(diag.steady_positions), 1)
    codes, uniques = pd.factorize(op_names(ev))
    family = np.array([cat.op_family(str(u)) for u in uniques], dtype=object)[codes]
    family = np.where(_under_optimizer_scope(ev), "optimizer", family)
    inclusive = ev["dur"].to_numpy()

    family = _family_from_first_compute(ev, family, compute_ops(ev))
    top = steady & top_level_ops(ev)
    kind = ev["kind"].to_numpy()
    if diag.timeline.has_device:
        compute_rows = steady & (kind == Kind.KERNEL.value)
        launcher = ev["launcher"].astype(str).to_numpy()
        launcher_family = np.array([cat.op_family(x) if x else "" for x in launcher], dtype=object)
        compute_family = np.where(launcher_family != "", launcher_family, family)
        compute_time = inclusive
        compute_inside = np.zeros(len(ev), dtype=np.int64)  # device work does not block host dispatch
    else:
        compute_rows = steady & compute_ops(ev)
        compute_family = family
        compute_time = self_time(ev)  # on CPU an op computes during its self time
        compute_inside = _compute_inside_top(ev, compute_ops(ev), compute_time)
    rows = []
    for fam in FAMILIES:
        ops = top & (family == fam)
        comp = compute_rows & (compute_family == fam)
        count = int(ops.sum())
        dispatch = float((inclusive[ops] - compute_inside[ops]).sum())
        rows.append(
            {
                "family": fam,
                "ops_per_step": count / n,
                "compute_ns": float(compute_time[comp].sum()) / n,
                "dispatch_ns_per_op": dispatch / count if count else 0.0,
            }
        )
    frame = pd.DataFrame(rows).set_index("family")
    return frame[(frame != 0).any(axis=1)]


def _under_optimizer_scope(ev: pd.DataFrame) -> np.ndarray:
    """Rows inside (or being) torch's Optimizer.step / zero_grad annotations."""
    scope = np.array([n.startswith(_OPTIMIZER_SCOPE) for n in ev["name"].cat.categories] + [False])[
        ev["name"].cat.codes.to_numpy()]
    return nearest_ancestor(ev, np.arange(len(ev)), scope) >= 0


def _top_owner(ev: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """For each row, its top-level op ancestor (or itself if it is one); -1 when none."""
    return nearest_ancestor(ev, rows, top_level_ops(ev))


def _compute_inside_top(ev: pd.DataFrame, compute: np.ndarray, compute_time: np.ndarray) -> np.ndarray:
    """For each top-level op row, the summed compute (self) time of compute ops at or below it."""
    out = np.zeros(len(ev), dtype=np.int64)
    rows = np.flatnonzero(compute)
    owner = _top_owner(ev, rows)
    ok = owner >= 0
    np.add.at(out, owner[ok], compute_time[rows[ok]])
    return out


def _family_from_first_compute(ev: pd.DataFrame, family: np.ndarray, compute: np.ndarray) -> np.ndarray:
    """Top-level ops named generically (TF eager's TFE_Py_FastPathExecute_C) take the family of
    the first compute op they run."""
    rows = np.flatnonzero(compute)  # rows are in ts order, so the first hit per owner is the earliest
    owner = _top_owner(ev, rows)
    ok = owner >= 0
    first_of_owner = pd.Series(family[rows[ok]], index=owner[ok])
    first_of_owner = first_of_owner[~first_of_owner.index.duplicated(keep="first")]
    result = family.copy()
    generic = np.flatnonzero((family == "other") & top_level_ops(ev))
    found = first_of_owner.reindex(generic).to_numpy()
    has = pd.notna(found)
    result[generic[has]] = found[has]
    return result


def _cold_start(baseline: Diagnosis, candidate: Diagnosis) -> ColdStart:
    def cold_of(diag: Diagnosis) -> tuple[float | None, float]:
        table = diag.steps.table
        cold = np.flatnonzero(table["cold"].to_numpy())
        if not len(cold):
            return None, 0.0
        i = int(cold[0])
        return float(table["duration"].iloc[i]), float(diag.attribution.per_step["graph_build"].iloc[i])

    a_cold, a_build = cold_of(baseline)
    b_cold, b_build = cold_of(candidate)
    a_steady = sum(baseline.steady_attribution().values())
    b_steady = sum(candidate.steady_attribution().values())
    payback: float | None = None
    note = "no cold step in one or both traces"
    if a_cold is not None and b_cold is not None:
        extra_cold = b_cold - a_cold
        saving = a_steady - b_steady  # > 0 when the candidate is faster per steady step
        if extra_cold > 0 and saving > 0:
            payback = extra_cold / saving
            note = f"the candidate's larger cold step is paid back after {payback:.1f} steady steps"
        elif extra_cold < 0 and saving < 0:
            payback = -extra_cold / -saving
            note = f"the baseline's larger cold step is paid back after {payback:.1f} steady steps"
        elif extra_cold >= 0 and saving <= 0:
            note = "the candidate is slower both cold and steady: never paid back"
        else:
            note = "the candidate is faster both cold and steady: nothing to pay back"
    return ColdStart(a_cold, b_cold, a_build, b_build, payback, note)


def folder_comparisons(diagnoses: list[Diagnosis]) -> list[Comparison]:
    """When a folder holds traces of several frameworks (``traceview collect`` output), compare
    every non-torch trace with the torch baseline: the eager torch trace if there is one, else the
    first torch trace. Empty when the traces are all of one framework."""
    frameworks = {d.timeline.meta.framework for d in diagnoses}
    torch_traces = [d for d in diagnoses if d.timeline.meta.framework == "torch"]
    if len(frameworks) < 2 or not torch_traces:
        return []
    eager = [d for d in torch_traces if "eager" in Path(d.timeline.meta.source).as_posix()]
    baseline = (eager or torch_traces)[0]
    return [compare(baseline, d) for d in diagnoses if d.timeline.meta.framework != "torch"]
