"""The per-step table of a long trace lists some steps, in every text format: the first ones, the
slowest of the others and every cold or partial one, with a line saying how many are left out (a 1 GB
XPlane's 40,000 steps made a 40,000-row table and a quarter of the run's time)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceview
from traceview.renderers import report

ROOT = Path(__file__).resolve().parents[1]
LONG = ROOT / "sample_traces" / "linreg-gd" / "numpy-eager"  # 21 steps


def test_the_listed_steps_are_the_first_the_slowest_and_the_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "STEP_ROWS_ALL", 5)
    monkeypatch.setattr(report, "STEP_ROWS_FIRST", 2)
    monkeypatch.setattr(report, "STEP_ROWS_SLOWEST", 2)
    duration = np.array([50, 10, 10, 30, 10, 10, 40, 10, 30, 10], dtype=np.int64)
    # First 0, 1; slowest of the others 6 (40) and 3 (30: the earlier of the two 30s); partial or cold 9.
    assert report._listed_steps(duration, {9}) == [0, 1, 3, 6, 9]
    assert report._listed_steps(duration[:5], set()) == [0, 1, 2, 3, 4]  # (five: all)


@pytest.mark.parametrize("fmt", ["terminal", "md", "html"])
def test_a_long_trace_lists_some_steps_and_says_how_many_it_leaves_out(monkeypatch: pytest.MonkeyPatch,
                                                                        fmt: str) -> None:
    if not LONG.is_dir():
        pytest.skip("no sample numpy capture")
    diag = traceview.diagnose(LONG)
    n = len(diag.steps.table)
    full = traceview.render(diag, fmt, width=120)
    monkeypatch.setattr(report, "STEP_ROWS_ALL", 6)
    monkeypatch.setattr(report, "STEP_ROWS_FIRST", 3)
    monkeypatch.setattr(report, "STEP_ROWS_SLOWEST", 2)
    short = traceview.render(diag, fmt, width=120)
    assert "more steps not listed" not in full
    assert f"{n - 5:,} more steps not listed: the first 3, the 2 slowest of the others" in short
    durations = diag.steps.table["duration"]
    slowest = int(np.argmax(durations[3:])) + 3
    assert f"#{int(diag.steps.table['number'][slowest])}" in short
    assert "…" in short
