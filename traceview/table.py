"""Column tables held as numpy arrays: the event table every analysis reads, without pandas.

A diagnosis reads each column of the event table as a whole array (times, durations, parents,
the codes of names and kinds) and never needs an index, alignment or missing-value handling from
a table library; what pandas adds is its import (a third of a diagnosis of a 54 MB trace on this
project's reference machine, ``benchmarks/README.md``) and a fixed cost on every column read.
So the table is a mapping of column names to arrays:

- a numeric column is a numpy array (possibly a read-only broadcast view of one value,
  ``arrays.one_value``);
- a string column is :class:`Labels`: integer codes into its distinct values, as pandas holds a
  categorical (codes -1 for a missing value), so that a rule on names is tested once per distinct
  name, and turning it into a pandas categorical copies nothing.

:meth:`Table.to_pandas` gives the pandas DataFrame that library callers get as
``Timeline.events``; pandas is imported there only (and by the XPlane reader, for its stats).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


class Labels:
    """A column of strings as codes into its distinct values (``categories``, an object array);
    code -1 is a missing value. The same layout as a pandas categorical (whose codes it can share)."""

    __slots__ = ("codes", "categories")

    def __init__(self, codes: np.ndarray, categories: Any) -> None:  # noqa: ANN401 - any sequence of values
        self.codes = codes
        self.categories = categories if isinstance(categories, np.ndarray) and categories.dtype == object \
            else _object_array(categories)

    def __len__(self) -> int:
        return len(self.codes)

    def __repr__(self) -> str:
        return f"Labels({len(self.codes)} rows, {len(self.categories)} categories)"

    def values(self) -> np.ndarray:
        """One value per row (an object array; None where missing)."""
        return self.at(slice(None))

    def at(self, rows: Any) -> np.ndarray:  # noqa: ANN401 - anything numpy indexes with
        """The values at ``rows`` (an object array; None where missing): the codes at those rows
        looked up, never the whole column's values."""
        codes = self.codes[rows]
        if not len(self.categories):
            return np.full(np.shape(codes), None, dtype=object)
        values = self.categories[np.maximum(codes, 0)]
        missing = codes < 0
        if missing.any():
            values = values.copy()
            values[missing] = None
        return values

    def isin(self, values: Sequence[Any]) -> np.ndarray:
        """Per row: whether its value is one of ``values`` (a missing value never is)."""
        hit = np.isin(self.categories, np.asarray(list(values), dtype=object))
        return np.append(hit, False)[self.codes]  # (the last entry: code -1)

    def take(self, rows: Any) -> Labels:  # noqa: ANN401 - anything numpy indexes with
        """The rows ``rows`` (positions or a mask), on the same categories."""
        return Labels(self.codes[rows], self.categories)

    def to_pandas(self) -> pd.Categorical:
        """The same column as a pandas categorical (its codes shared where their type allows)."""
        import pandas as pd

        dtype = pd.CategoricalDtype(pd.Index(self.categories, dtype=object))
        codes = self.codes
        if codes.dtype != code_type(len(self.categories)):
            codes = codes.astype(code_type(len(self.categories)))
        return pd.Categorical.from_codes(codes, dtype=dtype)

    @classmethod
    def from_pandas(cls, values: Any) -> Labels:  # noqa: ANN401 - a pandas categorical or categorical Series
        """The labels of a pandas categorical (or a categorical Series): its codes and categories."""
        values = getattr(values, "array", values)
        return cls(np.asarray(values.codes), np.asarray(values.categories, dtype=object))


Column = Union[np.ndarray, Labels]


class Table:
    """Named columns of one length: numpy arrays, or :class:`Labels` for strings. Columns keep
    the order they were added in; setting one replaces it (its length checked)."""

    __slots__ = ("_columns", "_length", "version")

    def __init__(self, columns: Mapping[str, Column] | None = None, length: int | None = None) -> None:
        self._columns: dict[str, Column] = {}
        self._length = length
        self.version = 0  # counts the changes, for views built from the table (Timeline.events)
        for name, column in (columns or {}).items():
            self[name] = column

    def __len__(self) -> int:
        return self._length or 0

    def __getitem__(self, name: str) -> Any:  # noqa: ANN401 - an array or Labels: the caller knows which
        if not isinstance(name, str):
            raise TypeError(f"a Table column is taken by its name, not by {type(name).__name__}: rows by "
                            ".take(rows), several columns from .to_pandas()")
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"no column {name!r}; the table has {', '.join(self._columns) or 'none'}") from None

    def __setitem__(self, name: str, column: Column) -> None:
        if not isinstance(column, (np.ndarray, Labels)):
            raise TypeError(f"table column {name!r}: a numpy array or Labels, not {type(column).__name__}")
        if self._length is None:
            self._length = len(column)
        elif len(column) != self._length:
            raise ValueError(f"table column {name!r} has {len(column)} rows, the table {self._length}")
        self._columns[name] = column
        self.version += 1

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(self._columns)

    def get(self, name: str, default: Any = None) -> Any:  # noqa: ANN401 - as __getitem__
        """The column ``name``, or ``default`` where the table has none."""
        return self._columns.get(name, default)

    def copy(self) -> Table:
        """A new table holding the same column arrays (setting a column of it leaves this one as it is)."""
        return Table(self._columns, len(self))

    def take(self, rows: Any) -> Table:  # noqa: ANN401 - positions or a mask
        """The rows ``rows`` of every column, as a new table."""
        taken = {name: column.take(rows) if isinstance(column, Labels) else column[rows]
                 for name, column in self._columns.items()}
        if isinstance(rows, slice):
            length = len(range(*rows.indices(len(self))))
        else:
            rows = np.asarray(rows)
            length = int(np.count_nonzero(rows)) if rows.dtype == bool else len(rows)
        return Table(taken, length)

    @classmethod
    def from_records(cls, rows: Sequence[Mapping[str, Any]]) -> Table:
        """A table of rows given as dicts with the same keys (no rows: no columns)."""
        if not rows:
            return cls({}, 0)
        return cls({name: np.array([row[name] for row in rows]) for name in rows[0]}, len(rows))

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts of Python values (numbers as int / float / bool, Labels as their values)."""
        names = list(self._columns)
        values = [(column.values() if isinstance(column, Labels) else column).tolist()
                  for column in self._columns.values()]
        return [dict(zip(names, row)) for row in zip(*values)] if names else []

    def row(self, position: int) -> dict[str, Any]:
        """One row as a dict of Python values."""
        return self.take([position]).records()[0]

    def tuples(self) -> list[Any]:
        """The rows as named tuples of Python values (fields: the column names, where they are
        identifiers; positional names otherwise)."""
        row = namedtuple("Row", self.columns, rename=True)  # type: ignore[misc]  # (fields known at run time)
        return [row(*record.values()) for record in self.records()]

    def to_pandas(self) -> pd.DataFrame:
        """The table as a pandas DataFrame (numeric columns shared, not copied; a range index)."""
        import pandas as pd

        data = {name: column.to_pandas() if isinstance(column, Labels) else column
                for name, column in self._columns.items()}
        # copy=False: each column stays its own array (no consolidation into one 2-D block).
        return pd.DataFrame(data, index=pd.RangeIndex(len(self)), copy=False)

    @classmethod
    def from_pandas(cls, frame: pd.DataFrame) -> Table:
        """A table of a DataFrame's columns (categoricals as Labels; the index is not kept)."""
        import pandas as pd

        columns: dict[str, Column] = {}
        for name in frame.columns:
            series = frame[name]
            if isinstance(series.dtype, pd.CategoricalDtype):
                columns[str(name)] = Labels.from_pandas(series)
            else:
                columns[str(name)] = series.to_numpy()
        return cls(columns, len(frame))

    def __repr__(self) -> str:
        return f"Table({len(self)} rows: {', '.join(self._columns)})"

    def _repr_html_(self) -> str:
        """A notebook shows the table as pandas shows a DataFrame."""
        return self.to_pandas()._repr_html_()


def code_type(n_categories: int) -> type:
    """The narrowest integer type for codes into this many categories (and -1): the type pandas
    holds a categorical's codes in, so that its categorical can share them."""
    for kind in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(kind).max:
            return kind
    return np.int64


def _object_array(values: Any) -> np.ndarray:  # noqa: ANN401 - any sequence
    """``values`` as a one-dimensional object array (a list of tuples stays a list of tuples)."""
    if isinstance(values, np.ndarray) and values.dtype == object:
        return values
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
