"""XPlane classification helpers (readers/xplane_classify.py, and the nesting levels they walk:
arrays.child_levels) on small hand-made arrays."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from traceview import arrays
from traceview import categories as cat
from traceview.readers import xplane_classify


@pytest.mark.parametrize("deepest", [0, 1, 3, arrays._SCANNED_LEVELS, arrays._SCANNED_LEVELS + 1, 40])
def test_children_are_grouped_by_level_alike_either_way(deepest: int) -> None:
    """Scanned level by level (shallow nesting) or sorted (deep), the groups are the rows with a
    parent at each depth, in row order."""
    rng = np.random.default_rng(deepest)
    depth = rng.integers(0, deepest + 1, 10_000)
    parent = np.where(depth > 0, rng.integers(0, 10_000, len(depth)), -1)
    parent[rng.choice(len(depth), 100, replace=False)] = -1  # (a row at depth ≥ 1 whose parent was dropped)
    groups = arrays.child_levels(parent, depth)
    assert len(groups) == int(np.where(parent >= 0, depth, 0).max())
    for d, group in enumerate(groups, start=1):
        assert np.array_equal(group, np.flatnonzero((parent >= 0) & (depth == d)))


def test_api_copy_facts_take_each_correlation_ids_first_call() -> None:
    """Direction and bytes per correlation id come from the first host call of that id that has
    them, as a walk over the calls in row order finds them; device rows, rows without an id and
    rows without a name give nothing."""
    rng = np.random.default_rng(7)
    n = 400
    values = ["hipMemcpyHtoDAsync", "hipMemcpyDtoH", "hipLaunchKernel", "cuMemcpyPeerAsync", "hipMemcpyDtoDAsync"]
    codes = rng.integers(-1, len(values), n)
    names = pd.Categorical.from_codes(codes, categories=values)
    correlation = rng.integers(-1, 40, n)
    nbytes = np.where(rng.random(n) < 0.3, rng.integers(1, 1000, n), -1)
    is_device = rng.random(n) < 0.2
    expected_direction: dict[int, str] = {}
    expected_bytes: dict[int, int] = {}
    for row in range(n):
        if is_device[row] or correlation[row] < 0:
            continue
        m = cat.API_COPY_DIRECTION.search(str(names[row]))
        if m:
            expected_direction.setdefault(int(correlation[row]), xplane_classify._API_DIRECTION[m.group(1)])
        if nbytes[row] > 0:
            expected_bytes.setdefault(int(correlation[row]), int(nbytes[row]))
    direction, size = xplane_classify._api_copy_facts(names, correlation, nbytes, is_device)
    assert direction == expected_direction and size == expected_bytes
    assert expected_direction and expected_bytes  # (the draw has both)
