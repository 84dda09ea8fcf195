"""Score the analysis against the ground-truth cases: ``python -m benchmarks.truth.score [--cases …] [--markdown]``.

For every ``cases/<case>/`` folder: ``traceview.diagnose`` the clean and the injected trace (and
``traceview.compare(clean, injected)`` for steady cases), then per bucket the growth from clean
to injected:

- steady window: mean ns per steady step (``Diagnosis.steady_attribution()``), injected − clean;
- cold window: the first step's buckets (``attribution.per_step`` row 0), injected − clean;
- ``between_steps``: mean gap between consecutive step windows (start[i+1] − end[i], pairs of
  steady steps), injected − clean.

A cause case is *right* when the bucket that grew most is the expected one, the first finding
graded high or moderate on the injected trace is the expected rule, and the expected bucket's
growth is within 0.75–1.25 of the cost (the one ``score_against`` names in ground_truth.json).
A two-cause case is right when the two buckets that grew most are its two expected buckets, its
first two actionable findings are their two rules (in either order: ranking them by size is the
report's own business, and two costs of similar size may fall either way), and each expected
bucket's growth is within 0.75–1.25 of that cause's own cost. A control is right when the two
kernel buckets agree within 2×. A same-program case (one unchanged program captured twice, each
capture its own process) is right when ``traceview.compare`` names no cause of a gap: no gap
finding graded high or moderate.

A hidden case (work beside the step that the step waits for little or none of) is right when
(a) the injected trace replayed without the expected finding's fix lands within ±15 % (or
±0.1 ms) of the clean twin's mean steady step — the clean twin is the fix — and (b) the expected
finding is graded no higher than the measured saving warrants: at most its row's grade
(analyzers/findings/table.py) of (injected − clean mean steady step, at least 0) / the injected
step. How hidden the work is — its bucket's time in the injected trace against the measured and
the predicted saving — is reported, not required. Exit status 1 when any case is wrong
(``--no-fail``: always 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
BETWEEN_STEPS = "between_steps"
RATIO_RANGE = (0.75, 1.25)
CONTROL_FACTOR = 2.0
ACTIONABLE = ("high", "moderate")


@dataclass
class CauseScore:
    """One cost of a two-cause case, against its bucket's growth."""

    expected_bucket: str
    expected_finding: str
    cost_ns: float
    cost_kind: str
    attributed_ns: float = float("nan")
    growth_rank: int = 0  # 1 = the bucket that grew most
    finding_rank: int = 0  # among the actionable findings; 0 = not among them

    @property
    def ratio(self) -> float:
        return self.attributed_ns / self.cost_ns if self.cost_ns else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"expected_bucket": self.expected_bucket, "expected_finding": self.expected_finding,
                "cost_ns": self.cost_ns, "cost_kind": self.cost_kind, "attributed_ns": self.attributed_ns,
                "ratio": self.ratio, "growth_rank": self.growth_rank, "finding_rank": self.finding_rank}


@dataclass
class Score:
    case: str
    kind: str
    expected_bucket: str
    expected_finding: str
    grew_most: str = ""
    first_finding: str = ""
    attributed_ns: float = float("nan")
    cost_ns: float = float("nan")
    cost_kind: str = ""
    growth: dict[str, float] = field(default_factory=dict)
    compare_top: str = ""
    kernel_a_ns: float = float("nan")
    kernel_b_ns: float = float("nan")
    error: str = ""
    causes: list[CauseScore] = field(default_factory=list)  # two-cause cases: each cost
    step_a_ns: float = float("nan")  # mean steady step of the clean / injected trace (same-program cases)
    step_b_ns: float = float("nan")
    compare_ratio: float = float("nan")  # candidate / baseline mean steady step
    gap_causes: list[str] = field(default_factory=list)  # the comparison's actionable findings (same-program cases)
    whatif: WhatIfScore | None = None  # the injected trace replayed without the cause, against the clean twin
    hidden: HiddenScore | None = None  # hidden cases: the finding's grade against the measured saving

    @property
    def ratio(self) -> float:
        if self.kind == "control":
            lo, hi = sorted((self.kernel_a_ns, self.kernel_b_ns))
            return hi / lo if lo > 0 else float("inf")
        return self.attributed_ns / self.cost_ns if self.cost_ns else float("nan")

    @property
    def right(self) -> bool:
        if self.error:
            return False
        if self.kind == "control":
            return self.ratio <= CONTROL_FACTOR
        if self.kind == "same":
            return not self.gap_causes
        if self.kind == "hidden":
            return self.hidden is not None and self.hidden.right
        if self.causes:
            n = len(self.causes)
            return all(1 <= c.growth_rank <= n and 1 <= c.finding_rank <= n
                       and RATIO_RANGE[0] <= c.ratio <= RATIO_RANGE[1] for c in self.causes)
        return (
            self.grew_most == self.expected_bucket
            and self.first_finding == self.expected_finding
            and RATIO_RANGE[0] <= self.ratio <= RATIO_RANGE[1]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case, "kind": self.kind, "expected_bucket": self.expected_bucket,
            "expected_finding": self.expected_finding, "grew_most": self.grew_most,
            "first_finding": self.first_finding, "attributed_ns": self.attributed_ns,
            "cost_ns": self.cost_ns, "cost_kind": self.cost_kind, "ratio": self.ratio,
            "right": self.right, "growth_ns": self.growth, "compare_top": self.compare_top,
            "kernel_a_ns": self.kernel_a_ns, "kernel_b_ns": self.kernel_b_ns, "error": self.error,
            "causes": [c.to_dict() for c in self.causes], "step_a_ns": self.step_a_ns, "step_b_ns": self.step_b_ns,
            "compare_ratio": self.compare_ratio, "gap_causes": self.gap_causes,
            "whatif": self.whatif.to_dict() if self.whatif is not None else None,
            "hidden": self.hidden.to_dict() if self.hidden is not None else None,
        }


# What-if score: the injected trace's steady step replayed without the named cause(s) against the
# clean twin's measured step (the clean twin is the fix): right within this share, or this many ns.
WHATIF_SHARE = 0.15
WHATIF_NS = 100_000
# A case is a removal where the clean twin holds at most this share of the injected twin's time in
# the causes replayed away; beyond it the fix removes only the added part of a cause the program
# keeps (tiny ops added to a step that dispatches its own), and the replay of the whole cause is
# an upper bound of what that fix saves.
REMOVAL_LEFT = 0.1


@dataclass
class WhatIfScore:
    """A case's what-if prediction against the measured fix."""

    removes: tuple[str, ...]  # the causes replayed away (the expected findings' fixes)
    kind: str  # "removal", "upper bound", "not a removal" or "hidden" (a hidden case's work)
    reason: str = ""  # why a case is no removal
    injected_ns: float = float("nan")  # the injected trace's mean steady step
    predicted_ns: float = float("nan")  # … replayed without the causes
    target_ns: float = float("nan")  # the clean twin's measured step: its trace's mean steady step
    rest_change: float = float("nan")  # how much the rest of the step (all but the causes) differs
    # between the two captures, as a share of the clean step: what no replay of the injected trace sees
    unsupported_ns: float = float("nan")  # waits the trace cannot tie to their work, kept (mean per step)

    @property
    def ratio(self) -> float:
        """Predicted / measured step."""
        return self.predicted_ns / self.target_ns if self.target_ns else float("nan")

    @property
    def saving_ratio(self) -> float:
        """Predicted / measured saving (the injected step less each)."""
        measured = self.injected_ns - self.target_ns
        return (self.injected_ns - self.predicted_ns) / measured if measured else float("nan")

    @property
    def within(self) -> bool:
        return abs(self.ratio - 1.0) <= WHATIF_SHARE or abs(self.predicted_ns - self.target_ns) <= WHATIF_NS

    def to_dict(self) -> dict[str, Any]:
        return {"removes": list(self.removes), "kind": self.kind, "reason": self.reason,
                "injected_ns": self.injected_ns, "predicted_ns": self.predicted_ns, "target_ns": self.target_ns,
                "ratio": self.ratio, "saving_ratio": self.saving_ratio, "within": self.within, "rest_change": self.rest_change, "unsupported_ns": self.unsupported_ns}


GRADE_ORDER = {"high": 2, "moderate": 1, "none": 0, "skipped": 0}


@dataclass
class HiddenScore:
    """A hidden case: the replay without the cause against the clean twin (``whatif``), and the
    expected finding's grade against the saving the two traces measure."""

    whatif: WhatIfScore
    bucket: str  # the expected bucket: where the trace puts the hidden work's time
    bucket_ns: float = float("nan")  # its mean per steady step in the injected trace
    finding_grade: str = "none"  # the expected finding's grade on the injected trace (none: not listed)
    finding_saving_ns: float = float("nan")  # the finding's own "fixing this" (Finding.predicted_saving_ns)
    allowed_grade: str = "none"  # its row's grade of the measured saving's share of the injected step
    work_ns: float = float("nan")  # the work on its own, unprofiled (exposed − clean; ground_truth.json)
    saving_unprofiled_ns: float = float("nan")  # what removing it saves without the profiler (injected − clean)

    @property
    def measured_saving_ns(self) -> float:
        """What the fix saves in the traces: injected − clean mean steady step, at least 0."""
        return max(self.whatif.injected_ns - self.whatif.target_ns, 0.0)

    @property
    def predicted_saving_ns(self) -> float:
        return self.whatif.injected_ns - self.whatif.predicted_ns

    @property
    def whatif_right(self) -> bool:
        """(a): the replay without the cause lands on the clean twin."""
        return self.whatif.within

    @property
    def grade_right(self) -> bool:
        """(b): the finding is graded no higher than the measured saving warrants."""
        return GRADE_ORDER.get(self.finding_grade, 0) <= GRADE_ORDER[self.allowed_grade]

    @property
    def right(self) -> bool:
        return self.whatif_right and self.grade_right

    def to_dict(self) -> dict[str, Any]:
        return {"bucket": self.bucket, "bucket_ns": self.bucket_ns, "measured_saving_ns": self.measured_saving_ns,
                "predicted_saving_ns": self.predicted_saving_ns, "finding_grade": self.finding_grade,
                "finding_saving_ns": self.finding_saving_ns, "allowed_grade": self.allowed_grade,
                "work_ns": self.work_ns, "saving_unprofiled_ns": self.saving_unprofiled_ns,
                "whatif_right": self.whatif_right, "grade_right": self.grade_right, "right": self.right}


def score_hidden(truth: dict[str, Any], injected: Any, whatif: WhatIfScore) -> HiddenScore:
    """A hidden case's finding, graded against what its fix measurably saves (the two traces)."""
    from traceview.analyzers.findings.table import DIAGNOSIS_FINDINGS

    spec = truth["case"]
    rule = spec["expected_finding"]
    row = next(r for r in DIAGNOSIS_FINDINGS if r.name == rule)
    bucket = spec["expected_bucket"]
    h = HiddenScore(whatif, bucket)
    h.bucket_ns = injected.steady_attribution().get(bucket, injected.steady_details().get(bucket, 0.0))
    finding = next((f for f in injected.findings if f.rule == rule), None)
    if finding is not None:
        h.finding_grade = finding.grade
        if finding.predicted_saving_ns is not None:
            h.finding_saving_ns = float(finding.predicted_saving_ns)
    share = h.measured_saving_ns / whatif.injected_ns if whatif.injected_ns else 0.0
    h.allowed_grade = row.grade(share)
    work = truth.get("hidden_work", {})
    h.work_ns = float(work.get("work_unprofiled_ns") or float("nan"))
    h.saving_unprofiled_ns = float(work.get("saving_unprofiled_ns") or float("nan"))
    return h


def score_whatif(folder: Path, truth: dict[str, Any], clean: Any, injected: Any) -> WhatIfScore | None:
    """The injected trace replayed without the case's cause(s) (each expected finding's fix)
    against the clean twin's measured step; None for a case that is no steady-step cause."""
    import traceview
    from traceview.analyzers.findings.table import DIAGNOSIS_FINDINGS

    spec = truth["case"]
    if spec["window"] != "steady" or spec.get("kind", "cause") not in ("cause", "two-cause", "hidden"):
        return None
    rules = [c["expected_finding"] for c in truth.get("causes", [])] or [spec["expected_finding"]]
    rows = {row.name: row for row in DIAGNOSIS_FINDINGS}
    fixes = tuple(rows[rule].fix for rule in rules if rule in rows)
    if len(fixes) != len(rules) or not all(fixes):
        missing = [rule for rule in rules if rule not in rows or not rows[rule].fix]
        return WhatIfScore((), "not a removal",
                           "; ".join(f"{rule}: {rows[rule].no_fix if rule in rows else 'no finding row'}"
                                     for rule in missing))
    steady_in, steady_clean = injected.steady_attribution(), clean.steady_attribution()
    details_in, details_clean = injected.steady_details(), clean.steady_details()

    def held(buckets: dict[str, float], details: dict[str, float], cause: str) -> float:
        return buckets.get(cause, details.get(cause, 0.0))

    removed_in = sum(held(steady_in, details_in, c) for c in fixes)
    removed_clean = sum(held(steady_clean, details_clean, c) for c in fixes)
    what = traceview.whatif(_trace(folder, truth, "injected"), without=list(fixes))
    if spec.get("kind") == "hidden":
        # Scored on the step alone: what removing hidden work saves is ~0, no ratio of savings.
        w = WhatIfScore(fixes, "hidden")
    else:
        w = WhatIfScore(fixes, "removal" if removed_clean <= REMOVAL_LEFT * removed_in else "upper bound")
    if w.kind == "upper bound":
        w.reason = (f"the clean twin keeps {_ms(removed_clean)} a step of {', '.join(fixes)}: the fix removes the "
                    "added part, the replay all of it")
    w.injected_ns = sum(steady_in.values())
    w.predicted_ns = what.predicted_step_ns
    w.unsupported_ns = what.unsupported_ns
    clean_ns = sum(steady_clean.values())
    w.rest_change = ((w.injected_ns - removed_in) - (clean_ns - removed_clean)) / clean_ns if clean_ns else float("nan")
    # The clean trace's steady step, measured by the same profiler with the same options as the
    # injected one: both sides' profiler costs alike, where an unprofiled step would leave the
    # injected side's in the prediction.
    w.target_ns = clean_ns
    return w


def case_folders(names: str | None = None) -> list[Path]:
    """Case folders that hold a ground_truth.json, by name."""
    if not CASES_DIR.is_dir():
        return []
    found = sorted(p.parent for p in CASES_DIR.glob("*/ground_truth.json") if not p.parent.name.startswith("."))
    if names:
        wanted = {n.strip() for n in names.split(",") if n.strip()}
        found = [p for p in found if p.name in wanted]
    return found


TRACE_GLOBS = ("*.pt.trace.json.gz", "*.pt.trace.json", "plugins/profile/*/*.xplane.pb",
               "plugins/profile/*/*.xplane.pb.gz")


def _trace(folder: Path, truth: dict[str, Any], variant: str) -> Path:
    """The variant's trace file (a TF logdir resolves to the xplane.pb inside it)."""
    path = folder / truth["profiled"][variant]["trace"]
    if path.is_dir():
        found = sorted(p for pattern in TRACE_GLOBS for p in path.glob(pattern))
        if len(found) != 1:
            raise FileNotFoundError(f"{path}: expected one trace file, found {len(found)}")
        path = found[0]
    return path


def _gap_mean(diag: Any) -> float:
    """Mean gap between consecutive step windows, over pairs of consecutive steady steps."""
    table = diag.steps.table
    order = np.argsort(table["start"], kind="stable")
    starts, ends = table["start"][order].astype(float), table["end"][order].astype(float)
    if len(starts) < 2:
        return 0.0
    steady = set(int(i) for i in diag.steady_positions)
    pairs = [i for i in range(len(starts) - 1) if i in steady and i + 1 in steady] or list(range(len(starts) - 1))
    return float(np.mean([starts[i + 1] - ends[i] for i in pairs]))


def _window_buckets(diag: Any, window: str) -> dict[str, float]:
    steady = diag.steady_attribution()
    if window == "cold":
        per = diag.attribution.per_step
        return {b: float(per[b][0]) for b in steady}
    return dict(steady)


def score_case(folder: Path) -> Score:
    import traceview

    truth = json.loads((folder / "ground_truth.json").read_text())
    spec = truth["case"]
    s = Score(spec["name"], spec.get("kind", "cause"), spec["expected_bucket"], spec["expected_finding"])
    try:
        if s.kind == "same":
            cmp = traceview.compare(_trace(folder, truth, "clean"), _trace(folder, truth, "injected"))
            s.compare_ratio = cmp.ratio
            s.step_a_ns, s.step_b_ns = cmp.baseline_step_ns, cmp.candidate_step_ns
            s.gap_causes = [f.rule for f in cmp.findings if f.grade in ACTIONABLE]
            return s
        clean = traceview.diagnose(_trace(folder, truth, "clean"))
        injected = traceview.diagnose(_trace(folder, truth, "injected"))
        a, b = _window_buckets(clean, spec["window"]), _window_buckets(injected, spec["window"])
        s.growth = {k: b[k] - a.get(k, 0.0) for k in b}
        s.growth[BETWEEN_STEPS] = _gap_mean(injected) - _gap_mean(clean)
        grown = sorted(s.growth, key=lambda k: -s.growth[k])  # (stable: ties keep the bucket order)
        actionable = [f.rule for f in injected.findings if f.grade in ACTIONABLE]
        s.grew_most = grown[0]
        s.first_finding = actionable[0] if actionable else ""
        s.attributed_ns = s.growth.get(s.expected_bucket, 0.0)
        s.cost_ns = float(truth["score"]["cost_ns"] or float("nan"))
        s.cost_kind = truth["score"]["against"]
        for cause in truth.get("causes", []):
            bucket, rule = cause["expected_bucket"], cause["expected_finding"]
            s.causes.append(CauseScore(
                bucket, rule, float(cause["score"]["cost_ns"] or float("nan")), cause["score"]["against"],
                attributed_ns=s.growth.get(bucket, 0.0), growth_rank=grown.index(bucket) + 1 if bucket in grown else 0,
                finding_rank=actionable.index(rule) + 1 if rule in actionable else 0))
        s.kernel_a_ns, s.kernel_b_ns = a.get("kernel", 0.0), b.get("kernel", 0.0)
        s.whatif = score_whatif(folder, truth, clean, injected)
        if s.kind == "hidden":
            if s.whatif is None or not s.whatif.removes:
                raise ValueError(f"a hidden case's finding {s.expected_finding} has no fix to replay")
            s.hidden = score_hidden(truth, injected, s.whatif)
        if spec["window"] == "steady":
            cmp = traceview.compare(_trace(folder, truth, "clean"), _trace(folder, truth, "injected"))
            ranked = getattr(cmp, "ranked", None)
            if callable(ranked):
                top = ranked()
                s.compare_top = str(getattr(top[0], "bucket", "")) if top else ""
    except Exception as err:  # a case the analysis cannot read is a wrong case, not a crash
        s.error = f"{type(err).__name__}: {err}"
    return s


def _ms(ns: float) -> str:
    return "—" if ns != ns else f"{ns / 1e6:.2f} ms"


def render(scores: list[Score], markdown: bool) -> str:
    causes = [s for s in scores if s.kind not in ("control", "same", "hidden") and not s.causes]
    hidden = [s for s in scores if s.kind == "hidden"]
    same = [s for s in scores if s.kind == "same"]
    pairs = [s for s in scores if s.causes]
    controls = [s for s in scores if s.kind == "control"]
    head = ["case", "expected bucket", "grew most", "first finding", "attributed", "cost", "ratio", "right?"]
    rows = [
        [s.case, s.expected_bucket, s.grew_most or "—", s.first_finding or "—", _ms(s.attributed_ns),
         f"{_ms(s.cost_ns)} ({s.cost_kind})" if s.cost_kind else "—", f"{s.ratio:.2f}",
         "yes" if s.right else ("ERROR" if s.error else "no")]
        for s in causes
    ]
    chead = ["control", "kernel A (clean)", "kernel B (other)", "ratio", "within 2×?"]
    crows = [[s.case, _ms(s.kernel_a_ns), _ms(s.kernel_b_ns), f"{s.ratio:.2f}",
              "yes" if s.right else ("ERROR" if s.error else "no")] for s in controls]
    out = [_table(head, rows, markdown), "", f"{sum(s.right for s in causes)}/{len(causes)} right"]
    if not causes and hidden:
        out = []  # (only hidden cases asked for: no empty table of cause cases)
    if pairs:
        phead = ["two causes", "expected bucket", "growth rank", "finding rank", "attributed", "cost", "ratio",
                 "right?"]
        prows = [[s.case if i == 0 else "", c.expected_bucket, str(c.growth_rank or "—"), str(c.finding_rank or "—"),
                  _ms(c.attributed_ns), f"{_ms(c.cost_ns)} ({c.cost_kind})", f"{c.ratio:.2f}",
                  ("yes" if s.right else ("ERROR" if s.error else "no")) if i == 0 else ""]
                 for s in pairs for i, c in enumerate(s.causes)]
        out += ["", _table(phead, prows, markdown), "", f"{sum(s.right for s in pairs)}/{len(pairs)} two-cause cases right"]
    if controls:
        out += ["", _table(chead, crows, markdown), "",
                f"controls: {sum(s.right for s in controls)}/{len(controls)} within {CONTROL_FACTOR:g}×"]
    if same:
        shead = ["same program", "step A", "step B", "ratio", "causes named", "none named?"]
        srows = [[s.case, _ms(s.step_a_ns), _ms(s.step_b_ns), f"{s.compare_ratio:.2f}",
                  ", ".join(s.gap_causes) or "—", "yes" if s.right else ("ERROR" if s.error else "no")] for s in same]
        out += ["", _table(shead, srows, markdown), "",
                f"same program: {sum(s.right for s in same)}/{len(same)} with no cause named"]
    if hidden:
        out += ([""] if out else []) + [_table(*_hidden_table(hidden), markdown), "", _hidden_summary(hidden)]
    replayed = [s for s in scores if s.whatif is not None and s.kind != "hidden"]
    if replayed:
        whead = ["what-if", "removes", "kind", "injected", "predicted", "measured fix", "step ratio", "saving ratio",
                 "rest of step", "within?"]
        wrows = [[s.case, "+".join(w.removes) or "—", w.kind] + (
                 [_ms(w.injected_ns), _ms(w.predicted_ns), _ms(w.target_ns), f"{w.ratio:.2f}", f"{w.saving_ratio:.2f}",
                  f"{w.rest_change:+.0%}", "yes" if w.within else "no"] if w.removes else ["—"] * 7)
                 for s in replayed for w in [s.whatif]]
        removals = [s.whatif for s in replayed if s.whatif.kind == "removal"]
        bounds = [s.whatif for s in replayed if s.whatif.kind == "upper bound"]
        savings = sum(RATIO_RANGE[0] <= w.saving_ratio <= RATIO_RANGE[1] for w in removals)
        out += ["", _table(whead, wrows, markdown), "",
                f"what-if: {sum(w.within for w in removals)}/{len(removals)} removals within ±{WHATIF_SHARE:.0%} "
                f"(or ±{WHATIF_NS / 1e6:g} ms) of the measured fix; the saving within {RATIO_RANGE[0]}–"
                f"{RATIO_RANGE[1]} of the measured one in {savings}/{len(removals)}; {len(bounds)} upper bounds "
                f"({sum(w.predicted_ns <= w.target_ns * (1 + WHATIF_SHARE) for w in bounds)} at or below the fix "
                f"within ±{WHATIF_SHARE:.0%}), {len(replayed) - len(removals) - len(bounds)} not removals"]
    errors = [s for s in scores if s.error]
    for s in errors:
        out.append(f"{s.case}: {s.error}")
    return "\n".join(out)


def _hidden_table(hidden: list[Score]) -> tuple[list[str], list[list[str]]]:
    """The hidden cases: where the trace puts the work and how much, what its fix saves measured
    and predicted, and the two conditions (a) what-if, (b) grade."""
    head = ["hidden", "bucket", "in bucket", "work (unprofiled)", "saving unprofiled", "saving measured",
            "saving predicted", "predicted / clean step", "(a) what-if", "finding (allowed)", "(b) grade", "right?"]
    rows = []
    for s in hidden:
        h = s.hidden
        if h is None:
            rows.append([s.case, s.expected_bucket] + ["—"] * 9 + ["ERROR" if s.error else "no"])
            continue
        w = h.whatif
        rows.append([s.case, h.bucket, _ms(h.bucket_ns), _ms(h.work_ns), _ms(h.saving_unprofiled_ns),
                     _ms(h.measured_saving_ns), _ms(h.predicted_saving_ns),
                     f"{_ms(w.predicted_ns)} / {_ms(w.target_ns)} ({w.ratio:.2f})", "yes" if h.whatif_right else "no",
                     f"{s.expected_finding} {h.finding_grade} ({h.allowed_grade})", "yes" if h.grade_right else "no",
                     "yes" if s.right else ("ERROR" if s.error else "no")])
    return head, rows


def _hidden_summary(hidden: list[Score]) -> str:
    scored = [s.hidden for s in hidden if s.hidden is not None]
    return (f"hidden: {sum(s.right for s in hidden)}/{len(hidden)} right; (a) the replay without the cause within "
            f"±{WHATIF_SHARE:.0%} (or ±{WHATIF_NS / 1e6:g} ms) of the clean twin in {sum(h.whatif_right for h in scored)}"
            f"/{len(hidden)}; (b) the finding graded no higher than the measured saving warrants in "
            f"{sum(h.grade_right for h in scored)}/{len(hidden)}")


def _table(head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def score_all(names: str | None = None) -> list[Score]:
    return [score_case(folder) for folder in case_folders(names)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", help="comma-separated case names (default: every case folder)")
    ap.add_argument("--markdown", action="store_true", help="markdown tables (for the README)")
    ap.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    ap.add_argument("--no-fail", action="store_true", help="exit 0 even when cases are wrong")
    args = ap.parse_args(argv)
    scores = score_all(args.cases)
    if not scores:
        print(f"no cases under {CASES_DIR}; run python -m benchmarks.truth.generate first")
        return 0
    if args.json:
        print(json.dumps([s.to_dict() for s in scores], indent=1))
    else:
        print(render(scores, args.markdown))
    return 0 if args.no_fail or all(s.right for s in scores) else 1


if __name__ == "__main__":
    sys.exit(main())
