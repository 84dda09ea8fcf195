"""Cause sizes without the profiler (analyzers/unprofiled.py): the truth README's table is what
``benchmarks.unprofiled_sizes`` prints, the estimate is nearer the measured costs than the
profiled sizes, and a comparison of two captures with unprofiled timings carries it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import traceview
from tests.readme_tables import assert_readme_holds, markdown_of
from traceview.analyzers.unprofiled import unprofiled_buckets

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces" / "mlp2"


@pytest.fixture(scope="module")
def printed() -> str:
    if not (ROOT / "benchmarks" / "truth" / "cases").is_dir():
        pytest.skip("no ground-truth cases")
    return markdown_of("unprofiled_sizes")


def test_the_readme_table_is_current(printed: str) -> None:
    assert_readme_holds("unprofiled-sizes", "unprofiled_sizes", printed)


def test_the_estimate_is_nearer_the_measured_costs(printed: str) -> None:
    counts = re.findall(r"in (\d+)/(\d+), mean \|log\(ratio\)\| ([\d.]+)", printed)
    (profiled_in, n, profiled_error), (estimated_in, _, estimated_error) = counts
    assert int(estimated_in) > int(profiled_in) and float(estimated_error) < float(profiled_error)
    assert int(n) >= 40


def test_the_excess_is_taken_off_and_the_sizes_sum_to_the_unprofiled_step() -> None:
    diag = traceview.diagnose(SAMPLES / "torch-eager")
    estimate = unprofiled_buckets(diag)
    profiled = diag.steady_attribution()
    assert sum(estimate.values()) == pytest.approx(diag.unprofiled_step_ns, rel=1e-6)
    assert all(estimate[b] <= profiled[b] for b in profiled)
    # Dispatch, where the events are dense, gives up most of the excess.
    taken = {b: profiled[b] - estimate[b] for b in profiled}
    assert max(taken, key=taken.get) == "launch_overhead"


def test_a_comparison_carries_both_sides_estimates() -> None:
    comparison = traceview.compare(SAMPLES / "torch-eager", SAMPLES / "tf-eager")
    rows = comparison.to_dict()["comparison"]["unprofiled_buckets"]
    assert [r["bucket"] for r in rows] == [d.bucket for d in comparison.buckets]
    assert sum(r["baseline_ns"] for r in rows) == pytest.approx(comparison.baseline.unprofiled_step_ns, rel=1e-6)


def test_the_counts_are_made_where_a_comparison_may_read_them() -> None:
    from traceview import api

    # A trace's report alone (the diagnose command) never reads them; a folder's comparisons do.
    lone = api.diagnose_report(SAMPLES / "torch-eager", keep_events=False, comparable=False)
    assert not len(lone.attribution.record_boundaries)
    assert len(api.diagnose_report(SAMPLES / "torch-eager", keep_events=False).attribution.record_boundaries)
    folder = api.diagnose_report(SAMPLES, keep_events=False, comparable=False)
    assert all(len(d.attribution.record_boundaries) for d in folder.diagnoses if d.unprofiled_step_ns)
    assert folder.comparisons


def test_no_estimate_without_unprofiled_timings() -> None:
    trace = next(ROOT.glob("tests/data/torch_cpu_unmarked/*.json*"), None)
    if trace is None:
        pytest.skip("no unmarked torch capture")
    diag = traceview.diagnose(trace)
    assert diag.unprofiled_step_ns is None and unprofiled_buckets(diag) is None


def test_the_reports_show_the_estimate_only_where_both_sides_timed_without_the_profiler(tmp_path: Path) -> None:
    with_timing = traceview.render(traceview.compare(SAMPLES / "torch-eager", SAMPLES / "tf-eager"), "md")
    assert "| cause | baseline | candidate | delta | of gap | unprofiled |" in with_timing
    assert "last column ('unprofiled')" in with_timing
    bare = tmp_path / "tf-eager"
    shutil.copytree(SAMPLES / "tf-eager", bare)
    (bare / "manifest.json").unlink()
    without = traceview.render(traceview.compare(SAMPLES / "torch-eager", bare), "md")
    assert "| cause | baseline | candidate | delta | of gap |\n" in without
