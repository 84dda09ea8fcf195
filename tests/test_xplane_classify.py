"""XPlane classification helpers (readers/xplane_classify.py) on small hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest

from traceview.readers import xplane_classify


@pytest.mark.parametrize("deepest", [1, 3, 8, 9, 40])
def test_children_are_grouped_by_level_alike_either_way(deepest: int) -> None:
    rng = np.random.default_rng(deepest)
    rows = np.sort(rng.choice(10_000, 2_000, replace=False))
    level_of = rng.integers(1, deepest + 1, len(rows))
    groups = xplane_classify._by_level(rows, level_of)
    assert len(groups) == deepest
    for d, group in enumerate(groups, start=1):
        assert np.array_equal(group, rows[level_of == d])
