"""Array primitives the hot paths share, where numpy's general versions are slow on trace data.

numpy ≥ 2.3 answers ``np.unique`` on integers with a hash table; on the high-cardinality int64
arrays a trace produces (timestamps, ids) that is two orders of magnitude slower than sorting
(4.3 s against 0.03 s for 4 M timestamps). These versions sort. ``np.isin`` on an object array
compares Python strings one by one on every call; :func:`membership` hashes once.

No pandas: the diagnosis runs without it (traceview/table.py). The column helpers take
:class:`~traceview.table.Labels` and numpy arrays, and still a pandas Series or categorical from
a program that hands one over.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from traceview.table import Labels


def at_rows(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` where a row may be -1 (none: a parent, window or step not there), which
    gives ``values[0]`` for the caller to mask. ``np.take`` clipping the rows, not a
    ``np.maximum(rows, 0)`` copy of them to index with: on 5.9 M rows 7 ms against 27 ms."""
    return np.take(values, rows, mode="clip")


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of each code, for codes numbered in order of first appearance (as
    ``pd.factorize`` numbers them): where the running maximum rises. O(n), no sort or hash."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    running = np.maximum.accumulate(codes)
    rises = np.empty(len(codes), dtype=bool)
    rises[0] = True
    rises[1:] = running[1:] > running[:-1]
    return np.flatnonzero(rises)


def combination_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's code for its integer ``key`` (keys numbered in order of first appearance, as
    ``pd.factorize`` numbers them) and the first row of each code. Rules that read a few columns
    run once per distinct combination of them, packed into one key per row: a trace's millions of
    rows have a few thousand. Compiled, one pass with a table of the distinct keys
    (traceview/_passes.c); else by :func:`factorize`, then the first rows found in one more pass."""
    from traceview import compiled

    key = np.ascontiguousarray(key, dtype=np.int64)
    if compiled.passes is not None:
        codes, first = np.empty(len(key), dtype=np.int64), np.empty(len(key), dtype=np.int64)
        distinct = compiled.passes.factorize(key, codes, first)
        return codes, first[:distinct].copy()
    codes, _ = factorize(key)
    return codes, first_rows(codes)


def factorize(values: Any) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN401 - an array or a sequence
    """Each value's code (int64) and the distinct values (an array), numbered in order of first
    appearance, as ``pd.factorize`` numbers them; None (and a float NaN) is missing: code -1, not
    among the values. Numbers by one sort; other values (strings) through a dict, once per row."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iub":
        if not len(values):
            return np.zeros(0, dtype=np.int64), values.copy()
        from traceview import compiled

        if compiled.passes is not None and values.dtype.kind != "u":  # (one pass through a hash table)
            codes, first = combination_codes(values)
            return codes, values[first]
        distinct, inverse = unique_inverse(values)
        first = np.full(len(distinct), len(values), dtype=np.int64)
        np.minimum.at(first, inverse, np.arange(len(values), dtype=np.int64))
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        return rank[inverse], distinct[order]
    listed = values.tolist() if isinstance(values, np.ndarray) else list(values)
    # Distinct values in order of first appearance, then each row's code: both loops run in the
    # interpreter's own C code (dict.fromkeys, map), not as Python bytecode per row.
    distinct = [value for value in dict.fromkeys(listed) if value is not None and value == value]
    position = dict(zip(distinct, range(len(distinct))))
    codes = np.fromiter(map(position.get, listed, repeat(-1)), dtype=np.int64, count=len(listed))
    distinct_values = np.empty(len(distinct), dtype=object)
    distinct_values[:] = distinct
    return codes, distinct_values


def column_combinations(columns: Sequence[np.ndarray], shifts: Sequence[int], sizes: Sequence[int]
                        ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`combination_codes` of the columns' rows packed into one key: each column's value
    plus its shift is a digit in [0, size), the digits in mixed radix (the sizes' product must
    stay below 2**63). Compiled, the key is packed as each row is read (no key column, no pass per
    column); else built in place, a pass or two per column."""
    from traceview import compiled

    n = len(columns[0])
    if compiled.passes is not None:
        codes, first = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        distinct = compiled.passes.combine([c.view(np.int8) if c.dtype == bool else c for c in columns],
                                           [int(x) for x in shifts], [int(x) for x in sizes], codes, first)
        return codes, first[:distinct].copy()
    key = np.zeros(n, dtype=np.int64)
    for column, shift, size in zip(columns, shifts, sizes):
        key *= size
        key += column
        if shift:
            key += shift
    return combination_codes(key)


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (``np.unique(values)``) by one sort and a neighbour compare."""
    if not len(values):
        return values.copy()
    ordered = np.sort(values, kind="stable")
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


# Above this many possible values, unique_small_range sorts instead of flagging (a flag each).
FLAG_TABLE_MAX = 1 << 26


def unique_small_range(values: np.ndarray, size: int) -> np.ndarray:
    """The distinct values, sorted, of non-negative ints below ``size``: a flag per possible value
    where that table is small (no sort, no hash: millions of rows in one pass), else
    :func:`unique_sorted`."""
    if size > FLAG_TABLE_MAX:
        return unique_sorted(values)
    seen = np.zeros(size, dtype=bool)
    seen[values] = True
    return np.flatnonzero(seen).astype(values.dtype, copy=False)


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``: distinct sorted values and each row's index into them."""
    if not len(values):
        return values.copy(), np.zeros(0, dtype=np.int64)
    order, ordered, starts = _sorted_runs(values)
    inverse = np.empty(len(values), dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse


def first_of_each(values: np.ndarray) -> np.ndarray:
    """The position of each distinct value's first occurrence in ``values``, in order of value."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    order, _, starts = _sorted_runs(values)
    return order[starts]


def _sorted_runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stable sorting order, the values so sorted, where each run of equal values starts) of a
    non-empty array."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.empty(len(ordered), dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    return order, ordered, starts


def first_match(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, missing: int) -> np.ndarray:
    """For each of ``wanted``, the value of the first of ``keys`` equal to it (``values`` holds one
    per key), ``missing`` where no key is: a lookup by one sort of the keys."""
    out = np.full(len(wanted), missing, dtype=np.result_type(values.dtype, np.min_scalar_type(missing)))
    if not len(keys) or not len(wanted):
        return out
    order = np.argsort(keys, kind="stable")  # (stable: the first of equal keys comes first)
    ordered = keys[order]
    at = np.searchsorted(ordered, wanted, side="left")
    inside = at < len(ordered)
    hit = np.zeros(len(wanted), dtype=bool)
    hit[inside] = ordered[at[inside]] == wanted[inside]
    out[hit] = values[order[at[hit]]]
    return out


# Up to this many groups, group_medians selects each group's middle values (a partition of its
# slice); beyond, one sort of all the values by (group, value) costs less than a partition per group.
PARTITIONED_GROUPS = 64


def group_medians(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``groups`` (sorted) and the median of ``values`` in each (the mean of the two
    middle values where a group has an even count). The rows are put in group order by a stable
    sort of the groups alone (a radix sort for narrow integer codes); each group's middle values
    are then selected from its slice, or, over many groups, the values sorted within groups."""
    if not len(values):
        return groups[:0].copy(), np.zeros(0, dtype=np.float64)
    order = np.argsort(groups, kind="stable")
    grouped = groups[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    stops = np.r_[starts[1:], len(grouped)]
    low, high = starts + (stops - starts - 1) // 2, starts + (stops - starts) // 2
    if len(starts) > PARTITIONED_GROUPS:
        ordered = values[np.lexsort((values, groups))]
        return grouped[starts], (ordered[low].astype(np.float64) + ordered[high]) / 2
    by_group = values[order]
    middle_low, middle_high = np.empty(len(starts), dtype=values.dtype), np.empty(len(starts), dtype=values.dtype)
    for i, (begin, end, lo, hi) in enumerate(zip(starts.tolist(), stops.tolist(), low.tolist(), high.tolist())):
        part = np.partition(by_group[begin:end], [lo - begin, hi - begin])
        middle_low[i], middle_high[i] = part[lo - begin], part[hi - begin]
    return grouped[starts], (middle_low.astype(np.float64) + middle_high) / 2


def distinct_values(column: Any) -> list[Any]:  # noqa: ANN401 - a column of any kind
    """The distinct values a column's rows hold (Labels: the categories some row uses, in their
    order; missing left out)."""
    codes, values = column_codes(column)
    used = np.zeros(len(values) + 1, dtype=bool)
    used[codes] = True  # (code -1 marks the last entry, left out below)
    return [value for value, hit in zip(values, used[:-1].tolist()) if hit]


def column_codes(column: Any) -> tuple[np.ndarray, list[Any]]:  # noqa: ANN401 - a column of any kind
    """A column as integer codes into its distinct values (-1: missing): Labels' own codes (or a
    pandas categorical's), otherwise one hash pass."""
    labels = as_labels(column)
    if labels is not None:
        return labels.codes, labels.categories.tolist()
    codes, uniques = factorize(np.asarray(getattr(column, "array", column), dtype=object))
    return codes, uniques.tolist()


def values_at(column: Any, rows: np.ndarray) -> np.ndarray:  # noqa: ANN401 - a column of any kind
    """A column's values at ``rows``, without making the whole column's: Labels' (or a pandas
    categorical's) values are looked up through its codes at those rows only, not one Python
    object per row of the table."""
    labels = as_labels(column)
    if labels is not None:
        return labels.at(rows)
    return np.asarray(getattr(column, "array", column))[rows]


def as_labels(column: Any) -> Labels | None:  # noqa: ANN401 - a column of any kind
    """``column`` as :class:`Labels` when it is one (or a pandas categorical, or a Series of one),
    else None."""
    if isinstance(column, Labels):
        return column
    values = getattr(column, "array", column)
    if hasattr(values, "codes") and hasattr(values, "categories"):  # (a pandas categorical)
        return Labels.from_pandas(values)
    return None


# Up to this deep, one pass per level over every row beats grouping the children by a sort (5.9 M
# rows of a TF eager trace, 6 levels: 0.09 s against 0.19 s; even at about 16 levels).
_SCANNED_LEVELS = 12


def child_levels(parent: np.ndarray, depth: np.ndarray) -> list[np.ndarray]:
    """The rows with a parent, grouped by depth (1, 2, … the deepest), each group in row order:
    computed once for every rule that walks the nesting from the top."""
    has_parent = (parent >= 0) & (depth >= 1)
    level_of = np.where(has_parent, depth, 0)
    deepest = int(level_of.max()) if len(level_of) else 0
    if deepest <= _SCANNED_LEVELS:
        return [np.flatnonzero(level_of == d) for d in range(1, deepest + 1)]
    children = np.flatnonzero(has_parent)
    return _by_level(children, level_of[children])


class Nesting:
    """A table's nesting tree (its parent and depth columns), for the rules that carry something
    from parents down to their children, through whole subtrees.

    Compiled (traceview/_passes.c), each rule is one pass over the rows in table order, where a
    parent comes before its children (rows sorted by start, the longer first), so a parent's
    value is final when its children read it. Otherwise — no extension, or a parent that does
    not come first — level by level from the top (:func:`child_levels`, computed once, on first
    need), which gives the same values."""

    def __init__(self, parent: np.ndarray, depth: np.ndarray) -> None:
        self.parent = np.ascontiguousarray(parent, dtype=np.int64)
        self.depth = depth
        self._levels: list[np.ndarray] | None = None

    @property
    def levels(self) -> list[np.ndarray]:
        if self._levels is None:
            self._levels = child_levels(self.parent, self.depth)
        return self._levels

    def copy_down(self, values: np.ndarray, takes: np.ndarray, gives: np.ndarray) -> np.ndarray:
        """A copy of the integer ``values`` in which each row takes its parent's (final) value where
        ``takes[its own value]`` and ``gives[the parent's value]`` (bool tables indexed by value; a
        value outside them takes and gives nothing)."""
        from traceview import compiled

        takes, gives = np.asarray(takes, dtype=bool), np.asarray(gives, dtype=bool)
        if compiled.passes is not None and values.dtype.kind == "i" and len(takes) == len(gives):
            out = np.ascontiguousarray(values).copy()
            if compiled.passes.copy_down(out, self.parent, takes.view(np.uint8), gives.view(np.uint8)):
                return out
        out = values.copy()
        for rows in self.levels:
            own, given = out[rows], out[self.parent[rows]]
            chosen = _table_at(takes, own) & _table_at(gives, given)
            out[rows[chosen]] = given[chosen]
        return out

    def states_down(self, own: np.ndarray, own_states: int, final_states: int,
                    step: Callable[[np.ndarray, np.ndarray], np.ndarray],
                    alone: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Each row's final state (int32, in [0, final_states)): ``alone(own state)`` for a row
        without a parent, ``step(the parent's final state, its own state)`` for the others (both
        vectorized functions; ``own``: each row's own state, in [0, own_states)). Compiled, the rule
        runs once on every pair of states, and the pass looks each row's up in that table."""
        from traceview import compiled

        if compiled.passes is not None:
            finals, owns = np.divmod(np.arange(final_states * own_states, dtype=np.int64), own_states)
            table = np.ascontiguousarray(step(finals, owns), dtype=np.int32)
            top = np.ascontiguousarray(alone(np.arange(own_states, dtype=np.int64)), dtype=np.int32)
            out = np.empty(len(own), dtype=np.int32)
            if compiled.passes.states_down(np.ascontiguousarray(own, dtype=np.int32), self.parent, table, top, out):
                return out
        state = alone(own).astype(np.int32)
        for rows in self.levels:
            state[rows] = step(state[self.parent[rows]], own[rows])
        return state


def _table_at(table: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``table[values]``, False for values outside the table."""
    inside = (values >= 0) & (values < len(table))
    return np.where(inside, table[np.where(inside, values, 0)], False) if len(table) else np.zeros(len(values), bool)


def _by_level(rows: np.ndarray, level_of: np.ndarray) -> list[np.ndarray]:
    """``rows`` grouped by level (1, 2, … the deepest), each group in row order: a stable sort of
    small integers (a radix sort on 8 or 16 bits), then one slice per level."""
    deepest = int(level_of.max())
    small = np.int8 if deepest < 2**7 else np.int16 if deepest < 2**15 else level_of.dtype
    order = np.argsort(level_of.astype(small, copy=False), kind="stable")
    rows, level_of = rows[order], level_of[order]
    bounds = np.searchsorted(level_of, np.arange(1, deepest + 2))
    return [rows[lo:hi] for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


def joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    """A reader's per-batch (per-block, per-line) arrays of one field as one array. The list is
    left holding only the joined array, so a field is never held twice, and asking again gives
    the same array; a single part is the array itself (no copy)."""
    if len(parts) == 1:
        return parts[0]
    out = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    parts[:] = [out]
    return out


# Up to this many wanted codes, a membership test compares codes (one pass each) instead of looking
# them up in a table: on 5.9 M int8 codes, 1 to 3 comparisons take 2-6 ms, the lookup 12 ms.
_COMPARED_CODES = 3


def membership(values: Any) -> Callable[[Iterable[Any]], np.ndarray]:
    """A reusable test "is each value one of these?" for an array (or categorical) of few distinct
    values. The values are hashed once; every test after that is a table lookup, where ``np.isin``
    on an object array compares millions of Python strings each time. A categorical's own codes
    serve as they are (no pass over the rows at all)."""
    labels = as_labels(values)
    if labels is not None:
        codes, uniques = labels.codes, labels.categories
    else:
        codes, uniques = factorize(values)
    position = {value: i for i, value in enumerate(list(uniques))}

    def isin(wanted: Iterable[Any]) -> np.ndarray:
        hit = np.zeros(len(position), dtype=bool)
        hit[[position[value] for value in wanted if value in position]] = True
        return codes_matching(codes, hit)

    return isin


def codes_matching(codes: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """Whether each row's code is one of those ``hit`` marks (a bool per code; code -1, missing,
    never is). A few codes are compared on the codes as they are (int8 for a column of few values),
    where a table lookup first widens every code to an index (on 5.9 M rows, 2-6 ms against 12)."""
    found = np.flatnonzero(hit)
    if len(found) <= _COMPARED_CODES:
        mask = np.zeros(len(codes), dtype=bool)
        for code in found.tolist():
            mask |= codes == code
        return mask
    return np.append(hit, False)[codes]  # (the last entry: code -1)


def values_matching(values: Sequence[Any], pattern: re.Pattern[str]) -> np.ndarray:
    """Per distinct value of a column (:func:`column_codes`), whether ``pattern`` is found in it:
    a name rule tested once per distinct name, never per row."""
    return np.array([bool(pattern.search(str(value))) for value in values], dtype=bool)


def rows_matching(column: Any, pattern: re.Pattern[str]) -> np.ndarray:
    """Whether ``pattern`` is found in each row's value (a missing value never matches)."""
    codes, values = column_codes(column)
    return codes_matching(codes, values_matching(values, pattern))


def order_by_start_then_longest(ts: np.ndarray, dur: np.ndarray) -> np.ndarray | None:
    """The row order ``np.lexsort((-dur, ts))`` gives — by start, the longer first where starts are
    equal, rows equal in both kept in their order — or None when the rows are in that order already.

    Readers mostly hand rows in that order, or in long runs of it (the XPlane reader sorts; Kineto
    writes each thread in time order), and ``lexsort`` pays for a full two-key sort either way
    (0.9 s on 5.9 M rows). Here an O(n) check answers the sorted case without sorting; otherwise a
    stable argsort on ``ts`` alone (timsort: near linear on presorted runs) orders the rows, and only
    the rows that share a start with another are then reordered by ``-dur``.
    """
    ts = np.asarray(ts)
    dur = np.asarray(dur)
    if len(ts) < 2:
        return None
    if (ts[1:] >= ts[:-1]).all():
        same_start = np.flatnonzero(ts[1:] == ts[:-1])
        # -dur as lexsort reads it (the same wrap-around for the most negative value).
        if not len(same_start) or (-dur[same_start + 1] >= -dur[same_start]).all():
            return None
        order = np.arange(len(ts))
        return _longest_first_within_starts(order, ts, dur)
    order = np.argsort(ts, kind="stable")
    return _longest_first_within_starts(order, ts[order], dur)


def _longest_first_within_starts(order: np.ndarray, sorted_ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """``order`` (rows stably sorted by ts; ``sorted_ts`` their starts) with each group of equal
    starts reordered by ``-dur``, stably; the rows in no such group are not touched."""
    same_as_next = sorted_ts[1:] == sorted_ts[:-1]
    if not same_as_next.any():
        return order
    in_group = np.zeros(len(order), dtype=bool)
    in_group[1:] = same_as_next
    in_group[:-1] |= same_as_next
    positions = np.flatnonzero(in_group)
    group_starts = np.ones(len(positions), dtype=bool)
    group_starts[1:] = sorted_ts[positions[1:]] != sorted_ts[positions[:-1]]
    group = np.cumsum(group_starts)
    rows = order[positions]
    order[positions] = rows[np.lexsort((-dur[rows], group))]  # lexsort is stable: equal rows keep their order
    return order


# Whether this process's event tables hold one-value columns once (:func:`one_value`). Only the
# command line turns it on, for its own process and its worker processes: its analyses never write
# into a column; a program using traceview as a library gets writable columns, as DataFrames are.
_ONE_VALUES_SHARED = [False]


# Rows looked at per pass of :func:`rows_at_least`: its temporaries stay a few MB on any trace.
CHUNK_ROWS = 1 << 20


def rows_at_least(start: np.ndarray, end: np.ndarray, length: int) -> np.ndarray:
    """The rows whose ``end - start`` is ``length`` or more, in order; read a chunk at a time, so
    that a length test over millions of pieces, which finds a few, allocates no column of them."""
    found = [lo + np.flatnonzero(end[lo:lo + CHUNK_ROWS] - start[lo:lo + CHUNK_ROWS] >= length)
             for lo in range(0, len(start), CHUNK_ROWS)]
    return np.concatenate(found).astype(np.int64) if found else np.empty(0, dtype=np.int64)


def share_one_values() -> None:
    """From now on, :func:`one_value` columns are read-only views held once (the command line)."""
    _ONE_VALUES_SHARED[0] = True


def one_values_shared() -> bool:
    """Whether :func:`share_one_values` was called in this process."""
    return _ONE_VALUES_SHARED[0]


def one_value(value: Any, n: int, dtype: Any) -> np.ndarray:  # noqa: ANN401 - a scalar
    """``value`` on each of ``n`` rows; where :func:`share_one_values` is on, held once: a
    read-only view with no memory of its own.

    A host-only trace's device, stream, correlation and bytes columns hold -1 on every row, and a
    one-thread trace's pid and tid one value: as full arrays, 260 MB of a 5.9 M-event XPlane's
    535 MB table, memory this machine faults in page by page."""
    if not _ONE_VALUES_SHARED[0]:
        return np.full(n, value, dtype=dtype)
    return np.broadcast_to(np.array([value], dtype=dtype), (n,))


def reordered(column: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``column[order]``, a :func:`one_value` column staying one (gathering it would fill every row)."""
    if is_one_value(column):
        return one_value(column[0], len(order), column.dtype)
    return column[order]


def is_one_value(column: Any) -> bool:  # noqa: ANN401 - any column a reader hands over
    """Whether ``column`` is a shared :func:`one_value` view."""
    return isinstance(column, np.ndarray) and column.ndim == 1 and len(column) > 1 and column.strides == (0,)


def per_group(values: np.ndarray, counts: Any) -> np.ndarray:  # noqa: ANN401 - a sequence of ints
    """``np.repeat(values, counts)``; a :func:`one_value` when every group has the same value."""
    if _ONE_VALUES_SHARED[0] and len(values) and (values == values[0]).all():
        return one_value(values[0], int(np.sum(counts)), values.dtype)
    return np.repeat(values, counts)
