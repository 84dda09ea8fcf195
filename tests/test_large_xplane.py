"""benchmarks/large_xplane.py's merge of profiler windows into one XSpace: each later window put on
the first window's clock, one session start, every event kept — on two real TF captures."""

from __future__ import annotations

from pathlib import Path

import pytest

import traceview
from benchmarks.large_xplane import _on_first_clock
from traceview.readers.xplane import TASK_ENVIRONMENT

ROOT = Path(__file__).resolve().parents[1]
WINDOWS = ("sample_traces/mlp2/tf-eager", "sample_traces/cnn/tf-eager")  # captured 7 minutes apart


def _xplane(folder: str) -> Path:
    found = sorted((ROOT / folder).glob("plugins/profile/*/*.xplane.pb"))
    if len(found) != 1:
        pytest.skip(f"{folder}: no single .xplane.pb")
    return found[0]


def test_windows_merged_onto_the_first_window_clock(tmp_path: Path) -> None:
    first, second = (traceview.load(_xplane(w)) for w in WINDOWS)
    data, start = _on_first_clock(_xplane(WINDOWS[0]).read_bytes(), None)
    assert data == _xplane(WINDOWS[0]).read_bytes()  # the first window stays as it is
    moved, same_start = _on_first_clock(_xplane(WINDOWS[1]).read_bytes(), start)
    assert same_start == start
    merged_path = tmp_path / "merged.xplane.pb"
    merged_path.write_bytes(data + moved)
    merged = traceview.load(merged_path)

    assert len(merged.events) == len(first.events) + len(second.events)
    assert merged.meta.extra["profile_start_time_ns"] == start
    assert merged.meta.extra["planes"].count(TASK_ENVIRONMENT) == 1
    # Each window where it happened, on one clock: the second's events start where its own trace
    # says, relative to the first's origin.
    ts = merged.events["ts"].to_numpy()
    assert ts.min() == 0
    second_from_first = second.meta.origin_ns - first.meta.origin_ns
    assert second_from_first > first.events["ts"].max()  # (the captures did not overlap)
    assert ts.max() == second_from_first + second.events["ts"].max()
