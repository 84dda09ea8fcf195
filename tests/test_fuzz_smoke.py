"""A short pass of the fuzz target (tests/fuzz.py) with a fixed seed: no internal error, no broken
invariant. The full-length run is ``python -m tests.fuzz --seconds 600 --jobs 2 --save fuzz-out``."""

from __future__ import annotations

from pathlib import Path

from tests.fuzz import fuzz, summary


def test_thirty_seconds_of_fuzzing_find_no_internal_error_and_no_broken_invariant(tmp_path: Path):
    stats = fuzz(seconds=30, seed=7, save=tmp_path)
    report = summary(stats)
    assert stats.inputs >= 100, report
    assert stats.outcomes["OK"] and stats.outcomes["REFUSED"], report  # the mutations reach both sides
    assert stats.outcomes["INTERNAL"] == 0 and stats.outcomes["VIOLATION"] == 0, report

