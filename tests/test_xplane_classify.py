"""XPlane classification helpers (readers/xplane_classify.py) on small hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest

from traceview.readers import xplane_classify


@pytest.mark.parametrize("deepest", [0, 1, 3, xplane_classify._SCANNED_LEVELS, xplane_classify._SCANNED_LEVELS + 1, 40])
def test_children_are_grouped_by_level_alike_either_way(deepest: int) -> None:
    """Scanned level by level (shallow nesting) or sorted (deep), the groups are the rows with a
    parent at each depth, in row order."""
    rng = np.random.default_rng(deepest)
    depth = rng.integers(0, deepest + 1, 10_000)
    parent = np.where(depth > 0, rng.integers(0, 10_000, len(depth)), -1)
    parent[rng.choice(len(depth), 100, replace=False)] = -1  # (a row at depth ≥ 1 whose parent was dropped)
    groups = xplane_classify.child_levels(parent, depth)
    assert len(groups) == int(np.where(parent >= 0, depth, 0).max())
    for d, group in enumerate(groups, start=1):
        assert np.array_equal(group, np.flatnonzero((parent >= 0) & (depth == d)))
