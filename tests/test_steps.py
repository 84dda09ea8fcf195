"""Which steps are cold: the warm-up that lasts several steps with nothing recorded to show it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceview
from traceview.analyzers.steps import WARMUP_FACTOR, _still_warming_up

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
TORCHSCRIPT = sorted(SAMPLES.glob("*/torch-torchscript"))


def _warming(durations: list[float], cold: list[bool]) -> list[int]:
    return [int(i) for i in np.flatnonzero(_still_warming_up(np.array(durations), np.array(cold)))]


def test_a_leading_run_of_slow_steps_is_warm_up() -> None:
    # After a cold first step, each next step far slower than the steps after it is still warming up.
    assert _warming([100, 10, 9, 1, 1, 1], [True, False, False, False, False, False]) == [1, 2]
    # The run ends at the first step that is not: a slow step later on is not warm-up.
    assert _warming([100, 1, 9, 1, 1], [True, False, False, False, False]) == []
    # The bar is WARMUP_FACTOR × the median of the steps after it, not the first step's 1.5×.
    assert _warming([100, WARMUP_FACTOR * 0.99, 1, 1], [True, False, False, False]) == []
    assert _warming([100, WARMUP_FACTOR * 1.01, 1, 1], [True, False, False, False]) == [1]
    # Only after a cold first step; the last step has no steps after it to be judged against.
    assert _warming([1, 10, 1, 1], [False, False, False, False]) == []
    assert _warming([100, 10], [True, False]) == []
    # A step already cold (a manifest's warm-up step) continues the run without being counted again.
    assert _warming([100, 2, 10, 1, 1], [True, True, False, False, False]) == [2]


@pytest.mark.skipif(not TORCHSCRIPT, reason="sample_traces/ not present")
@pytest.mark.parametrize("folder", TORCHSCRIPT, ids=[f.parent.name for f in TORCHSCRIPT])
def test_torchscript_optimizing_call_is_not_steady(folder: Path) -> None:
    """The profiling executor optimizes the differentiable graph on a later call, inside
    DifferentiableGraphBackward's own time (step 2 of the training captures, 5–18× a steady
    step): that step is warm-up, so no steady step is an outlier of that size and the
    steady-state cause table (a mean) heads a step near the median it is shown with."""
    diagnosis = traceview.diagnose(folder)
    table = diagnosis.steps.table
    steady = table["duration"].to_numpy()[diagnosis.steady_positions]
    assert steady.max() < WARMUP_FACTOR * np.median(steady), table[["number", "duration", "cold"]]
    assert sum(diagnosis.steady_attribution().values()) == pytest.approx(steady.mean(), rel=1e-6)
