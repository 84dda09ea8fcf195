"""The findings' table: every rule has one row, grades with it, and the reports and docs say its
thresholds in the row's words."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import traceview
from tests.conftest import gen_docs
from traceview.analyzers.findings import table
from traceview.analyzers.findings.comparison import rephrased as comparison_rephrased
from traceview.analyzers.findings.diagnosis import RULES, SUMMARIES, rephrased
from traceview.analyzers.findings.spec import FindingSpec, Thresholds

ROOT = Path(__file__).resolve().parents[1]
TORCH_EAGER = ROOT / "sample_traces" / "mlp2" / "torch-eager"


def test_every_diagnosis_row_has_one_rule_and_one_sentence_in_the_table_order():
    assert [row for row, _ in RULES] == list(table.DIAGNOSIS_FINDINGS)
    assert set(SUMMARIES) == {row.name for row in table.DIAGNOSIS_FINDINGS}
    assert len({row.name for row in table.DIAGNOSIS_FINDINGS}) == len(table.DIAGNOSIS_FINDINGS)


@pytest.mark.parametrize(("thresholds", "value", "grade"), [
    (Thresholds(0.03, 0.15), 0.0299, "none"), (Thresholds(0.03, 0.15), 0.03, "moderate"),
    (Thresholds(0.03, 0.15), 0.15, "high"),
    (Thresholds(0.8, 0.5, higher_is_worse=False), 0.8, "none"),
    (Thresholds(0.8, 0.5, higher_is_worse=False), 0.79, "moderate"),
    (Thresholds(0.8, 0.5, higher_is_worse=False), 0.49, "high"),
    (Thresholds(0.05, 0.5, strict=True), 0.05, "none"), (Thresholds(0.05, 0.5, strict=True), 0.051, "moderate"),
    (Thresholds(None, 0.15), 0.0, "moderate"), (Thresholds(None, 0.15), 0.2, "high"),
    (Thresholds(0.9, None, higher_is_worse=False), 0.95, "none"),
    (Thresholds(0.9, None, higher_is_worse=False), 0.1, "moderate"),
])
def test_a_row_grades_at_its_thresholds(thresholds, value, grade):
    assert thresholds.grade(value) == grade


def test_the_threshold_words_are_written_from_the_row():
    assert table.LAUNCH_BOUND.threshold_words == "≥ 3 % moderate, ≥ 15 % high (XProf kernel-launch verdict)"
    assert table.COLD_COMPILE.threshold_words == ("extra time ≥ 2 steady steps moderate, ≥ 10 high, when the cold "
                                                  "step builds graphs")
    assert table.MEMCPY.threshold_words == ("≥ 5 % moderate, ≥ 20 % high; any pageable copy is at least moderate "
                                            "(Nsight pageable-memcpy rule)")
    assert table.ANOMALY_DETECTION.threshold_words == "on: moderate; ≥ 15 % of the step: high"
    assert table.GAP_CAUSE.threshold_words == "> 5 % of the gap moderate, ≥ 50 % high"
    # A changed threshold changes the words the reports carry, with nothing else to edit.
    moved = dataclasses.replace(table.LAUNCH_BOUND, thresholds=Thresholds(0.05, 0.25))
    assert moved.threshold_words.startswith("≥ 5 % moderate, ≥ 25 % high")
    assert moved.grade(0.2) == "moderate" and table.LAUNCH_BOUND.grade(0.2) == "high"


def test_a_finding_carries_its_rows_words_and_the_skipped_form_what_the_rule_needs():
    diag = traceview.diagnose(TORCH_EAGER)
    by_rule = {f.rule: f for f in diag.findings}
    for row in table.DIAGNOSIS_FINDINGS:
        found = by_rule.get(row.name)
        if found is None:
            assert row.listed_only, row.name  # (only rows that say where they are listed may be missing)
            continue
        assert found.detects.startswith(row.detects)
        if found.grade == "skipped":
            assert found.summary == f"skipped: needs {row.needs}" and row.needs
        else:
            assert found.threshold == row.threshold_words
    # This CPU trace has no device: the rows that need one are skipped, with the same detects as when graded.
    assert by_rule["memcpy"].grade == "skipped" and by_rule["memcpy"].detects == table.MEMCPY.detects


def test_a_finding_summary_is_phrased_from_its_evidence_by_its_rule():
    diag = traceview.diagnose(TORCH_EAGER)
    launch = next(f for f in diag.findings if f.rule == "launch_bound")
    assert launch.summary.startswith("launch/dispatch overhead is 69.5 % of the step")
    changed = rephrased(dataclasses.replace(launch, evidence={**launch.evidence, "launch_overhead_share": 0.25}))
    assert changed.summary.startswith("launch/dispatch overhead is 25.0 % of the step")
    assert launch.to_dict()["summary"] == launch.summary


def test_a_comparison_finding_is_rephrased_by_its_rule_too():
    cmp = traceview.compare(TORCH_EAGER, ROOT / "sample_traces" / "mlp2" / "tf-eager")
    rows = {row.name: row for row in table.COMPARISON_FINDINGS}
    assert [f.rule for f in cmp.findings] == ["gap_launch_overhead", "gap_explained"]
    for finding in cmp.findings:
        assert comparison_rephrased(finding).summary == finding.summary
        assert finding.threshold == rows.get(finding.rule, table.GAP_CAUSE).threshold_words


def test_docs_findings_show_the_table():
    docs = gen_docs()
    doc = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    assert docs.render(doc, docs.FINDINGS_BLOCKS) == doc, "docs/findings.md is stale: run scripts/gen_docs.py"


def test_a_row_without_thresholds_refuses_to_grade():
    row = FindingSpec("x", "x", "x", None)
    with pytest.raises(ValueError):
        row.grade(0.5)
    assert row.threshold_words == ""


def test_a_new_row_and_its_rule_reach_every_report():
    """docs/architecture.md's "add a finding": a row and its rule, registered with its sentence,
    and every format shows the finding with the row's words (nothing else to edit)."""
    from traceview.analyzers.findings.diagnosis import found, rule
    from traceview.api import render

    row = FindingSpec("ops_per_step", "many framework ops a step", "framework ops per steady step",
                      Thresholds(10, 1000, percent=False))

    def summary(e, explains):  # noqa: ANN001, ANN202
        return f"{e['ops']:.0f} ops a step"

    def ops_per_step(diag):  # noqa: ANN001, ANN202
        return found(row, row.grade(diag.launch.ops_per_step), {"ops": diag.launch.ops_per_step}, "fuse them")

    rule(row, summary)(ops_per_step)
    try:
        diag = traceview.diagnose(TORCH_EAGER)
        new = next(f for f in diag.findings if f.rule == "ops_per_step")
        assert (new.grade, new.summary, new.threshold) == ("moderate", "21 ops a step", "≥ 10 moderate, ≥ 1000 high")
        for fmt in ("terminal", "md", "html", "json"):
            assert "21 ops a step" in render(diag, fmt), fmt
    finally:
        RULES.pop()
        del SUMMARIES["ops_per_step"]
