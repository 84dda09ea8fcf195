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
finding graded high or moderate. Exit status 1 when any case is wrong (``--no-fail``: always 0).
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
        }


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
    causes = [s for s in scores if s.kind not in ("control", "same") and not s.causes]
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
    errors = [s for s in scores if s.error]
    for s in errors:
        out.append(f"{s.case}: {s.error}")
    return "\n".join(out)


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
