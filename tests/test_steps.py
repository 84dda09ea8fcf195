"""Which steps are cold (the warm-up that lasts several steps with nothing recorded to show it),
and where the steps of a trace without step markers are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traceview
from traceview.analyzers.steps import WARMUP_FACTOR, _assign, _loop_numbers, _still_warming_up, find_steps
from traceview.loader import load_with_steps, trace_paths

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
TORCHSCRIPT = sorted(SAMPLES.glob("*/torch-torchscript"))
UNMARKED = Path(__file__).resolve().parent / "data" / "torch_cpu_unmarked"  # (how: capture.py there)
UNMARKED_TF = Path(__file__).resolve().parent / "data" / "tf_cpu_unmarked"  # (how: capture.py there)
UNMARKED_JAX = Path(__file__).resolve().parent / "data" / "jax_cpu_unmarked"  # (how: capture.py there)


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
    table = diagnosis.steps.table.to_pandas()
    steady = table["duration"].to_numpy()[diagnosis.steady_positions]
    assert steady.max() < WARMUP_FACTOR * np.median(steady), table[["number", "duration", "cold"]]
    assert sum(diagnosis.steady_attribution().values()) == pytest.approx(steady.mean(), rel=1e-6)


def test_a_one_step_capture_is_one_step_not_its_repeated_ops() -> None:
    """One training step under profile(), no loop: its two aten::linear repeat at the top level,
    but a framework op is no unit of a loop; the whole trace is the step."""
    timeline, steps = load_with_steps(UNMARKED / "one_step.json.gz")
    assert steps.rule == "whole-trace" and len(steps.table) == 1
    assert "step loop" in steps.rule_detail
    ev = timeline.events
    assert steps.table["start"][0] <= ev["ts"].min()
    assert steps.table["end"][0] >= (ev["ts"] + ev["dur"]).max()


def test_numbered_record_functions_are_the_steps() -> None:
    """record_function(f"train_step_{i}") around each step: the names differ only in their
    number, so the eight runs are the steps, numbered as named."""
    _, steps = load_with_steps(UNMARKED / "numbered_steps.json.gz")
    assert steps.rule == "repeated-top-level"
    assert steps.table["number"].tolist() == list(range(8))
    assert steps.table["name"].tolist() == [f"train_step_{i}" for i in range(8)]
    assert "'train_step_0' … 'train_step_7'" in steps.rule_detail
    # Each step runs on to the next run, as ProfilerStep#N runs to the next step(): the windows abut.
    table = steps.table.to_pandas()
    assert (table["end"].to_numpy()[:-1] == table["start"].to_numpy()[1:]).all()


def test_a_range_taken_as_the_step_is_its_marker() -> None:
    """record_function(f"train_step_{i}") around each step is the step's marker, as ProfilerStep#N
    is: kind and role step, and no step time "inside a user range" — the unrecorded gaps in it go
    to the gap rule, as under a marker."""
    timeline, steps = load_with_steps(UNMARKED / "numbered_steps.json.gz")
    ev = timeline.events
    ranges = ev["name"].astype(str).str.match(r"^train_step_\d+$").to_numpy()
    assert ranges.sum() == 8
    assert set(ev["kind"].astype(str)[ranges]) == {"step"} and set(ev["role"].astype(str)[ranges]) == {"step"}
    diagnosis = traceview.diagnose(UNMARKED / "numbered_steps.json.gz")
    details = diagnosis.steady_details()
    assert details.get("host_compute.annotation", 0) == 0
    assert details.get("launch_overhead.inferred", 0) > 0


def test_the_empty_marker_a_schedule_cut_short_leaves_is_no_step() -> None:
    """A schedule's cycle cut short by the loop's end: ProfilerStep#7 holds the step,
    ProfilerStep#8 nothing (the last step() to the profiler's stop). #8 is left out — taken as a
    step it was the steady state, microseconds of nothing, and #7 "cold" for being slower — and
    a run of empty steps at the end is no quality problem."""
    diagnosis = traceview.diagnose(UNMARKED / "partial_cycle.json.gz")
    table = diagnosis.steps.table.to_pandas()
    assert table["number"].tolist() == [7] and not table["cold"].any()
    assert "#8 left out" in diagnosis.steps.rule_detail
    ev = diagnosis.timeline.events
    marker_8 = (ev["name"].astype(str) == "ProfilerStep#8").to_numpy()
    assert marker_8.sum() == 1 and ev["step"].to_numpy()[marker_8][0] == -1
    # The step is the work of one training step, not the empty marker's microseconds.
    assert diagnosis.steady_step_ns == table["duration"].iloc[0] > 100_000
    assert diagnosis.quality.empty_steps == ()


def test_optimizer_updates_end_the_steps_of_a_plain_loop() -> None:
    """A plain loop under profile(), nothing marking its steps: each of torch.optim's update
    ranges ends one step, the next starting where it ended; the forward pass after the last
    update (an unfinished iteration) is in no step."""
    timeline, steps = load_with_steps(UNMARKED / "plain_loop.json.gz")
    assert steps.rule == "optimizer-updates"
    table = steps.table.to_pandas()
    assert table["number"].tolist() == list(range(8))
    assert set(table["name"]) == {"Optimizer.step#SGD.step"}
    assert (table["end"].to_numpy()[:-1] == table["start"].to_numpy()[1:]).all()
    ev = timeline.events
    names = ev["name"].astype(str).to_numpy()
    step = ev["step"].to_numpy()
    # Each step holds one update, one zero_grad, one backward and the forward's two linear layers.
    for name, per_step in [("Optimizer.step#SGD.step", 1), ("Optimizer.zero_grad#SGD.zero_grad", 1),
                           ("aten::linear", 2), ("autograd::engine::evaluate_function: AddmmBackward0", 2)]:
        assert np.bincount(step[(names == name) & (step >= 0)], minlength=8).tolist() == [per_step] * 8, name
    # The forward after the last update: two more linear layers, after the last step's end.
    linear = np.flatnonzero(names == "aten::linear")
    assert len(linear) == 18 and (step[linear[-2:]] == -1).all()
    assert ev["ts"].to_numpy()[linear[-2]] >= table["end"].iloc[-1]
    # The first step starts with the loop's first event on its thread.
    on_loop_thread = (ev["device"].to_numpy() < 0) & (ev["track"].astype(str).to_numpy() == steps.driver_track)
    assert table["start"].iloc[0] == ev["ts"].to_numpy()[on_loop_thread].min()


def test_an_update_inside_another_is_part_of_it() -> None:
    """An optimizer that steps another: the inner update's range sits in the outer one's; the
    outer updates are the steps."""
    timeline, steps = load_with_steps(UNMARKED / "wrapped_optimizer.json.gz")
    assert steps.rule == "optimizer-updates"
    assert len(steps.table) == 4 and set(steps.table["name"]) == {"Optimizer.step#_Wrapper.step"}
    names = timeline.events["name"].astype(str).to_numpy()
    inner = np.flatnonzero(names == "Optimizer.step#SGD.step")
    assert len(inner) == 4
    assert timeline.events["step"].to_numpy()[inner].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(("run", "name", "count"), [("fit", "multi_step_on_iterator", 16), ("loop", "train_step", 10)])
def test_tensorflow_step_calls_are_the_steps(run: str, name: str, count: int) -> None:
    """A user's own tf.profiler capture has no step markers: Keras 3 fit's step function calls
    (not the eager ops it runs between them, which take more time) and a custom tf.function's
    calls are the steps."""
    _, steps = load_with_steps(trace_paths(UNMARKED_TF / run)[0])
    assert steps.rule == "repeated-top-level"
    assert len(steps.table) == count
    assert set(steps.table["name"]) == {name}


def test_work_after_the_step_call_until_the_next_is_the_steps() -> None:
    """Keras fit with a callback running pure Python after each step call: the steps run from
    one multi_step_on_iterator call to the next, and the callback's unrecorded stretch at the end
    of each is a gap of the step on its thread (host work), not idle time."""
    diagnosis = traceview.diagnose(trace_paths(UNMARKED_TF / "fit_callback")[0])
    assert diagnosis.steps.rule == "repeated-top-level" and len(diagnosis.steps.table) == 8
    per_step = diagnosis.per_step()
    inner = per_step.iloc[1:-1]  # (the last run has no next one: its window ends with the call)
    assert (inner["host_compute"] > inner[["kernel", "launch_overhead", "input"]].max(axis=1)).all(), inner
    assert (inner["idle"] < 0.05 * inner["duration"]).all(), inner
    # The last run's window ends with the call, without the callback after it: partial, not steady
    # (it would pull the steady mean down by the callback's share).
    assert diagnosis.steps.partial == (7,) and 7 not in diagnosis.steady_positions
    assert diagnosis.to_dict()["steps"]["partial"] == [7]
    assert per_step["duration"].iloc[7] < 0.5 * inner["duration"].median()


def test_fits_evaluation_calls_end_steps_but_are_none() -> None:
    """Keras fit with validation data: multi_step_on_iterator runs the train function every batch
    and, at each epoch's end, the evaluation function. The train function's runs (the one run
    most often: the evaluation's first run also traces it and outlasts any training step) are
    the steps; an evaluation run ends the step before it and lies in no step."""
    timeline, steps = load_with_steps(trace_paths(UNMARKED_TF / "fit_validation")[0])
    assert steps.rule == "repeated-top-level" and len(steps.table) == 16
    assert "runs calling another function" in steps.rule_detail
    ev = timeline.events
    fw = ev["fw_op"].astype(str).to_numpy()
    launched = (ev["name"].astype(str).to_numpy() == "EagerExecute") & np.char.startswith(
        fw.astype(str), "__inference_multi_step_on_iterator")
    functions = sorted(set(fw[launched]), key=lambda f: -int((fw[launched] == f).sum()))
    assert len(functions) == 2
    train, evaluation = (launched & (fw == f) for f in functions)
    step = ev["step"].to_numpy()
    assert np.bincount(step[train], minlength=16).tolist() == [1] * 16
    assert (step[evaluation] == -1).all() and evaluation.sum() == 8


def test_a_repeated_jitted_call_is_the_step_over_a_frame_beside_it() -> None:
    """A JAX loop under jax.profiler.trace (Python tracer on) slicing its batch from a device
    array each step: JAX's own `__getitem__` frame repeats at the top level beside the jitted
    call, twice per step, and waits on the asynchronous results; the call is the step."""
    _, steps = load_with_steps(trace_paths(UNMARKED_JAX / "async")[0])
    assert steps.rule == "repeated-top-level" and len(steps.table) == 20
    assert set(steps.table["name"]) == {"PjitFunction(one_step)"}


def test_loop_numbers_come_from_names_only_when_every_run_has_a_rising_one() -> None:
    names = np.array(["step_3", "step_4", "step-9"], dtype=object)
    assert _loop_numbers(names).tolist() == [3, 4, 9]
    # A name without a number after a separator (an op's own digit is not one), or numbers that
    # do not rise: the runs' positions.
    assert _loop_numbers(np.array(["AddmmBackward0", "AddmmBackward0"], dtype=object)).tolist() == [0, 1]
    assert _loop_numbers(np.array(["step_2", "step_1"], dtype=object)).tolist() == [0, 1]
    assert _loop_numbers(np.array(["step_1", "step"], dtype=object)).tolist() == [0, 1]


# Each event's window (steps._assign): timestamps in table order take the stretch-by-stretch path,
# others the search per timestamp; both are "the last window starting at or before it, if it ends
# after it", on windows that follow one another as find_steps makes them.
@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 60), max_size=40), st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)),
                                                           max_size=6), st.booleans())
def test_each_event_is_in_the_window_that_holds_it(times: list[int], windows: list[tuple[int, int]],
                                                   in_order: bool) -> None:
    ts = np.array(sorted(times) if in_order else times, dtype=np.int64)
    starts = np.array(sorted(w[0] for w in windows), dtype=np.int64)
    ends = starts + np.array([w[1] for w in windows], dtype=np.int64)
    for i in range(1, len(starts)):  # (no overlap, as find_steps leaves them)
        starts[i] = max(starts[i], ends[i - 1])
        ends[i] = max(ends[i], starts[i])
    expected = [max([i for i in range(len(starts)) if starts[i] <= t] or [-1]) for t in ts.tolist()]
    expected = [i if i >= 0 and t < ends[i] else -1 for i, t in zip(expected, ts.tolist())]
    got = _assign(ts, starts, ends)
    assert got.dtype == np.int32 and got.tolist() == expected


def _uneven_notes(long_step: str) -> list[str]:
    """Hand-built: ten steps of 20 µs with every fifth 25 ms long. ``long_step``: "work" (an op
    runs all of it, as a JAX loop dispatching asynchronously and blocking every fifth step leaves
    it), "work+sync" (the same, each step ending in a wait for its result), "pause" (step 6 alone
    is long, its op stretched once where the other steps' is not: a place stretched in two steps
    would be work, not a pause)."""
    from traceview.analyzers.diagnosis import diagnose_timeline
    from traceview.normalize import normalize
    from traceview.schema import Timeline, TraceMeta, build_events

    rows, t = [], 0
    for i in range(10):
        long = i == 6 if long_step == "pause" else i % 5 == 4
        length = 25_000_000 if long else 20_000
        rows.append({"ts": t, "dur": length, "kind": "step", "name": f"ProfilerStep#{i}"})
        rows.append({"ts": t + 1_000, "dur": length - 4_000, "name": "aten::mm"})
        if long_step == "work+sync":
            rows.append({"ts": t + length - 2_500, "dur": 1_000, "kind": "sync", "name": "cudaDeviceSynchronize"})
        t += length
    frame = build_events({key: [r.get(key, default) for r in rows] for key, default in
                          (("ts", 0), ("dur", 0), ("kind", "host_op"), ("name", ""), ("track", "t"))})
    timeline = normalize(Timeline(events=frame, meta=TraceMeta(source="x", format="test", framework="torch")))
    diag = diagnose_timeline(timeline, find_steps(timeline))
    return [n for n in diag.notes if n.startswith("the steady steps are uneven")]


def test_uneven_steady_steps_are_said_to_hold_each_others_work() -> None:
    """The median (the headline step) is a step that holds little of its work: the report says so
    beside the mean, and how to give each step its own work."""
    uneven = _uneven_notes("work")
    assert len(uneven) == 1 and "median 0.02 ms" in uneven[0] and "block on each step's result" in uneven[0]


def test_uneven_steps_that_each_wait_for_their_results_are_not_told_to_block() -> None:
    uneven = _uneven_notes("work+sync")
    assert len(uneven) == 1 and "each step waiting for its own results" in uneven[0]
    assert "block on each step's result" not in uneven[0]


def test_a_step_long_by_a_pause_is_no_uneven_work() -> None:
    assert _uneven_notes("pause") == []


BATCHES = Path(__file__).resolve().parent / "data" / "tf_cpu_batches"


def test_a_keras_step_of_four_batches_says_so():
    """Keras steps_per_execution=4 (a real capture): the profiled steps' numbers advance by 4,
    back to back; each step holds four batches. With steps_per_execution=1 they advance by 1."""
    four = traceview.diagnose(BATCHES / "spe4")
    one = traceview.diagnose(BATCHES / "spe1")
    assert four.steps.rule == one.steps.rule == "markers"
    assert four.steps.batches_per_step == 4 and "each step holds 4 batches" in four.steps.rule_detail
    assert one.steps.batches_per_step == 1 and "batches" not in one.steps.rule_detail
    assert four.to_dict()["steps"]["batches_per_step"] == 4


def test_a_step_marked_every_k_batches_is_not_k_batches():
    """Numbers advancing by 4 with room for three unmarked steps between the windows: a loop
    marking every 4th step, whose steps hold one batch each. Irregular strides hold one too."""
    from traceview.analyzers.steps import batches_per_step

    numbers = np.array([0, 4, 8, 12])
    back_to_back = np.array([0, 100, 200, 300]), np.array([100, 200, 300, 400])
    spaced = np.array([0, 400, 800, 1200]), np.array([100, 500, 900, 1300])
    assert batches_per_step(numbers, *back_to_back) == 4
    assert batches_per_step(numbers, *spaced) == 1
    assert batches_per_step(np.array([0, 4, 9, 12]), *back_to_back) == 1
    assert batches_per_step(np.array([3, 4, 5, 6]), *back_to_back) == 1
    assert batches_per_step(np.array([7]), np.array([0]), np.array([100])) == 1


def test_a_jax_loop_that_never_blocks_has_steps_as_long_as_their_programs():
    """A real capture (tests/data/jax_cpu_unmarked/capture.py): 16 jitted calls return within
    ~33 µs each and their programs run on the worker threads afterwards (0.47 ms a step
    unprofiled). Each step runs to the end of its own program run, matched in order: the steady
    step is the program's time, not the call's."""
    diag = traceview.diagnose(UNMARKED_JAX / "never_blocks")
    assert "asynchronous dispatch: 16 program runs" in diag.steps.rule_detail
    assert 0.35e6 < diag.steady_step_ns < 0.47e6 * 1.6  # (the profiler slows it ~1.3×)
    assert diag.steady_attribution()["kernel"] > 0.7 * diag.steady_step_ns


def test_a_program_run_ends_with_its_pieces_which_do_not_hold_the_next_one_off():
    """Rows in start order (start, end, thread, is the executor's wait): run 1 on thread 0 with
    its wait, a pool piece on thread 1 outlasting that wait; run 2 starts on thread 0 while the
    piece still runs and is a run of its own, as is the next row its thread starts."""
    from traceview.analyzers.steps import _program_runs

    runs = _program_runs([0, 50, 90, 100, 300], [80, 150, 95, 200, 400], [0, 1, 0, 0, 0],
                         [False, False, True, False, False])
    assert runs == [(0, 150), (100, 200), (300, 400)]


def test_loops_that_wait_for_their_programs_keep_their_windows():
    """A JAX capture whose steps block on their results: every program run ends inside its step,
    and no window changes."""
    samples = Path(__file__).resolve().parent.parent / "sample_traces"
    folder = samples / "mlp2" / "jax-jit"
    if not folder.is_dir():
        pytest.skip("sample traces not present")
    diag = traceview.diagnose(folder)
    assert "asynchronous" not in diag.steps.rule_detail


def test_every_kth_heavy_step_of_gradient_accumulation_is_named():
    """A real capture (tests/data/torch_cpu_accumulation/capture.py): four micro-batches per
    optimizer update, a ProfilerStep each; every fourth step holds Optimizer.step#Adam.step and
    takes several times the others. The report names the cycle and its heavy steps."""
    diag = traceview.diagnose(Path(__file__).resolve().parent / "data" / "torch_cpu_accumulation" / "per_micro_batch")
    notes = [n for n in diag.notes if n.startswith("every 4th steady step")]
    assert len(notes) == 1 and "'Optimizer.step#Adam.step'" in notes[0] and "#7, #11" in notes[0]


def test_steps_that_all_hold_the_same_names_have_no_cycle():
    """Every step of a plain loop holds the same events: no note."""
    samples = Path(__file__).resolve().parent.parent / "sample_traces"
    folder = samples / "mlp-adam" / "torch-eager"
    if not folder.is_dir():
        pytest.skip("sample traces not present")
    diag = traceview.diagnose(folder)
    assert not [n for n in diag.notes if "steady step (#" in n]


def test_an_unmarked_inference_loop_is_split_at_its_repeating_ops():
    """A real capture (tests/data/torch_cpu_unmarked/capture.py): twelve model(x) calls under a
    plain profile(), no marker, no optimizer, 39 µs a call unprofiled. The same five top-level ops
    repeat in the same order: twelve steps, not one whole-trace step of all twelve calls."""
    diag = traceview.diagnose(UNMARKED / "inference_loop.json.gz")
    assert diag.steps.rule == "repeated-sequence" and len(diag.steps.table) == 12
    assert "the 5 top-level ops" in diag.steps.rule_detail
    assert 30e3 < diag.steady_step_ns < 39e3 * 2.5  # (the profiler slows tiny ops)


def test_a_repeated_sequence_needs_the_same_ops_in_the_same_order():
    """Hand-built: ops that repeat with one out of place, or only once, are no loop; a last
    repetition cut short is a partial step."""
    from traceview.analyzers.steps import _repeated_sequence
    from traceview.schema import build_events

    def trace(names: list[str]):  # noqa: ANN202 - the event table
        n = len(names)
        return build_events({"ts": np.arange(n) * 10, "dur": np.full(n, 5), "kind": ["host_op"] * n, "name": names,
                             "track": ["t"] * n, "depth": np.zeros(n, dtype=np.int64)})

    rows, _, detail, cut_short = _repeated_sequence(trace(["a", "b", "c"] * 3 + ["a", "b"]), "t")
    assert rows.tolist() == [0, 3, 6, 9] and cut_short and "partial" in detail
    assert not len(_repeated_sequence(trace(["a", "b", "c", "a", "c", "b", "a", "b", "c"]), "t")[0])
    assert not len(_repeated_sequence(trace(["a", "b", "c"]), "t")[0])


def test_the_period_is_found_however_often_its_first_op_recurs_inside_it():
    """TF eager runs TFE_Py_FastPathExecute_C hundreds of times a step: a period of 1,123 ops whose
    first op comes back ~357 times inside it (an unmarked GradientTape loop read as one 311 ms step)."""
    from traceview.analyzers.steps import smallest_period

    one_step = [0, 1] * 300 + [2, 3]
    assert smallest_period(one_step * 8) == len(one_step)
    assert smallest_period(one_step * 8 + one_step[:5]) == len(one_step)  # (a last one cut short)
    assert smallest_period(one_step) == len(one_step)  # (no repetition)
    assert smallest_period([4, 4, 4]) == 1


def test_a_retrace_in_the_middle_of_the_run_is_steady_state_not_warm_up():
    """A real capture (tests/data/tf_cpu_retrace_midrun/capture.py): a tf.function traced at step 0
    and traced again at step 5 when the batch size changes. Step 0 is warm-up (cold); step 5 is a
    recompile in the steady state — it was called cold and left out of the steady steps, so
    steady_graph_build read "0 build/compile events" while 43 ms of tracing went unreported."""
    from traceview.loader import diagnose
    from traceview.loader import trace_paths

    diag = diagnose(trace_paths(Path(__file__).resolve().parent / "data" / "tf_cpu_retrace_midrun")[0])
    table = diag.steps.table.to_pandas()
    assert table["cold"].tolist() == [True] + [False] * 7
    assert table["graph_build_events"].iloc[5] > 0 and 5 in diag.steady_positions
    finding = next(f for f in diag.findings if f.rule == "steady_graph_build")
    assert finding.grade == "high" and "retraces" in finding.advice


def test_a_cycle_of_steps_is_not_named_against_light_steps_of_no_duration():
    """An edge a mutated trace reached (tests/fuzz.py, a ZeroDivisionError): every second steady
    step holds a name the others do not, and the others last 0 ns. No multiple of them to name."""
    import pandas as pd

    from traceview.analyzers.diagnosis import periodic_heavy_steps
    from traceview.results import Steps

    numbers = np.arange(6)
    heavy = numbers % 2 == 1
    table = pd.DataFrame({"number": numbers, "duration": np.where(heavy, 1000, 0).astype(np.int64)})
    events = pd.DataFrame({"step": numbers, "name": pd.Categorical(np.where(heavy, "update", "micro"))})
    assert periodic_heavy_steps(events, Steps(table, "markers", ""), np.arange(6)) is None
    table["duration"] = np.where(heavy, 1000, 100)  # (with light steps that take time, the cycle is named)
    assert "every second steady step" in periodic_heavy_steps(events, Steps(table, "markers", ""), np.arange(6))


@pytest.mark.parametrize("declared, first_cold", [
    (None, True),  # no manifest: the first step, 3.5x the others, is cold by its time
    ([0], True),  # the manifest names it cold
    ([], False),  # the manifest names no cold step: the window began after the warm-up
    ("absent", True),  # a manifest silent on cold steps says nothing: cold by its time
])
def test_a_slow_first_step_is_cold_unless_the_manifest_says_none_is(
        tmp_path: Path, declared: list[int] | str | None, first_cold: bool) -> None:
    source = SAMPLES / "mlp2" / "torch-eager"
    for path in source.iterdir():
        if path.name != "manifest.json" or declared is not None:
            shutil.copy(path, tmp_path / path.name)
    if declared is not None:
        manifest = json.loads((tmp_path / "manifest.json").read_text())
        if declared == "absent":
            del manifest["cold_steps"]
        else:
            manifest["cold_steps"] = declared
        (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    steps = traceview.diagnose(tmp_path).steps.table
    durations = np.asarray(steps["duration"])
    assert durations[0] > 3 * np.median(durations[1:])  # slow, with no graph building in it
    assert int(steps["graph_build_events"][0]) == 0
    assert bool(steps["cold"][0]) is first_cold
