"""The profiler's inflation comes with the interval its two runs' spread allows, and is flagged
where that spread, or profiled steps faster than unprofiled ones, make it no fact to act on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import traceview

SAMPLE = Path(__file__).resolve().parents[1] / "sample_traces" / "mlp2" / "torch-eager"


def _with_unprofiled(tmp_path: Path, steps_s: list[float]) -> traceview.Diagnosis:
    """The sample capture, its manifest's unprofiled steps replaced (the cold one first)."""
    for path in SAMPLE.iterdir():
        shutil.copy(path, tmp_path / path.name)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["timing"]["unprofiled_s"] = [1.0, *steps_s]
    manifest["timing"]["steady_median_unprofiled_s"] = sorted(steps_s)[len(steps_s) // 2]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return traceview.diagnose(tmp_path)


def test_a_quiet_calibration_has_an_interval_around_its_inflation() -> None:
    diag = traceview.diagnose(SAMPLE)
    low, high = diag.profiler_inflation_range
    assert low <= diag.profiler_inflation <= high
    assert diag.calibration_doubt is None
    assert f"profiler ×{diag.profiler_inflation:.2f} (×{low:.2f}–{high:.2f})" in traceview.render(diag, "md")


def test_a_busy_unprofiled_run_is_flagged_not_printed_as_a_fact(tmp_path: Path) -> None:
    # The unprofiled steps range 136 ms – 3.0 s around 1.4 ms profiled steps: ×0.003 is noise.
    diag = _with_unprofiled(tmp_path, [0.136, 0.4, 1.5, 3.0])
    doubt = diag.calibration_doubt
    assert doubt is not None
    assert "ran faster under the profiler" in doubt and "middle half ranged" in doubt
    report = traceview.render(diag, "md")
    assert "unreliable, see the notes" in report and "time both runs again" in report
    assert diag.to_dict()["steady_state"]["calibration_doubt"] == doubt


def test_profiled_steps_a_little_faster_within_the_spread_are_noise(tmp_path: Path) -> None:
    profiled = float(traceview.diagnose(SAMPLE).steady_step_ns) / 1e9
    diag = _with_unprofiled(tmp_path, [profiled * f for f in (0.9, 1.0, 1.02, 1.1)])
    assert diag.profiler_inflation_range[1] >= 1.0
    assert diag.calibration_doubt is None
