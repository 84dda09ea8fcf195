"""The one place a reader's columns become a timeline: validate, count, sort, nest, link, classify.

Readers decode their format and classify what only the format can tell (a Kineto category, an
XPlane line); they hand the builder whole columns in reader order. The builder then, once for
every format:

1. **validates** each field's range with array operations — a row that breaks one is dropped and
   counted under a reason in ``TraceMeta.dropped`` (the rest of the trace stays usable);
2. assembles the table (:func:`traceview.schema.build_table`: dtypes, rows sorted by (ts, -dur));
3. **nests** host events on their tracks, **links** device events to the op that launched them,
   assigns **roles**, and records the kept counts (:func:`traceview.normalize.normalize`).

Every input event is thereby either kept or dropped with a reason: kept + dropped = events in
the file (``TraceMeta.input_events``), which :func:`traceview.schema.validate` checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from traceview.arrays import as_labels, codes_matching, factorize
from traceview.normalize import normalize
from traceview.schema import HOST_KINDS, KIND_VALUES, Timeline, TraceMeta, build_table

if TYPE_CHECKING:
    import pandas as pd

# Times are int64 ns; sums of a trace's durations must not overflow, so a time or duration is
# kept below 2**62 ns (146 years) — a 236-year duration or an epoch-ns value read as µs is out.
MAX_TIME_NS = 2**62
_INT32_MAX = 2**31 - 1


@dataclass
class RawTrace:
    """What a reader hands the builder.

    ``columns`` are the schema's columns (:data:`traceview.schema.COLUMNS`) in reader order, any
    missing one taking its default; ``extra`` are reader-specific columns of the same length;
    ``nested`` says the reader already computed ``parent``/``depth`` (XPlane nests to classify)
    on rows it has sorted by (ts, -dur).
    """

    columns: dict[str, Any]
    meta: TraceMeta
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    nested: bool = False
    memory: pd.DataFrame | None = None  # the memory table (schema.MEMORY_COLUMNS), when recorded


_NO_ROW = np.zeros(0, dtype=bool)  # a rule's answer where its bounds show that no row breaks it
_NO_ROW.setflags(write=False)


def _outside(values: np.ndarray, low: int, high: int) -> np.ndarray:
    """The rows whose value is below ``low`` or above ``high``: no row (an empty mask) where the
    smallest and the largest value are within, found without a mask of every row."""
    if not len(values) or (int(values.min()) >= low and int(values.max()) <= high):
        return _NO_ROW
    return (values < low) | (values > high)


def _end_out_of_range(c: dict[str, np.ndarray]) -> np.ndarray:
    ts, dur = c["ts"], c["dur"]
    if not len(ts) or int(ts.max()) + min(int(dur.max()), MAX_TIME_NS) < MAX_TIME_NS:  # (Python ints: no overflow)
        return _NO_ROW
    return ts + np.minimum(dur, MAX_TIME_NS) >= MAX_TIME_NS


# (reason, test) in the order they are checked; a row takes the first reason that applies.
# Each test gets the columns as numpy arrays and returns the rows that break the rule (a mask of
# every row, or an empty one where no row does).
_RULES: tuple[tuple[str, Any], ...] = (
    ("kind is not a known kind", lambda c: c["unknown"]),
    ("ts out of range (not within ±2^62 ns)", lambda c: _outside(c["ts"], 1 - MAX_TIME_NS, MAX_TIME_NS - 1)),
    ("dur out of range (negative or ≥ 2^62 ns)", lambda c: _outside(c["dur"], 0, MAX_TIME_NS - 1)),
    ("end out of range (ts + dur ≥ 2^62 ns)", _end_out_of_range),
    ("device index out of range", lambda c: _outside(c["device"], -1, _INT32_MAX)),
    ("host event with a device index",
     lambda c: c["host"] & (c["device"] != -1) if len(_outside(c["device"], -1, -1)) else _NO_ROW),
    ("device event without a device index",
     lambda c: ~c["host"] & (c["device"] < 0) if not c["host"].all() else _NO_ROW),
)


def build(raw: RawTrace) -> Timeline:
    """Validate, assemble and derive: the timeline every analysis starts from.

    The raw trace's columns are taken over (``raw.columns`` and ``raw.extra`` are left empty), so
    each one can be let go as soon as its sorted copy exists: on a large trace that is the
    difference between holding the table once and twice."""
    columns, raw.columns = raw.columns, {}
    meta = raw.meta
    n = len(next(iter(columns.values()))) if columns else 0
    checked = _checked_columns(columns, n)
    drop = np.zeros(n, dtype=bool)
    for reason, test in _RULES:
        broken = test(checked)
        if not broken.any():  # (the usual case: no pass to leave out the rows dropped already)
            continue
        broken &= ~drop
        if broken.any():
            meta.drop(reason, int(broken.sum()))
            drop |= broken
    extra, raw.extra = raw.extra, {}
    nested = raw.nested
    del checked
    if drop.any():
        keep = ~drop
        columns = {k: _take(v, keep) for k, v in columns.items()}
        extra = {k: _take(v, keep) for k, v in extra.items()}
        if nested:  # row positions changed: the reader's parent pointers no longer apply
            columns.pop("parent", None)
            columns.pop("depth", None)
            nested = False
    reader_ts = np.asarray(columns["ts"]) if nested and "ts" in columns else None
    table = build_table(columns, extra=extra)
    if reader_ts is not None and len(table) and not np.array_equal(table["ts"], reader_ts):
        raise AssertionError("a reader that nests must hand rows sorted by (ts, -dur)")
    return normalize(Timeline(events=table, meta=meta, memory=raw.memory))


def _checked_columns(columns: dict[str, Any], n: int) -> dict[str, np.ndarray]:
    """The columns the rules read, as arrays (defaults where a reader left one out)."""
    def ints(name: str, default: int) -> np.ndarray:
        value = columns.get(name)
        return np.full(n, default, dtype=np.int64) if value is None else np.asarray(value, dtype=np.int64)

    kind = columns.get("kind")
    labels = as_labels(kind)
    if labels is not None:  # codes already: no per-row strings
        codes, values = labels.codes, labels.categories
    else:
        kind = np.full(n, KIND_VALUES[0], dtype=object) if kind is None else np.asarray(kind, dtype=object)
        codes, values = factorize(kind)  # a few distinct kinds: each tested once
    host_values = [k.value for k in HOST_KINDS]
    # (A missing kind, code -1, is not a known kind.)
    unknown = codes_matching(codes, ~np.isin(np.asarray(values, dtype=object), KIND_VALUES)) | (codes < 0)
    host = codes_matching(codes, np.isin(np.asarray(values, dtype=object), host_values))
    return {"unknown": unknown, "ts": ints("ts", 0), "dur": ints("dur", 0), "device": ints("device", -1),
            "host": host}


def _take(value: Any, keep: np.ndarray) -> Any:  # noqa: ANN401 - a column of any kind
    labels = as_labels(value)
    if labels is not None:
        return labels.take(keep)
    return np.asarray(value)[keep]
