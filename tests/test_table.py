"""The column table the analyses read (traceview/table.py) and the array helpers that replace
pandas in a diagnosis (traceview/arrays.py), each checked against what pandas computes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from traceview.arrays import distinct_values, factorize, first_match, group_medians
from traceview.table import Labels, Table, code_type


def _labels() -> Labels:
    return Labels(np.array([1, 0, -1, 1, 2], dtype=np.int8), ["a", "b", "c"])


def test_labels_values_look_up_codes_and_leave_missing_as_none() -> None:
    labels = _labels()
    assert labels.values().tolist() == ["b", "a", None, "b", "c"]
    assert labels.at([4, 2]).tolist() == ["c", None]
    assert labels.isin(["b", "z"]).tolist() == [True, False, False, True, False]
    assert labels.take(np.array([True, False, False, False, True])).values().tolist() == ["b", "c"]


def test_labels_round_trip_through_a_pandas_categorical_sharing_codes() -> None:
    labels = _labels()
    categorical = labels.to_pandas()
    assert categorical.tolist()[:2] == ["b", "a"] and pd.isna(categorical[2])
    assert np.shares_memory(categorical.codes, labels.codes)
    back = Labels.from_pandas(pd.Series(categorical))
    assert back.values().tolist() == labels.values().tolist()


def test_codes_of_a_wider_type_are_narrowed_for_pandas() -> None:
    labels = Labels(np.array([0, 1], dtype=np.int64), ["x", "y"])
    assert labels.to_pandas().codes.dtype == code_type(2) == np.int8


def test_table_takes_rows_by_mask_positions_and_slice() -> None:
    table = Table({"n": np.arange(5), "s": _labels()})
    assert len(table.take(np.array([True, False, True, False, False]))) == 2
    assert table.take([3, 0])["n"].tolist() == [3, 0]
    assert table.take(slice(1, None, 2))["s"].values().tolist() == ["a", "b"]
    assert table.take(np.zeros(0, dtype=np.int64)).records() == []


def test_table_checks_lengths_and_counts_changes() -> None:
    table = Table({"n": np.arange(3)})
    before = table.version
    table["m"] = np.ones(3)
    assert table.version > before and table.columns == ("n", "m")
    with pytest.raises(ValueError):
        table["bad"] = np.ones(4)
    with pytest.raises(TypeError):
        table["list"] = [1, 2, 3]  # type: ignore[assignment]


def test_records_and_tuples_hold_python_values() -> None:
    table = Table({"n": np.array([1, 2]), "x": np.array([0.5, 1.5]), "s": Labels(np.array([0, 1]), ["p", "q"]),
                   "memcpy.H2D": np.array([3, 4])})
    records = table.records()
    assert records[0] == {"n": 1, "x": 0.5, "s": "p", "memcpy.H2D": 3} and type(records[0]["n"]) is int
    first = table.tuples()[0]
    assert (first.n, first.s) == (1, "p") and first[3] == 3  # (a column name that is no identifier: by position)
    assert Table.from_records([]).columns == () and len(Table.from_records([{"a": 1}, {"a": 2}])) == 2


def test_to_pandas_and_back_keep_every_column() -> None:
    table = Table({"n": np.arange(3), "s": Labels(np.array([2, 0, 1]), ["a", "b", "c"])})
    frame = table.to_pandas()
    assert list(frame.columns) == ["n", "s"] and isinstance(frame["s"].dtype, pd.CategoricalDtype)
    assert frame["s"].tolist() == ["c", "a", "b"]
    back = Table.from_pandas(frame)
    assert back["n"].tolist() == [0, 1, 2] and back["s"].values().tolist() == ["c", "a", "b"]


@pytest.mark.parametrize("seed", range(5))
def test_factorize_numbers_values_as_pandas_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-3, 40, size=300)
    codes, uniques = factorize(ints)
    expected_codes, expected_uniques = pd.factorize(ints)
    assert codes.tolist() == expected_codes.tolist() and uniques.tolist() == expected_uniques.tolist()
    words = np.array([None if v < 0 else f"w{v % 7}" for v in ints.tolist()], dtype=object)
    codes, uniques = factorize(words)
    expected_codes, expected_uniques = pd.factorize(words)
    assert codes.tolist() == expected_codes.tolist() and uniques.tolist() == list(expected_uniques)


def test_first_match_takes_the_first_of_equal_keys() -> None:
    keys = np.array([5, 3, 5, 9])
    values = np.array([10, 20, 30, 40])
    assert first_match(keys, values, np.array([5, 9, 4, 3]), -1).tolist() == [10, 40, -1, 20]
    assert first_match(keys[:0], values[:0], np.array([1]), -1).tolist() == [-1]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_groups", [6, 300])  # each group's middle values selected; all sorted at once
def test_group_medians_are_pandas_medians(seed: int, n_groups: int) -> None:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, size=50 * n_groups).astype(np.int16)
    values = rng.integers(0, 1000, size=len(groups))
    if seed % 2:
        values = values * 0.5  # (floats)
    keys, medians = group_medians(values, groups)
    expected = pd.Series(values).groupby(groups).median()
    assert keys.tolist() == expected.index.tolist() and medians.tolist() == expected.tolist()


def test_distinct_values_are_the_categories_in_use() -> None:
    assert distinct_values(_labels().take([0, 3, 4])) == ["b", "c"]
    assert distinct_values(np.array(["x", "y", "x"], dtype=object)) == ["x", "y"]


def test_a_wrong_key_says_what_the_table_takes() -> None:
    table = Table({"n": np.arange(2)})
    with pytest.raises(TypeError, match="by its name"):
        table[["n"]]  # type: ignore[index]
    with pytest.raises(KeyError, match="no column 'm'; the table has n"):
        table["m"]
    assert "<table" in table._repr_html_()
