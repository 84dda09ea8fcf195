"""Array primitives the hot paths share, where numpy's general versions are slow on trace data.

numpy ≥ 2.3 answers ``np.unique`` on integers with a hash table; on the high-cardinality int64
arrays a trace produces (timestamps, ids) that is two orders of magnitude slower than sorting
(4.3 s against 0.03 s for 4 M timestamps). These versions sort.
"""

from __future__ import annotations

import numpy as np


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (``np.unique(values)``) by one sort and a neighbour compare."""
    if not len(values):
        return values.copy()
    ordered = np.sort(values, kind="stable")
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``: distinct sorted values and each row's index into them."""
    if not len(values):
        return values.copy(), np.zeros(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.empty(len(ordered), dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    inverse = np.empty(len(values), dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse
