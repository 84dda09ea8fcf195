"""The analysis against the ground-truth benchmark (benchmarks/truth): every committed case is right.

A case is right when the bucket that grew most from the clean to the injected trace is the
injected cause's bucket, the first actionable finding is the expected rule, and the attributed
growth is within 0.75–1.25 of the measured cost (benchmarks/truth/README.md).
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
    assert s.right, (
        f"grew most: {s.grew_most} (expected {s.expected_bucket}); first finding: {s.first_finding or 'none'} "
        f"(expected {s.expected_finding}); attributed {s.attributed_ns / 1e6:.2f} ms of {s.cost_ns / 1e6:.2f} ms "
        f"({s.cost_kind}), ratio {s.ratio:.2f}"
    )
