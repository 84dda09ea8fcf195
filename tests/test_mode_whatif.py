"""The eager → compiled predictions in benchmarks/truth/README.md are what ``benchmarks.mode_whatif``
prints for the bundled captures, and a miss is the compiled mode's different math, not the replay."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.readme_tables import assert_readme_holds, markdown_of

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def printed() -> str:
    return markdown_of("mode_whatif")


def test_the_readme_table_is_current(printed: str) -> None:
    assert_readme_holds("mode-whatif", "mode_whatif", printed)


def test_a_miss_is_the_kernel_difference(printed: str) -> None:
    summary = re.search(r"kernel difference \(within 10 % or 0.1 ms\) in (\d+)/(\d+)", printed)
    assert summary
    explained, rows = map(int, summary.groups())
    assert rows >= 40  # every workload's eager trace against each of its compiled modes
    assert explained >= 0.8 * rows


def test_docs_quote_the_counts(printed: str) -> None:
    within, rows = re.search(r"(\d+)/(\d+) within ±15 %", printed).groups()
    explained = re.search(r"kernel difference \(within 10 % or 0.1 ms\) in (\d+)/", printed).group(1)
    text = " ".join((ROOT / "docs" / "whatif.md").read_text().split())
    assert f"within ±15 % of the compiled capture's step in {within} of {rows} pairs" in text
    assert f"(within 10 % or 0.1 ms) in {explained} of {rows}" in text
