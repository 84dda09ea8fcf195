"""compare and findings on real traces; markdown safety on hostile names."""

from __future__ import annotations

import numpy as np

import subprocess
import sys

import orjson
import pytest

from tests.conftest import REPO, cached_diagnosis, shared_trace
from traceview.schema import event_table
from traceview.analyzers.compare import compare, concluded
from traceview.analyzers.findings.diagnosis import RULES
from traceview.results import BUCKETS, GRADES
from traceview.renderers.markdown import cell


@pytest.fixture(scope="module")
def gpu_pair():
    a = cached_diagnosis(shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz"))
    b = cached_diagnosis(shared_trace("torch_gpu/v100_2rank_rank1_large.json.gz"))
    return compare(a, b)


def test_bucket_deltas_add_up_to_the_gap(gpu_pair):
    cmp = gpu_pair
    assert sum(d.delta_ns for d in cmp.buckets) == pytest.approx(cmp.gap_ns, rel=1e-9)
    assert cmp.ratio == pytest.approx(cmp.candidate_step_ns / cmp.baseline_step_ns)
    assert [d.bucket for d in cmp.buckets] == list(BUCKETS)
    ranked = cmp.ranked()
    assert ranked[0].delta_ns == max(d.delta_ns for d in cmp.buckets if d.bucket != "idle")
    assert 0.0 <= cmp.explained_share <= 1.0


def test_swapping_sides_flips_the_gap(gpu_pair):
    swapped = compare(gpu_pair.candidate, gpu_pair.baseline)
    assert swapped.gap_ns == pytest.approx(-gpu_pair.gap_ns)
    assert swapped.ranked()[0].bucket == gpu_pair.ranked()[0].bucket


def test_every_rule_reports_a_grade_with_evidence_or_a_skip_reason():
    diag = cached_diagnosis(shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz"))
    # Every rule but those about what this single-GPU trace does not run: collectives, autograd
    # anomaly detection, another thread holding the interpreter lock.
    assert diag.communication is None
    assert sorted(f.rule for f in diag.findings) == sorted(row.name for row, _ in RULES
                                                           if row.name not in ("exposed_communication",
                                                                               "anomaly_detection",
                                                                               "gil_contention"))
    # Ranked: graded problems first, largest explained time first; then no-problem; then skipped.
    tiers = [{"high": 0, "moderate": 0, "none": 1, "skipped": 2}[f.grade] for f in diag.findings]
    assert tiers == sorted(tiers)
    graded = [f.explains_ns for f in diag.findings if f.grade in ("high", "moderate")]
    assert graded == sorted(graded, reverse=True)
    for f in diag.findings:
        assert f.grade in GRADES
        if f.grade == "skipped":
            assert f.summary.startswith("skipped: needs")
        else:
            assert f.evidence and f.threshold


def test_fail_if_slower_gate_sets_the_exit_status():
    a = str(shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz"))
    b = str(shared_trace("torch_gpu/v100_2rank_rank1_large.json.gz"))
    env = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    slower = subprocess.run([sys.executable, "-m", "traceview", "compare", a, b, "--fail-if-slower", "10",
                             "--format", "json"], capture_output=True, text=True, env=env, cwd=REPO)
    assert slower.returncode == 1, slower.stderr
    assert "slower than the baseline" in slower.stderr
    doc = orjson.loads(slower.stdout)
    assert doc["comparison"]["ratio"] > 1.1
    faster = subprocess.run([sys.executable, "-m", "traceview", "compare", b, a, "--fail-if-slower", "10",
                             "--format", "md"], capture_output=True, text=True, env=env, cwd=REPO)
    assert faster.returncode == 0, faster.stderr
    assert faster.stdout.startswith("### traceview compare")


def test_markdown_cells_cannot_break_tables():
    hostile = "void k<a|b>(`x`)\n<script>alert(1)</script> *bold* _it_"
    escaped = cell(hostile)
    assert "|" not in escaped.replace("\\|", "")
    assert "<" not in escaped and ">" not in escaped
    assert "\n" not in escaped
    assert "`" not in escaped.replace("\\`", "")


def test_docs_findings_list_every_rule():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "findings.md").read_text(encoding="utf-8")
    for row, _ in RULES:
        assert f"| `{row.name}` |" in doc, row.name


def test_a_trace_against_itself_is_no_significant_difference_and_passes_the_gate(tmp_path) -> None:
    """Noise: a trace compared with itself has ratio 1 inside its interval; the report says so instead of
    'N× slower … % of the gap', and --fail-if-slower 0 does not fail on it."""
    folder = REPO / "sample_traces" / "mlp2" / "torch-eager"
    result = subprocess.run([sys.executable, "-m", "traceview", "compare", str(folder), str(folder), "--format", "json",
                             "--fail-if-slower", "0"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    cmp = orjson.loads(result.stdout)["comparison"]
    low, high = cmp["ratio_interval"]
    assert low < 1.0 < high and cmp["significant"] is False
    text = subprocess.run([sys.executable, "-m", "traceview", "compare", str(folder), str(folder)],
                          capture_output=True, text=True).stdout
    assert "No significant difference" in text and "slower" not in text.split("\n\n")[1]


def test_the_gate_fails_a_slowdown_beyond_the_noise() -> None:
    base, cand = REPO / "sample_traces" / "mlp2" / "torch-eager", REPO / "sample_traces" / "mlp2" / "tf-eager"
    result = subprocess.run([sys.executable, "-m", "traceview", "compare", str(base), str(cand), "--format", "json",
                             "--fail-if-slower", "100"], capture_output=True, text=True)
    cmp = orjson.loads(result.stdout)["comparison"]
    assert cmp["significant"] and cmp["ratio_interval"][0] > 2.0
    assert result.returncode == 1 and "with 95 % confidence" in result.stderr


def test_headline_of_a_candidate_whose_steps_last_nothing() -> None:
    # Edge case, hand-built: a candidate whose steady steps all last 0 ns gives a ratio interval
    # from 0; seen from the baseline, the interval is unbounded above, not a division by zero.
    from types import SimpleNamespace

    from traceview.text import gap_headline

    cmp = SimpleNamespace(gap_ns=-1_000_000.0, ratio_interval=(0.0, 0.0), candidate_step_ns=0.0,
                          baseline_step_ns=1_000_000.0, significant=True, ratio=0.0, ranked=lambda: [],
                          batch_ratio=None, interval_without_pauses=False, run_to_run=False)
    lead, rest = gap_headline(cmp)
    assert lead.startswith("The baseline is") and "95 % interval" not in rest
    cmp.ratio_interval = (0.0, 0.5)
    assert "95 % interval 2.00–∞×" in gap_headline(cmp)[1]


def test_the_ratio_interval_leaves_the_pauses_out_where_they_hide_a_difference() -> None:
    """A pause (the machine took the core) in one steady step is the machine's, not the program's:
    where the steps of the durations less their pauses give an interval that excludes 1 on the
    ratio's side, that interval is the one shown (a 2.2 ms pause in one of five foreach-Adam steps
    turned an 18 % faster optimizer into "no significant difference"); otherwise the plain one."""
    import dataclasses

    from tests.conftest import SAMPLES, cached_diagnosis
    from traceview.analyzers.compare import ratio_interval, steady_durations
    from traceview.loader import trace_paths
    from traceview.results import PAUSED_DETAIL

    base = cached_diagnosis(trace_paths(SAMPLES / "mlp2" / "torch-eager")[0])
    plain = steady_durations(base)

    def variant(diag, scale: float, pause: float):  # noqa: ANN001, ANN202 - steps scaled, the first one paused
        details = diag.attribution.details.copy()
        paused = np.zeros(len(details))
        first = diag.steady_positions[0]
        paused[first] = pause * plain[0]
        details[PAUSED_DETAIL] = paused
        table = diag.steps.table.copy()
        duration = (table["duration"] * scale).astype(np.int64)
        duration[first] += int(pause * plain[0])
        table["duration"] = duration
        return dataclasses.replace(diag, steps=dataclasses.replace(diag.steps, table=table),
                                   attribution=dataclasses.replace(diag.attribution, details=details))

    only_paused = variant(base, 1.0, 3.0)  # one step 4x as long, all of it a pause
    assert np.allclose(steady_durations(only_paused, without_pauses=True), plain, atol=1)
    assert ratio_interval(base, only_paused)[1] is False  # less its pause it is the baseline: nothing hidden
    faster = variant(base, 0.6, 0.5)  # every step 40 % faster, one of them paused half a step
    interval, without = ratio_interval(base, faster)
    assert without and interval[1] < 1.0
    unpaused, flagged = ratio_interval(base, variant(base, 0.6, 0.0))  # (no pause: the same interval, unflagged)
    assert not flagged and np.allclose(unpaused, interval, rtol=1e-5)


def test_the_same_ops_slower_beside_the_candidates_own_dataloader_workers_are_named() -> None:
    """Real captures (tests/data/torch_cpu_workers/capture.py): one MLP step fed by a DataLoader
    without workers, then with two worker processes on a two-core machine. The candidate's
    compute ops are the same ops at the same counts, many times slower: the gap is kernel time,
    and its advice says it is the same work slower and names the workers (it said only "kernel").
    Sides swapped, the slower side is the baseline; a pair whose kernel delta is more ops (the
    large-matmul ground-truth case) gets no such advice."""
    from traceview.analyzers.findings.comparison import SAME_WORK_SLOWER
    from traceview.loader import trace_paths

    def diagnosis(folder):  # noqa: ANN001, ANN202
        return cached_diagnosis(trace_paths(folder)[0])

    data = REPO / "tests" / "data" / "torch_cpu_workers"
    alone, workers = diagnosis(data / "no_workers"), diagnosis(data / "two_workers")

    def gap_kernel(cmp):  # noqa: ANN001, ANN202
        return next(f for f in cmp.findings if f.rule == "gap_kernel")

    slower = gap_kernel(compare(alone, workers))
    assert slower.evidence["same_ops_ratio"] >= SAME_WORK_SLOWER[0] and slower.evidence["own_dataloader_workers"]
    assert slower.advice.startswith("the same compute ops, at the same counts per step, took")
    assert "in the candidate" in slower.advice and "the candidate's DataLoader worker processes" in slower.advice
    swapped = gap_kernel(compare(workers, alone))
    assert "in the baseline" in swapped.advice and "the baseline's DataLoader worker processes" in swapped.advice
    truth = REPO / "benchmarks" / "truth" / "cases" / "torch-large-matmul"
    more_math = gap_kernel(compare(diagnosis(truth / "clean"), diagnosis(truth / "injected")))
    # (its same-named ops are slower too, but the extra kernel time is the new matmul's)
    assert more_math.advice == "" and more_math.evidence["same_ops_share_of_delta"] < SAME_WORK_SLOWER[1]


def test_the_same_ops_slower_with_more_dtype_casts_name_the_dtype() -> None:
    """Real captures (tests/data/tf_cpu_mixed_precision/capture.py): the same Keras fit of a CNN
    under the float32 and the mixed_float16 policy on a CPU without native half precision. The
    same ops at the same counts take many times as long, and the candidate runs many more Cast
    ops: gap_kernel names the dtype (it read as kernel only, "speed up the math")."""
    from traceview.analyzers.findings.comparison import MORE_DTYPE_CASTS, SAME_WORK_SLOWER
    from traceview.loader import trace_paths

    data = REPO / "tests" / "data" / "tf_cpu_mixed_precision"
    float32, mixed = (cached_diagnosis(trace_paths(data / policy)[0]) for policy in ("float32", "mixed_float16"))
    cmp = compare(float32, mixed)
    base_casts, cand_casts = cmp.dtype_casts_per_step
    assert cand_casts >= max(MORE_DTYPE_CASTS[0] * base_casts, base_casts + MORE_DTYPE_CASTS[1])
    kernel = next(f for f in cmp.findings if f.rule == "gap_kernel")
    assert kernel.evidence["same_ops_ratio"] >= SAME_WORK_SLOWER[0]
    assert "the candidate casts dtypes" in kernel.advice and "mixed precision" in kernel.advice


def test_sides_captured_with_different_profiler_options_are_warned_about() -> None:
    """The same torch program captured with and without Python events (tests/data/torch_cpu_python
    tokenize vs tokenize_stack): the Python tracer's own cost is in one side's host time, so the
    first paragraph says which side has them. Input shapes recorded on one torch side only
    (the sample captures record them; the tiny-ops ground-truth case does not) change how tiny
    ops read: said too. Across frameworks shapes are not compared (only torch records them), and
    a pair captured alike gets no such sentence."""
    from traceview.analyzers.compare import RECORDED_EXTRAS
    from traceview.loader import trace_paths
    from traceview.text import gap_caveats

    def diagnosis(folder):  # noqa: ANN001, ANN202
        return cached_diagnosis(trace_paths(folder)[0])

    data = REPO / "tests" / "data" / "torch_cpu_python"
    plain, stack = diagnosis(data / "tokenize"), diagnosis(data / "tokenize_stack")
    cmp = compare(plain, stack)
    assert "python_events" in cmp.recorded[1] and "python_events" not in cmp.recorded[0]
    assert "Only the candidate was captured with Python events" in gap_caveats(cmp)
    assert "Only the baseline was captured with Python events" in gap_caveats(compare(stack, plain))
    assert "captured with" not in gap_caveats(compare(plain, plain))
    samples = REPO / "sample_traces" / "mlp2"
    shapes = diagnosis(samples / "torch-eager")
    no_shapes = diagnosis(REPO / "benchmarks" / "truth" / "cases" / "torch-tiny-ops" / "clean")
    assert set(cmp.recorded[0]) | set(cmp.recorded[1]) <= set(RECORDED_EXTRAS)
    assert "Only the candidate was captured with input shapes" in gap_caveats(compare(no_shapes, shapes))
    assert "input shapes" not in gap_caveats(compare(shapes, diagnosis(samples / "tf-eager")))


def test_compute_ops_take_the_family_of_their_top_level_op():
    """A real capture (tests/data/keras_torch_fit/capture.py): Keras fit on the torch backend,
    whose Adam runs as top-level multi-tensor ops (aten::_foreach_*) with no torch.optim range;
    they compute through aten::add / aten::mul / aten::sqrt. On a CPU trace a compute op takes its
    top-level op's family where that op's own name has one, as a device kernel takes its
    launcher's: the update is optimizer time (it read as elementwise, and a torch loop's equal
    update as 10x the optimizer time of Keras')."""
    from traceview.analyzers.compare import FAMILIES, op_families
    from traceview.loader import trace_paths
    from traceview.normalize import compute_self_time, math_ops, nearest_ancestor, top_level_ops

    diag = cached_diagnosis(trace_paths(REPO / "tests" / "data" / "keras_torch_fit" / "fit")[0])
    ev = diag.timeline.events
    names = ev["name"].astype(str).to_numpy()
    foreach = top_level_ops(event_table(ev)) & np.char.startswith(names.astype(str), "aten::_foreach_")
    assert foreach.any()
    rows = np.flatnonzero(math_ops(event_table(ev)) & diag.steps.in_steady(ev))
    under = rows[nearest_ancestor(event_table(ev), rows, foreach) >= 0]
    update_ns = compute_self_time(event_table(ev))[under].sum() / len(diag.steady_positions)
    families = op_families(diag)
    assert "optimizer" in FAMILIES and families.loc["optimizer", "compute_ns"] >= update_ns > 0
    assert families.loc["optimizer", "compute_ns"] > families.loc["elementwise", "compute_ns"]


@pytest.mark.parametrize("name,family", [
    ("dot.3", "matmul"),  # XLA numbers its instructions: the same op as "dot"
    ("dot_general.2", "matmul"),
    ("aten::addmm", "matmul"),
    ("sequential/dense/Cast:Cast", "copy"),  # TF's Cast op
    ("broadcast_multiply_fusion", "other"),  # not a Cast: "broadcast" only ends in "cast"
    ("aten::broadcast_tensors", "other"),
    ("autograd::engine::evaluate_function: AddmmBackward0", "matmul"),
])
def test_op_families_of_names(name: str, family: str) -> None:
    from traceview.categories import op_family

    assert op_family(name) == family


def test_a_noise_level_steady_difference_pays_no_cold_step_back():
    """A torch.compile candidate whose steady steps differ from eager's by no more than their noise
    was said to pay its 15 s cold step back "after 65374 steady steps" (15 s over a 0.2 ms
    difference the same report called noise). With the ratio's interval holding 1 there is no
    measurable steady gain; with an interval beyond 1 the payback stands as before."""
    from traceview.analyzers.compare import _cold_start
    from traceview.loader import trace_paths

    samples = REPO / "sample_traces" / "mlp2"
    eager, compiled = (cached_diagnosis(trace_paths(samples / mode)[0]) for mode in ("torch-eager", "torch-compile"))
    noise = _cold_start(eager, compiled, (0.9, 1.1))
    assert noise.payback_steps is None
    assert noise.payback_note == ("the candidate's cold step is larger and the steady steps differ by no more than "
                                  "their noise: no measurable steady gain pays it back")
    assert _cold_start(eager, compiled, None).payback_note == _cold_start(eager, compiled, (1.2, 1.5)).payback_note


def test_the_same_ops_slower_beside_the_input_pipelines_threads_are_named():
    """The tf-input-pyfunc ground-truth pair: the injected side's tf.data map runs a Python function
    on tf.data's threads (8.6 ms a step) beside the step's math, on the same two cores; the step's
    same ops at the same counts take longer. gap_kernel names the input threads (it said "kernel"),
    with the time each side's pipeline runs beside its step."""
    from traceview.analyzers.findings.comparison import INPUT_BESIDE_SHARE, SAME_WORK_SLOWER
    from traceview.loader import trace_paths

    truth = REPO / "benchmarks" / "truth" / "cases" / "tf-input-pyfunc"
    clean, injected = (cached_diagnosis(trace_paths(truth / side)[0]) for side in ("clean", "injected"))
    cmp = compare(clean, injected)
    base, cand = cmp.input_beside_step_ns
    kernel = next(f for f in cmp.findings if f.rule == "gap_kernel")
    slow, fast = cmp.same_count_compute_ns[1], cmp.same_count_compute_ns[0]
    assert kernel.evidence["same_ops_ratio"] >= SAME_WORK_SLOWER[0]
    assert cand - base >= INPUT_BESIDE_SHARE * (slow - fast) > 0
    assert "the candidate's input pipeline runs" in kernel.advice and "on other threads beside its math" in kernel.advice


def _same_program_pair():  # noqa: ANN202
    """tests/data/torch_cpu_same_program: one unchanged program captured twice (README.md there)."""
    from traceview.loader import trace_paths

    data = REPO / "tests" / "data" / "torch_cpu_same_program"
    return tuple(cached_diagnosis(trace_paths(data / run)[0]) for run in ("run_a", "run_b"))


def _truth_pair(case: str):  # noqa: ANN202
    import json

    from benchmarks.truth.score import _trace

    folder = REPO / "benchmarks" / "truth" / "cases" / case
    truth = json.loads((folder / "ground_truth.json").read_text())
    return tuple(cached_diagnosis(_trace(folder, truth, variant)) for variant in ("clean", "injected"))


def _scaled(cmp, ratio: float):  # noqa: ANN001, ANN202
    """The comparison with the candidate's buckets (and its same ops' compute) all scaled, as a run's
    speed scales them, to ``ratio`` times the baseline's step (its interval with them, 5 % either side)."""
    import dataclasses

    from traceview.results import BucketDelta

    from traceview.analyzers.compare import concluded

    scale = ratio * cmp.baseline_step_ns / cmp.candidate_step_ns
    return concluded(dataclasses.replace(cmp, buckets=tuple(BucketDelta(d.bucket, d.baseline_ns, d.candidate_ns * scale)
                                                  for d in cmp.buckets), ratio_interval=(ratio * 0.95, ratio * 1.05),
                               same_count_compute_ns=(None if cmp.same_count_compute_ns is None else
                                                      (cmp.same_count_compute_ns[0],
                                                       cmp.same_count_compute_ns[1] * scale))))


def test_two_captures_of_one_program_name_no_cause() -> None:
    """Real captures of one program (tests/data/torch_cpu_same_program): the second ran on a slowed
    machine, 1.44x the first in the trace, 0.94x by the captures' own unprofiled timing. Both run the
    same work and record nothing that differs: no cause is named and the first line says why (it read
    'HIGH gap_kernel … the same compute ops took 2.0x as long'). The same holds for the JAX
    same-program ground-truth pair, which has no unprofiled timing (1.33x profiled)."""
    from traceview.renderers.report import listed_causes
    from traceview.text import gap_headline
    from traceview.analyzers.compare import RUN_TO_RUN_RATIO, UNPROFILED_RUN_TO_RUN_RATIO

    cmp = compare(*_same_program_pair())
    assert cmp.same_work and cmp.known_differences == () and cmp.ratio > 1.4
    spread, bound, unprofiled = cmp.run_spread
    assert unprofiled and bound == UNPROFILED_RUN_TO_RUN_RATIO and spread < bound and cmp.run_to_run
    (gap,) = cmp.findings
    assert gap.rule == "gap" and gap.grade == "none" and gap.evidence["run_to_run"]
    # (the collector records input shapes: the same on both sides, so no caveat about them)
    assert cmp.shapes_compared and "without the profiler" in gap.summary and "tensor shapes" not in gap.summary
    lead, rest = gap_headline(cmp)
    assert lead == "No difference beyond run-to-run variation" and "apart without the profiler" in rest
    assert "differ in size" not in rest and listed_causes(cmp) == []
    jax = compare(*_truth_pair("jax-same-program"))
    assert jax.unprofiled_ratio is None and jax.run_spread[1] == RUN_TO_RUN_RATIO and jax.run_to_run
    # Without recorded shapes, inputs of another size would look the same: the report says so.
    (jax_gap,) = jax.findings
    assert not jax.shapes_compared and "record no tensor shapes" in jax_gap.summary
    assert "inputs of another size" in jax_gap.advice and "unless the inputs differ in size" in gap_headline(jax)[1]


def test_the_same_work_beyond_the_runs_own_variation_names_causes_that_say_so() -> None:
    """The JAX same-program pair with its candidate scaled beyond RUN_TO_RUN_RATIO: causes are named,
    and their advice says both run the same work with nothing recorded to tell them apart (the
    dispatch gap had no advice; the kernel one listed threads, dtype and shapes first)."""
    from traceview.analyzers.findings.comparison import comparison_findings
    from traceview.analyzers.compare import RUN_TO_RUN_RATIO

    slower = _scaled(compare(*_truth_pair("jax-same-program")), RUN_TO_RUN_RATIO + 0.3)
    assert slower.same_work and not slower.run_to_run
    assert any(f.rule == "gap_kernel" and f.grade == "high" for f in comparison_findings(slower))
    # (compiled programs' op names are no sign of the same math: no same-ops advice for them)
    torch_slower = _scaled(compare(*_truth_pair("torch-same-program")), RUN_TO_RUN_RATIO + 0.3)
    found = {f.rule: f for f in comparison_findings(torch_slower)}
    assert "nothing else they record tells the runs apart" in found["gap_kernel"].advice
    dispatch = found["gap_launch_overhead"]
    assert dispatch.evidence["same_work"] and dispatch.evidence["dispatch_ratio"] > 1.0
    assert "not more ops but slower host work per op" in dispatch.advice


def test_ops_on_another_dtype_are_a_recorded_difference_and_named() -> None:
    """Real captures (tests/data/torch_cpu_dtype, README.md there): one MLP step in float32, then in
    float64, both with record_shapes. The same ops at the same counts run slower, and both traces
    record their ops' input types: the comparison knows the runs differ in dtype, so even a gap
    within the runs' own variation names its causes (it said "No difference beyond run-to-run
    variation" at 1.2x, and beyond it "nothing else they record tells the runs apart"), and
    gap_kernel names the two dtypes, whichever side is slower."""
    import dataclasses

    from traceview.analyzers.findings.comparison import comparison_findings

    data = REPO / "tests" / "data" / "torch_cpu_dtype"
    float32, float64 = (cached_diagnosis(data / f"{dtype}.pt.trace.json.gz") for dtype in ("float32", "float64"))
    cmp = compare(float32, float64)
    assert cmp.same_work and cmp.known_differences == ("input dtypes",)
    kernel = next(f for f in cmp.findings if f.rule == "gap_kernel")
    # (every op both run changed; the loss's int64 targets stay beside its inputs)
    changes = {(a, b) for a, b, _ in cmp.input_dtype_changes}
    assert ("float", "double") in changes and ("float+long int", "double+long int") in changes
    assert all(a.replace("float", "double") == b for a, b in changes)
    assert kernel.evidence["input_dtypes"] == ["float", "double"]
    assert "the candidate's ops take double inputs where the baseline's take float" in kernel.advice
    assert "float64 math" in kernel.advice and "nothing else they record" not in kernel.advice
    swapped = next(f for f in compare(float64, float32).findings if f.rule == "gap_kernel")
    assert "the baseline's ops take double inputs where the candidate's take float" in swapped.advice
    # Within the runs' own variation, the recorded dtypes still tell the runs apart.
    near = _scaled(cmp, 1.2)
    assert near.gap_in_same_ops and not near.run_to_run
    assert any(f.rule == "gap_kernel" for f in comparison_findings(near))
    assert concluded(dataclasses.replace(near, known_differences=())).run_to_run
    # Two captures of one program record the same dtypes: no difference; nor do eager and TorchScript
    # runs of one model (other ops, in the same dtypes).
    same = compare(*_same_program_pair())
    assert "input_shapes" in same.recorded[0] and same.input_dtype_changes == ()
    assert "input dtypes" not in same.known_differences
    scripted = compare(*_truth_pair("torch-torchscript-vs-eager"))
    assert "input_shapes" in scripted.recorded[0] and scripted.input_dtype_changes == ()


def test_each_condition_of_the_runs_own_variation_is_needed() -> None:
    """Each condition of Comparison.run_to_run, taken away alone from a same-program pair, brings the
    causes back: a recorded difference between the runs, the gap moved into the user's Python
    (work the per-op alignment does not see), other work on one side."""
    import dataclasses

    from traceview.analyzers.findings.comparison import comparison_findings
    from traceview.results import BucketDelta

    same = _scaled(compare(*_truth_pair("jax-same-program")), 1.2)
    assert same.run_to_run

    def names_causes(variant) -> bool:  # noqa: ANN001
        return any(f.grade in ("high", "moderate") for f in comparison_findings(concluded(variant)))

    assert not names_causes(same)
    assert names_causes(dataclasses.replace(same, known_differences=("intra_op_threads",)))
    into_python = tuple(BucketDelta(d.bucket, d.baseline_ns,
                                    d.baseline_ns + (same.gap_ns if d.bucket == "host_compute" else 0.0))
                        for d in same.buckets)
    assert names_causes(dataclasses.replace(same, buckets=into_python))
    assert names_causes(dataclasses.replace(same, same_work_shares=(1.0, 0.9)))


def test_a_pair_with_an_injected_cause_is_never_the_runs_own_variation() -> None:
    """Every steady ground-truth pair adds a cost to an otherwise unchanged step: none may read as
    run-to-run variation, even those whose ops are the same on both sides (Python, input, pauses,
    intra-op threads)."""
    import json

    from benchmarks.truth.score import _trace, case_folders

    checked = 0
    for folder in case_folders():
        truth = json.loads((folder / "ground_truth.json").read_text())
        if truth["case"]["window"] != "steady" or truth["case"].get("kind", "cause") != "cause":
            continue
        cmp = compare(cached_diagnosis(_trace(folder, truth, "clean")),
                      cached_diagnosis(_trace(folder, truth, "injected")))
        assert not cmp.run_to_run, folder.name
        checked += 1
    assert checked >= 20


def test_input_shapes_recorded_on_both_sides_tell_two_runs_apart() -> None:
    """torch record_shapes: the sample torch captures record each op's input elements; a trace
    compared with itself has the same, and one whose ops took other inputs (another workload's
    captures) differs in them."""
    from traceview.analyzers.compare import input_elements_per_step, known_differences
    from traceview.loader import trace_paths

    def diagnosis(folder):  # noqa: ANN001, ANN202
        return cached_diagnosis(trace_paths(folder)[0])

    mlp2 = diagnosis(REPO / "sample_traces" / "mlp2" / "torch-eager")
    cnn = diagnosis(REPO / "sample_traces" / "cnn" / "torch-eager")
    assert input_elements_per_step(mlp2) and input_elements_per_step(cnn)
    assert known_differences(mlp2, mlp2) == ()
    assert "input shapes" in known_differences(mlp2, cnn)
    no_shapes = diagnosis(REPO / "benchmarks" / "truth" / "cases" / "torch-tiny-ops" / "clean")
    assert input_elements_per_step(no_shapes) is None


def test_anomaly_detection_on_one_side_is_a_known_difference_and_named():
    """The torch-anomaly-nan-checks ground-truth pair: the injected side's trace shows anomaly
    detection's NaN checks, the clean side's nothing of it. The comparison knows the runs differ,
    and the gap's launch/dispatch finding names the switch (it said both traces run the same ops
    with nothing else to tell the runs apart), whichever side is the baseline."""
    clean, injected = _truth_pair("torch-anomaly-nan-checks")
    for baseline, candidate, side in ((clean, injected, "candidate"), (injected, clean, "baseline")):
        cmp = compare(baseline, candidate)
        assert "anomaly detection" in cmp.known_differences and not cmp.run_to_run
        launch = next(f for f in cmp.findings if f.rule == "gap_launch_overhead")
        assert launch.evidence["anomaly_detection_only"] == side
        assert f"the {side} runs torch's autograd anomaly detection" in launch.advice
    same = compare(*_same_program_pair())
    assert "anomaly detection" not in same.known_differences


def test_a_gate_failing_on_two_runs_of_one_program_says_so():
    """--fail-if-slower on two captures of one unchanged program (tests/data/torch_cpu_same_program,
    1.44x apart as profiled): the gate still fails — a slowdown of the same ops is what it catches —
    but its line says that nothing recorded tells the runs apart and separate runs differ as much.
    A real difference (the float64 pair) gets no such words."""
    from traceview.analyzers.compare import regression_message

    same = compare(*_same_program_pair())
    message = regression_message(same, 5)
    assert same.run_to_run and message is not None and "slower than the baseline" in message
    assert "separate runs of one unchanged program differ by up to 1.25× without the profiler" in message
    data = REPO / "tests" / "data" / "torch_cpu_dtype"
    float64 = compare(*(cached_diagnosis(data / f"{d}.pt.trace.json.gz") for d in ("float32", "float64")))
    assert "separate runs" not in regression_message(float64, 5)


def _sample_comparison(candidate_mode: str):  # noqa: ANN202 - a Comparison
    root = REPO / "sample_traces" / "mlp2"
    if not (root / candidate_mode).is_dir():
        pytest.skip(f"sample traces not present in {root}")
    return compare(cached_diagnosis(next((root / "torch-eager").glob("*.pt.trace.json.gz"))),
                   cached_diagnosis(next((root / candidate_mode).rglob("*.xplane.pb"), None)
                                    or next((root / candidate_mode).glob("*.pt.trace.json.gz"))))


@pytest.mark.parametrize("candidate_mode", ["tf-eager", "torch-compile"])
def test_every_compare_format_labels_its_columns_alike(candidate_mode: str) -> None:
    """The terminal, markdown and HTML comparison reports head the op-family and op tables with
    the same words (renderers/report.py holds them once), write no advice marker without advice
    after it, and no findings heading without findings under it: on a pair with gap findings
    (torch eager vs TF eager) and on one without a significant difference (vs torch.compile)."""
    import re

    from traceview.renderers.registry import render
    from traceview.renderers.report import FAMILIES_HEADERS, OP_DIFF_HEADERS

    cmp = _sample_comparison(candidate_mode)
    pages = {fmt: render(cmp, fmt, width=200) for fmt in ("terminal", "md", "html")}
    for fmt, text in pages.items():
        for headers in (FAMILIES_HEADERS, OP_DIFF_HEADERS):
            cells = {"terminal": r"\s+".join(map(re.escape, headers)),
                     "md": re.escape("| " + " | ".join(headers) + " |"),
                     "html": "".join(rf"<th[^>]*>{re.escape(h)}</th>" for h in headers)}[fmt]
            assert re.search(cells, text), (fmt, headers)
        assert not re.search(r"\bops (base|cand)\b", text), fmt
    assert not re.search(r"\*Try:\*\s*(\n|$)", pages["md"])
    headings = re.findall(r"<h3>((?:Gap )?[Ff]indings[^<]*)</h3>(.{0,7})", pages["html"])
    assert "Gap findings" in [title for title, _ in headings]
    assert all(after == "<table>" for _, after in headings), headings


def test_the_fix_after_the_first_names_its_cause_as_the_cause_table_does() -> None:
    """What a fix saves once the first fix is made names that fix's cause by the label the cause
    tables give it ("launch/dispatch"), not by its key (``launch_overhead``)."""
    from traceview.results import Finding
    from traceview.renderers.report import fix_sentence

    def sentence(first_fix: str) -> str:
        finding = Finding("exposed_communication", "", "high", predicted_step_ns=9e6, predicted_saving_ns=0.0,
                          predicted_saving_after_ns=3e6, first_fix=first_fix, explains_ns=3e6)
        return fix_sentence(finding, 1e7)

    assert "; once launch/dispatch is removed, it saves ~3 ms (30.0 %)" in sentence("launch_overhead")
    assert "once paused is removed" in sentence("idle.paused")  # its row under idle in the cause table
