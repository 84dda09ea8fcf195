"""The builder drops every row that breaks one of its rules, under the first rule it breaks, and
counts it (builder._RULES); the kinds may come as strings or as a categorical with missing codes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from traceview.builder import RawTrace, build
from traceview.schema import TraceMeta

# (kind, ts, dur, device) → the reason the row is dropped for, or None where it is kept.
ROWS = [
    ("host_op", 0, 10, -1, None),
    ("bogus", 1, 10, -1, "kind is not a known kind"),
    (None, 2, 10, -1, "kind is not a known kind"),
    ("host_op", 3, -1, -1, "dur out of range (negative or ≥ 2^62 ns)"),
    ("host_op", 4, 10, 0, "host event with a device index"),
    ("kernel", 5, 10, -1, "device event without a device index"),
    ("kernel", 6, 10, 0, None),
    ("bogus", 7, -5, 3, "kind is not a known kind"),  # (the first rule it breaks)
    ("host_op", 2**62, 1, -1, "ts out of range (not within ±2^62 ns)"),
    ("host_op", -(2**62), 1, -1, "ts out of range (not within ±2^62 ns)"),
    ("host_op", 2**62 - 5, 10, -1, "end out of range (ts + dur ≥ 2^62 ns)"),
    ("kernel", 8, 10, 2**31, "device index out of range"),
    ("kernel", 9, 10, -2, "device index out of range"),
]


@pytest.mark.parametrize("kinds_as", ["strings", "categorical"])
def test_rows_that_break_no_rule_are_all_kept(kinds_as: str) -> None:
    kept = [r for r in ROWS if r[-1] is None]
    kinds = [r[0] for r in kept]
    meta = TraceMeta(source="t", format="test", framework="unknown")
    columns = {"kind": pd.Categorical(kinds) if kinds_as == "categorical" else np.array(kinds, dtype=object),
               "name": [f"e{i}" for i in range(len(kept))], "ts": np.array([r[1] for r in kept], dtype=np.int64),
               "dur": np.array([r[2] for r in kept], dtype=np.int64),
               "device": np.array([r[3] for r in kept], dtype=np.int64)}
    assert len(build(RawTrace(columns=columns, meta=meta)).events) == len(kept) and not meta.dropped


@pytest.mark.parametrize("kinds_as", ["strings", "categorical"])
def test_each_row_is_dropped_for_the_first_rule_it_breaks(kinds_as: str) -> None:
    kinds = [r[0] for r in ROWS]
    kind = pd.Categorical(kinds) if kinds_as == "categorical" else np.array(kinds, dtype=object)
    meta = TraceMeta(source="t", format="test", framework="unknown")
    columns = {"kind": kind, "name": [f"e{i}" for i in range(len(ROWS))],
               "ts": np.array([r[1] for r in ROWS], dtype=np.int64), "dur": np.array([r[2] for r in ROWS], dtype=np.int64),
               "device": np.array([r[3] for r in ROWS], dtype=np.int64)}
    timeline = build(RawTrace(columns=columns, meta=meta))
    expected: dict[str, int] = {}
    for *_, reason in ROWS:
        if reason is not None:
            expected[reason] = expected.get(reason, 0) + 1
    assert meta.dropped == expected
    assert sorted(timeline.events["name"].astype(str)) == ["e0", "e6"]
