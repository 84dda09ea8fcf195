"""Array primitives that stand in for a plainer numpy spelling give what that spelling gives."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview.arrays import at_rows, codes_matching
from traceview.results import Steps


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-100, 100), min_size=1, max_size=30), st.data())
def test_at_rows_is_indexing_with_none_as_the_first_row(values: list[int], data: st.DataObject) -> None:
    table = np.array(values, dtype=np.int64)
    rows = np.array(data.draw(st.lists(st.integers(-1, len(values) - 1), max_size=40)), dtype=np.int64)
    assert np.array_equal(at_rows(table, rows), table[np.maximum(rows, 0)])
    assert at_rows(table, rows).dtype == table.dtype


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=12), st.data())
def test_in_steady_is_the_steady_steps_looked_up(cold: list[bool], data: st.DataObject) -> None:
    # (Few steps left out of the steady state are compared one by one; many, looked up in a table.)
    steps = Steps(table=pd.DataFrame({"cold": cold}), rule="markers", rule_detail="")
    step = np.array(data.draw(st.lists(st.integers(-1, len(cold) - 1), max_size=60)), dtype=np.int32)
    table = np.zeros(len(cold) + 1, dtype=bool)  # (the last entry: step -1)
    table[steps.steady_positions] = True
    assert np.array_equal(steps.in_steady(pd.DataFrame({"step": step})), table[step])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=10), st.data())
def test_codes_matching_is_the_table_looked_up(hit: list[bool], data: st.DataObject) -> None:
    # (Up to three marked codes are compared one by one; more, looked up in a table.)
    codes = np.array(data.draw(st.lists(st.integers(-1, len(hit) - 1), max_size=60)), dtype=np.int8)
    table = np.array([*hit, False])  # (the last entry: code -1, missing)
    assert np.array_equal(codes_matching(codes, np.array(hit)), table[codes])


@given(st.lists(st.tuples(st.integers(-10**12, 10**12), st.integers(0, 10**6)), max_size=40),
       st.integers(-10, 10**6), st.integers(1, 7))
def test_rows_at_least_is_the_length_test_a_chunk_at_a_time(pieces: list[tuple[int, int]], length: int,
                                                            chunk: int) -> None:
    import pytest

    from traceview import arrays

    start = np.array([s for s, _ in pieces], dtype=np.int64)
    end = start + np.array([n for _, n in pieces], dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrays, "CHUNK_ROWS", chunk)
        found = arrays.rows_at_least(start, end, length)
    assert found.dtype == np.int64
    assert found.tolist() == np.flatnonzero(end - start >= length).tolist()


@given(st.lists(st.integers(0, 63), max_size=60), st.booleans())
def test_unique_small_range_is_numpy_unique(values: list[int], sorting: bool) -> None:
    import pytest

    from traceview import arrays

    column = np.array(values, dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrays, "FLAG_TABLE_MAX", 0 if sorting else arrays.FLAG_TABLE_MAX)  # (both ways)
        found = arrays.unique_small_range(column, 64)
    assert found.dtype == np.int64 and found.tolist() == np.unique(column).tolist()
