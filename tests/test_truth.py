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
