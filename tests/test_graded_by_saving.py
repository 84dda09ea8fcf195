"""A problem is graded by what its fix saves where that is milder than its measure, and the
reports then promise no more than the replay finds (docs/findings.md, "Graded by what the fix
saves")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from traceview.analyzers.findings.diagnosis import graded_by_saving
from traceview.analyzers.findings.table import INPUT_BOUND
from traceview.renderers.report import finding_lines
from traceview.results import Finding

STEP_NS = 10_000_000.0


def _input_bound(share: float, saving_share: float) -> Finding:
    """An input_bound finding on a 10 ms step whose input holds ``share`` of it and whose fix the
    replay says saves ``saving_share`` of it."""
    found = INPUT_BOUND.finding(INPUT_BOUND.grade(share), {"input_share": share}, "prefetch the next batch",
                                share * STEP_NS, f"the step waits for input for {share:.0%} of the step")
    return replace(found, predicted_step_ns=STEP_NS * (1 - saving_share), predicted_saving_ns=STEP_NS * saving_share,
                   prediction="the steps replayed along their recorded dependencies without input")


@pytest.mark.parametrize(("share", "saving", "grade", "measured"), [
    (0.30, 0.30, "high", ""),  # all of it on the critical path: as measured
    (0.30, 0.10, "moderate", "high"),  # a third of it: the saving's grade
    (0.30, 0.01, "none", "high"),  # hidden behind the step's work
    (0.10, 0.01, "none", "moderate"),
    (0.02, 0.00, "none", ""),  # no problem by its measure either: nothing to regrade
])
def test_the_milder_of_measure_and_saving(share: float, saving: float, grade: str, measured: str) -> None:
    graded = graded_by_saving(INPUT_BOUND, _input_bound(share, saving), STEP_NS, supported=True)
    assert (graded.grade, graded.measure_grade) == (grade, measured)
    assert graded.to_dict()["measure_grade"] == measured


def test_a_prediction_from_fewer_edges_keeps_the_measured_grade() -> None:
    found = _input_bound(0.30, 0.01)
    assert graded_by_saving(INPUT_BOUND, found, STEP_NS, supported=False) == found


def test_little_to_gain_carries_the_saving_and_no_advice() -> None:
    (hidden,) = finding_lines([graded_by_saving(INPUT_BOUND, _input_bound(0.30, 0.01), STEP_NS, True)], STEP_NS)
    assert not hidden.problem and hidden.label == "ok"
    assert hidden.text.startswith("little to gain: the step waits for input")
    assert hidden.advice == ""  # the advice would promise what the replay does not find
    assert hidden.fix.startswith("fixing this: ~9.9 ms a step (−1.0 %); graded by that, not by its share (HIGH)")
    (partly,) = finding_lines([graded_by_saving(INPUT_BOUND, _input_bound(0.30, 0.10), STEP_NS, True)], STEP_NS)
    assert partly.problem and partly.advice == "prefetch the next batch"
    assert "graded by that, not by its share (HIGH)" in partly.fix
    (plain,) = finding_lines([_input_bound(0.02, 0.0)], STEP_NS)
    assert plain.text.startswith("no problem: ") and plain.fix == ""


def test_every_format_shows_a_finding_graded_by_its_saving() -> None:
    """On a real trace whose pageable copies (at least moderate by the memcpy rule's floor) run
    beside the work that sets its length, the replay finds little to gain: every format says so,
    with the saving, and advises nothing."""
    import traceview

    from tests.conftest import cached_diagnosis, shared_trace

    diag = cached_diagnosis(shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz"))
    regraded = [f for f in diag.findings if f.measure_grade]
    assert regraded, "no finding graded by its saving"
    for finding in regraded:
        assert finding.grade in ("none", "moderate") and finding.predicted_saving_ns is not None
        assert finding.predicted_saving_ns < finding.explains_ns
    hidden = [f for f in regraded if f.grade == "none"]
    for fmt in ("terminal", "md", "html", "json"):
        text = " ".join(traceview.render(diag, fmt, width=100).split())
        for finding in hidden:
            if fmt == "json":
                assert f'"measure_grade": "{finding.measure_grade}"' in text
                continue
            assert f"{finding.rule}: little to gain" in text.replace("`", "").replace("</b>", "")
            assert "graded by that, not by its share" in text


def test_ranked_in_the_order_to_fix() -> None:
    """The fix that saves most alone first; the others by what they save once it is made, never
    above it (two lanes that each set the step: the second saves nothing alone, much after)."""
    from traceview.analyzers.findings.diagnosis import ranked

    first = replace(_input_bound(0.30, 0.20), rule="first", first_fix="input")
    beside = replace(_input_bound(0.30, 0.00), rule="beside", first_fix="input", predicted_saving_after_ns=0.25 * STEP_NS)
    overlapping = replace(_input_bound(0.30, 0.15), rule="overlapping", first_fix="input",
                          predicted_saving_after_ns=0.01 * STEP_NS)
    middle = replace(_input_bound(0.30, 0.05), rule="middle", first_fix="input", predicted_saving_after_ns=0.05 * STEP_NS)
    order = [f.rule for f in ranked([overlapping, middle, beside, first])]
    assert order == ["first", "beside", "middle", "overlapping"]
    assert beside.best_saving_ns == 0.25 * STEP_NS and overlapping.best_saving_ns == 0.15 * STEP_NS
