"""Pauses: the step's thread stopping where the other steps of its shape do not (analyzers/pauses.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from tests.conftest import SAMPLES, cached_diagnosis
from traceview.analyzers.pauses import MIN_ALIGNED_STEPS, PAUSE_MIN_NS, gap_pauses, paused_cells, shape_groups

MS = 1_000_000


# --- the rule, on small hand-built matrices (steps × places, ns)

def excess(lengths: np.ndarray) -> np.ndarray:
    """The pause in each cell of a (steps × places) matrix of lengths, 0 where there is none."""
    pause = np.zeros(lengths.shape, dtype=np.int64)
    step_row, place, ns = paused_cells(lengths)
    pause[step_row, place] = ns
    return pause


def test_a_place_stretched_in_one_step_is_a_pause_of_its_excess() -> None:
    lengths = np.array([[10_000, 2 * MS], [10_000, 2 * MS], [4 * MS + 10_000, 2 * MS]])
    assert excess(lengths).tolist() == [[0, 0], [0, 0], [4 * MS, 0]]


def test_work_at_the_same_place_in_every_step_is_not_a_pause() -> None:
    # A 9 ms user loop at place 1 of every step: its median is its length.
    lengths = np.array([[10_000, 9 * MS], [12_000, 9 * MS + 300_000], [11_000, 9 * MS - 200_000]])
    assert not excess(lengths).any()


def test_a_place_stretched_in_two_steps_is_periodic_work_not_a_pause() -> None:
    # Every-other-step work at place 0 in 2 of 5 steps: the median stays short, yet it recurs.
    lengths = np.array([[5 * MS], [10_000], [5 * MS], [10_000], [10_000]])
    assert not excess(lengths).any()


@pytest.mark.parametrize("slower, paused", [
    (PAUSE_MIN_NS - 1, False),  # below the shortest pause
    (PAUSE_MIN_NS, True),
])
def test_the_shortest_pause(slower: int, paused: bool) -> None:
    lengths = np.array([[100_000], [100_000], [100_000 + slower]])
    assert bool(excess(lengths).any()) is paused


def test_a_long_op_a_little_slower_once_is_not_a_pause() -> None:
    # A 5 ms op that takes 8 ms once: 3 ms longer but not 2x its median.
    lengths = np.array([[5 * MS], [5 * MS], [8 * MS]])
    assert not excess(lengths).any()


def test_steps_are_compared_only_with_steps_of_the_same_shape() -> None:
    # Steps 0, 1, 3 run names (7, 8); step 2 runs (7, 9); step 4 runs (7, 8) too.
    step = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    codes = np.array([7, 8, 7, 8, 7, 9, 7, 8, 7, 8])
    groups = shape_groups(step, codes)
    assert len(groups) == 1
    assert groups[0].positions().tolist() == [[0, 1], [2, 3], [6, 7], [8, 9]]
    # Fewer steps of a shape than MIN_ALIGNED_STEPS: nothing is compared.
    few = np.repeat(np.arange(MIN_ALIGNED_STEPS - 1), 2)
    assert shape_groups(few, np.tile([1, 2], MIN_ALIGNED_STEPS - 1)) == []


def test_gaps_of_a_group_whose_steps_differ_in_gap_count_are_left_alone() -> None:
    gap_step = np.array([0, 0, 1, 1, 2])
    length = np.array([10, 5 * MS, 10, 10, 10])
    assert not gap_pauses(gap_step, length, {0: 0, 1: 0, 2: 0}).any()
    same = np.array([0, 0, 1, 1, 2, 2])
    assert gap_pauses(same, np.array([10, 5 * MS, 10, 10, 10, 10]), {0: 0, 1: 0, 2: 0}).tolist() == [
        0, 5 * MS - 10, 0, 0, 0, 0]


# --- real captures

def _diagnosis(relative: str):
    paths = sorted((SAMPLES / relative).rglob("*.xplane.pb")) + sorted((SAMPLES / relative).glob("*.json.gz"))
    if not paths:
        pytest.skip(f"no sample trace under {relative}")
    return cached_diagnosis(paths[0])


def test_a_capture_on_a_busy_machine_is_found_paused_and_its_compute_is_not_inflated() -> None:
    # TF eager transformer captured while the 2-core VM was busy: pauses of one 4 ms tick at a
    # different op in each steady step (76-114 ms profiled, 46 ms unprofiled). A capture of the
    # same step on the idle machine shows 5.8 ms of compute a step.
    diag = _diagnosis("transformer/tf-eager")
    paused = next(f for f in diag.findings if f.rule == "paused")
    assert paused.grade == "high" and paused.evidence["steps_paused"] == paused.evidence["steady_steps"] == 3
    steady = diag.steady_attribution()
    assert 0.35 < steady["idle"] / sum(steady.values()) < 0.55
    assert 3 * MS < steady["kernel"] < 8 * MS
    assert steady["host_compute"] == 0  # the pauses in gaps are not the user's host work
    host = next(f for f in diag.findings if f.rule == "host_compute")
    assert host.grade == "none"


@pytest.mark.parametrize("relative", ["cnn/tf-eager", "mlp2/torch-eager", "mlp2/tf-eager"])
def test_steady_steps_of_an_idle_machine_have_no_pause(relative: str) -> None:
    diag = _diagnosis(relative)
    paused = next(f for f in diag.findings if f.rule == "paused")
    assert paused.evidence["steps_paused"] == 0 and paused.grade == "none"
    assert diag.steady_details().get("idle.paused", 0.0) == 0.0


def test_pauses_are_kept_out_of_the_host_time_per_op() -> None:
    # The ground-truth contention case: the same step with and without another process on the
    # step thread's CPU. Its framework ops cost the same; the pauses are the difference.
    case = Path(__file__).resolve().parents[1] / "benchmarks/truth/cases/tf-cpu-contention"
    if not case.is_dir():
        pytest.skip("no tf-cpu-contention case")
    clean, injected = (cached_diagnosis(next((case / v).rglob("*.xplane.pb*"))) for v in ("clean", "injected"))
    assert injected.launch.ops_per_step == clean.launch.ops_per_step
    assert abs(injected.launch.host_ns_per_op / clean.launch.host_ns_per_op - 1) < 0.25
    assert injected.steady_details()["idle.paused"] > 0.3 * injected.steady_step_ns


def test_pauses_are_kept_out_of_the_op_tables() -> None:
    case = Path(__file__).resolve().parents[1] / "benchmarks/truth/cases/tf-cpu-contention"
    if not case.is_dir():
        pytest.skip("no tf-cpu-contention case")
    clean, injected = (cached_diagnosis(next((case / v).rglob("*.xplane.pb*"))) for v in ("clean", "injected"))
    for table in ("kernels", "ops"):
        a, b = (getattr(d, table).to_pandas().set_index("name")["time_per_step_ns"] for d in (clean, injected))
        top = a.index[0]
        assert abs(b[top] / a[top] - 1) < 0.25, (table, top, a[top], b[top])


def test_places_read_as_a_stretch_are_the_gathered_ones() -> None:
    from traceview.analyzers.pauses import Places

    values = np.arange(40) * 3
    # Steps one after another, apart, and runs of each (a capture of several profiler windows).
    for places in (Places([4, 7, 10], 3), Places([4, 8, 20], 3), Places([1, 4, 7, 15, 18, 30], 3)):
        assert np.array_equal(places.take(values), values[places.positions()])
        step_row, place = np.nonzero(np.eye(len(places.begins), 3, dtype=bool)[::-1])
        assert np.array_equal(places.at(step_row, place), places.positions()[step_row, place])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9), st.integers(0, 6), st.lists(st.integers(-2**40, 2**40) | st.integers(0, 3), min_size=54,
                                                       max_size=54))
def test_column_medians_are_numpy_medians(rows: int, columns: int, values: list[int]) -> None:
    from traceview.analyzers.pauses import _column_medians

    matrix = np.array(values[:rows * columns], dtype=np.int64).reshape(rows, columns)
    assert np.array_equal(_column_medians(matrix), np.median(matrix, axis=0))


def test_column_medians_of_many_equal_and_sorted_values() -> None:
    from traceview.analyzers.pauses import _column_medians

    for matrix in (np.full((4000, 3), 7, dtype=np.int64), np.arange(8000, dtype=np.int64).reshape(4000, 2),
                   np.arange(8000, dtype=np.int64)[::-1].reshape(4000, 2).copy(),
                   np.tile(np.array([[1], [5]], dtype=np.int64), (1001, 4))):
        assert np.array_equal(_column_medians(matrix), np.median(matrix, axis=0))
