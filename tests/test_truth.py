"""The analysis against the ground-truth benchmark (benchmarks/truth): every committed case is right.

A case is right when the bucket that grew most from the clean to the injected trace is the
injected cause's bucket, the first actionable finding is the expected rule, and the attributed
growth is within 0.75–1.25 of the measured cost; a two-cause case, when both costs are found,
each at its size; a same-program case, when comparing its two captures names no cause
(benchmarks/truth/README.md).
"""

from __future__ import annotations

import pytest

from benchmarks.truth import score

FOLDERS = score.case_folders()

pytestmark = pytest.mark.skipif(not FOLDERS, reason="no ground-truth cases under benchmarks/truth/cases")


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_case_is_right(folder) -> None:
    s = score.score_case(folder)
    assert not s.error, s.error
    if s.kind == "control":
        assert s.right, f"kernel time {s.kernel_a_ns / 1e6:.2f} vs {s.kernel_b_ns / 1e6:.2f} ms differs more than 2x"
        return
    if s.kind == "same":
        assert s.right, (f"one program captured twice ({s.compare_ratio:.2f}x apart) named causes of a gap: "
                         f"{', '.join(s.gap_causes)}")
        return
    if s.causes:
        assert s.right, "; ".join(
            f"{c.expected_bucket}: growth rank {c.growth_rank or 'none'}, {c.expected_finding} finding rank "
            f"{c.finding_rank or 'none'}, attributed {c.attributed_ns / 1e6:.2f} ms of {c.cost_ns / 1e6:.2f} ms "
            f"({c.cost_kind}), ratio {c.ratio:.2f}" for c in s.causes)
        return
    assert s.right, (
        f"grew most: {s.grew_most} (expected {s.expected_bucket}); first finding: {s.first_finding or 'none'} "
        f"(expected {s.expected_finding}); attributed {s.attributed_ns / 1e6:.2f} ms of {s.cost_ns / 1e6:.2f} ms "
        f"({s.cost_kind}), ratio {s.ratio:.2f}"
    )


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_what_fixing_the_cause_saves_is_predicted(folder) -> None:
    """Where the clean twin is the removal of the case's cause, the injected trace replayed without
    it saves what the clean twin saves, within the attribution's own band (0.75–1.25); where the
    clean twin keeps part of the cause, the replay of all of it saves at least that much (an upper
    bound). The step itself is reported beside it (benchmarks/truth/README.md, the what-if table)."""
    s = score.score_case(folder)
    w = s.whatif
    if w is None or w.kind == "not a removal":
        pytest.skip("no steady-step cause the replay removes")
    assert w.predicted_ns < w.injected_ns, "the replay without the cause saves nothing"
    if w.kind == "removal":
        # Where the rest of the step (all but the cause) differs between the two captures by more
        # than the band, the measured fix holds that difference too (a contending thread that also
        # slowed the math): the band is widened by it, as no replay of the injected trace sees it.
        low, high = score.RATIO_RANGE
        if abs(w.rest_change) > high - 1.0:
            low, high = low - abs(w.rest_change) / 2, high + abs(w.rest_change) / 2
        assert low <= w.saving_ratio <= high, (
            f"replayed without {'+'.join(w.removes)}: {w.predicted_ns / 1e6:.2f} ms of {w.injected_ns / 1e6:.2f} ms, "
            f"saving {w.saving_ratio:.2f} of the clean twin's ({w.target_ns / 1e6:.2f} ms)")
    else:
        assert w.saving_ratio >= score.RATIO_RANGE[0], f"an upper bound that saves less than the fix: {w.saving_ratio:.2f}"


def _pair(first_ranks: tuple[int, int], second_ranks: tuple[int, int], ratios: tuple[float, float]) -> score.Score:
    """A scored two-cause case (growth rank, finding rank per cause), costs of 10 ms."""
    s = score.Score("pair", "cause", "input", "input_bound")
    for (growth, finding), ratio, (bucket, rule) in zip((first_ranks, second_ranks), ratios,
                                                         (("input", "input_bound"), ("host_compute", "host_compute"))):
        s.causes.append(score.CauseScore(bucket, rule, 10e6, "unprofiled", attributed_ns=ratio * 10e6,
                                         growth_rank=growth, finding_rank=finding))
    return s


def test_two_cause_rule() -> None:
    # Both causes in the top two, in either order, each at its size: right.
    assert _pair((1, 1), (2, 2), (1.0, 1.0)).right
    assert _pair((2, 1), (1, 2), (0.8, 1.2)).right
    # The second cause missed (third-largest growth, or no actionable finding), or misjudged in size: wrong.
    assert not _pair((1, 1), (3, 2), (1.0, 1.0)).right
    assert not _pair((1, 1), (2, 0), (1.0, 1.0)).right
    assert not _pair((1, 1), (2, 2), (1.0, 1.3)).right
    assert not _pair((1, 1), (2, 2), (0.7, 1.0)).right
