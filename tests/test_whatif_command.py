"""``traceview whatif`` and ``traceview.whatif`` on real traces: the replay as recorded gives the
recorded steps back, a transformation predicts a shorter step with its critical path, each
finding's fix comes in the order to make them, and bad options are one line (docs/whatif.md)."""

from __future__ import annotations

import json

import pytest

import traceview
from tests.conftest import SAMPLES, shared_trace
from tests.test_cli import run_cli

TF_EAGER = SAMPLES / "mlp2" / "tf-eager"


def test_dispatch_per_op_predicts_a_compiled_step_from_the_eager_trace() -> None:
    what = traceview.whatif(TF_EAGER, dispatch_per_op_us=5)
    steps = what.steps
    assert (abs(steps["replayed_ns"] - steps["recorded_ns"]) <= 0.02 * steps["recorded_ns"]).all()  # identity
    assert what.predicted_step_ns < 0.3 * what.steady_step_ns  # dispatch was ~94 % of the eager step
    assert what.saving_ns == pytest.approx(what.steady_step_ns - what.predicted_step_ns)
    # The predicted step is the math and 5 µs per op on the step's thread.
    ops = what.diagnosis.launch.ops_per_step
    assert what.path_ns["launch_overhead"] == pytest.approx(5_000 * ops, rel=0.05)
    assert what.path_ns["kernel"] == pytest.approx(what.diagnosis.steady_attribution()["kernel"], rel=0.02)
    assert sum(what.lane_ns.values()) == pytest.approx(what.predicted_step_ns, rel=1e-6)


def test_the_command_prints_the_prediction_in_each_format() -> None:
    terminal = run_cli("whatif", str(TF_EAGER), "--dispatch-per-op", "5us", "--width", "100")
    assert terminal.returncode == 0, terminal.stderr
    assert "replayed with dispatch 5 µs per op" in terminal.stdout and "Critical path of the predicted step" in terminal.stdout
    md = run_cli("whatif", str(TF_EAGER), "--without", "launch_overhead", "-f", "md")
    assert md.returncode == 0 and "without launch_overhead" in md.stdout
    doc = json.loads(run_cli("whatif", str(TF_EAGER), "--scale", "kernel=0.5", "-f", "json").stdout)
    assert doc["predicted_step_ns"] < doc["steady_step_ns"]
    assert doc["critical_path"]["buckets_ns"]["kernel"] == pytest.approx(
        0.5 * traceview.diagnose(TF_EAGER).steady_attribution()["kernel"], rel=0.02)
    html = run_cli("whatif", str(TF_EAGER), "-f", "html")
    assert html.returncode == 2 and len(html.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--without", "gpu_time"], "'gpu_time' is no cause to remove or scale"),
    (["--scale", "kernel=-1"], "the factor must be a number at least 0"),
    (["--scale", "kernel"], "kernel"),
    (["--dispatch-per-op", "fast"], "fast"),
])
def test_bad_transformations_are_one_line(args: list[str], message: str) -> None:
    done = run_cli("whatif", str(TF_EAGER), *args)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


def test_fixes_come_in_the_order_to_make_them() -> None:
    """On a DDP rank whose launches set the step's length, launch overhead is the first fix and
    the collectives save nothing alone, all their time once it is made."""
    what = traceview.whatif(shared_trace("torch_gpu/v100_2rank_rank1_large.json.gz"))
    rules = [rule for rule, *_ in what.fixes]
    assert rules == [f.rule for f in what.diagnosis.findings if f.rule in rules]  # the findings' ranking
    first = what.fixes[0]
    assert first[1] == "launch_overhead" and first[4] is None
    comm = next(fix for fix in what.fixes if fix[0] == "exposed_communication")
    assert comm[3] < 0.01 * what.steady_step_ns < comm[4]
    text = traceview.render(what, "terminal", width=120)
    assert "in the order to make them" in text and "once launch_overhead is removed" in text
