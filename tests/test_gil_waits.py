"""Waits for Python's interpreter lock (analyzers/gil_waits.py): the rule on small hand-built
stretches, then real captures of a step beside a thread that runs Python
(tests/data/torch_cpu_gil, the torch-gil-contention and tf-gil-contention ground-truth cases)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceview import api
from traceview.analyzers import gil_waits as gw
from traceview.results import GIL_WAIT_DETAIL, PAUSED_DETAIL

MS = 1_000_000
Q = gw.SWITCH_INTERVAL_NS
DATA = Path(__file__).parent / "data" / "torch_cpu_gil"
TRUTH = Path(__file__).resolve().parents[1] / "benchmarks" / "truth" / "cases"


def stretches(lengths: list[int], places: list[int] | None = None) -> gw.Stretches:
    return gw.Stretches(np.array(lengths, dtype=np.int64),
                        np.array(places if places is not None else [-1] * len(lengths), dtype=np.int64))


# --- the rule

def one_place(lengths: list[int], quiet: list[bool], binding: bool = True) -> gw.Stretches:
    """One stretch a step, at one place (a binding's name code, or the gaps)."""
    n = len(lengths)
    return gw.Stretches(np.array(lengths, dtype=np.int64), np.full(n, 5 if binding else -1, dtype=np.int64),
                        step=np.arange(n, dtype=np.int64), quiet=np.array(quiet, dtype=bool))


def test_one_binding_waiting_quietly_in_every_step_is_contention() -> None:
    # A compiled step's one call: its binding waits an interval each step, nothing else running.
    lengths = [Q + 190_000, Q + 215_000, Q + 230_000, Q + 400_000, Q + 170_000]
    assert gw.contended(one_place(lengths, [True] * 5), steady_steps=5)
    # ... not where other threads' or devices' work covers it (the call waits for that work),
    assert not gw.contended(one_place(lengths, [False] * 5), steady_steps=5)
    # ... nor in the gaps (unrecorded code may be anything),
    assert not gw.contended(one_place(lengths, [True] * 5, binding=False), steady_steps=5)
    # ... nor in only some of the steps.
    assert not gw.contended(one_place(lengths[:3] + [40_000, 35_000], [True] * 5), steady_steps=5)


def test_quiet_is_less_than_a_tenth_covered_by_work_elsewhere() -> None:
    busy_start, busy_end = np.array([100, 1_000]), np.array([200, 1_100])
    start, end = np.array([0, 0, 950, 2_000]), np.array([1_000, 2_000, 1_050, 3_000])
    # Covered 100 of 1000, 200 of 2000, 50 of 100, 0 of 1000.
    assert gw.quiet(start, end, busy_start, busy_end).tolist() == [False, False, False, True]
    assert gw.quiet(start, end, busy_start[:0], busy_end[:0]).all()


def test_quiet_where_what_ran_elsewhere_was_over_well_before_the_stretch_ended() -> None:
    # A jitted call returns before its program has run and waits for the lock while it runs: work
    # elsewhere covering 2 ms of the stretch's last 5 ms, over 3 ms before it ended, is not what
    # it waited for; work until 0.2 ms before its end may be.
    start, end = np.array([0, 0]), np.array([Q + 300_000, Q + 300_000])
    early = gw.quiet(start, end, np.array([500_000]), np.array([2_500_000]))
    late = gw.quiet(start, end, np.array([3_100_000]), np.array([Q + 100_000]))
    assert early.all() and not late.any()


def test_quiet_waits_at_framework_places_in_nearly_every_step_are_contention() -> None:
    # A jitted step: the call waits in most steps, the frame reading the result in the others.
    def stretches_at(places: list[int], quiet: bool = True) -> gw.Stretches:
        n = len(places)
        return gw.Stretches(np.full(n, Q + 220_000, dtype=np.int64), np.array(places, dtype=np.int64),
                            step=np.arange(n, dtype=np.int64), quiet=np.full(n, quiet))

    assert gw.contended(stretches_at([5, 5, 8, 5, 5, 8, 5, 5, 5, 5]), steady_steps=10)
    # ... in 7 of 10 steps only, no;
    assert not gw.contended(stretches_at([5, 5, 8, 5, 5, 8, 5]), steady_steps=10)
    # ... nor where what else ran may be what they waited for, nor in the gaps.
    assert not gw.contended(stretches_at([5, 5, 8, 5, 5, 8, 5, 5, 5, 5], quiet=False), steady_steps=10)
    assert not gw.contended(stretches_at([-1] * 10), steady_steps=10)


@pytest.mark.parametrize("length, is_wait, multiple", [
    (Q - 1, False, 0),  # shorter than one interval
    (Q, True, 1),
    (Q + 200_000, True, 1),  # one interval and a hand-over
    (Q + int(gw.RESIDUE_MAX_SHARE * Q), False, 1),  # too far past a whole interval
    (2 * Q + 400_000, True, 2),
    (3 * Q + 2_000_000, False, 3),
])
def test_a_stretch_is_quantized_just_past_a_whole_interval(length: int, is_wait: bool, multiple: int) -> None:
    waits, multiples = gw.quantized(np.array([length]))
    assert bool(waits[0]) is is_wait and int(multiples[0]) == multiple


def test_waits_all_over_the_steps_are_contention() -> None:
    # 4 steps, each with 6 waits of one interval (and one of two) among short glue gaps, in gaps and
    # in the own time of bindings (places 3, 4, 5).
    lengths = [20_000, Q + 210_000, 15_000, Q + 180_000, Q + 300_000, 2 * Q + 350_000, Q + 260_000, Q + 150_000] * 4
    places = [-1, -1, 3, 3, 4, 4, 5, -1] * 4
    assert gw.contended(stretches(lengths, places), steady_steps=4)


def test_one_piece_of_user_code_that_happens_to_last_a_quantized_time_is_not() -> None:
    # A 5.3 ms user loop at one place of each step: one quantized stretch a step.
    lengths = [20_000, Q + 300_000, 15_000, 30_000] * 6
    assert not gw.contended(stretches(lengths), steady_steps=6)


def test_quantized_stretches_at_one_place_only_are_not() -> None:
    # Two 5.2 ms stretches a step, both in the same range: work of that place, not waits after
    # framework calls all over the step.
    lengths = [Q + 200_000, 30_000, Q + 250_000] * 5
    assert not gw.contended(stretches(lengths, [7, 8, 7] * 5), steady_steps=5)
    assert gw.contended(stretches(lengths, [7, 8, 9] * 5), steady_steps=5)


def test_long_stretches_of_any_length_are_not() -> None:
    # Long stretches spread over all lengths (user code, garbage collection): few land just past a
    # whole interval, and those are not most of them.
    rng = np.random.default_rng(0)
    lengths = rng.integers(Q, 6 * Q, size=60).tolist()
    assert not gw.contended(stretches(lengths), steady_steps=10)


def test_waits_that_all_last_two_intervals_are_not_the_lock() -> None:
    # A busy machine's 10 ms scheduler ticks (CONFIG_HZ=100): pairs of intervals only.
    lengths = [2 * Q + 100_000] * 40
    assert not gw.contended(stretches(lengths), steady_steps=10)


def test_stretches_of_any_length_are_taken() -> None:
    # A stretch of centuries (a broken timestamp) is one quantized multiple among others.
    lengths = [Q + 100_000, 2 * Q + 150_000, Q + 120_000, 10**12 * Q + 1] * 3
    assert gw.contended(stretches(lengths, [1, 2, 3, 4] * 3), steady_steps=3)


def test_no_steps_no_contention() -> None:
    assert not gw.contended(stretches([Q + 1] * 10), steady_steps=0)
    assert not gw.contended(stretches([]), steady_steps=3)


def test_a_wait_is_its_intervals_and_all_but_what_its_place_takes_without_waiting() -> None:
    # Place 7 takes 40 µs when it does not wait: its waits are all but those 40 µs. Place 9 always
    # waits: only its whole intervals are counted. Glue gaps (place -1) take 10 µs.
    s = stretches([40_000, Q + 240_000, 40_000, 2 * Q + 300_000, Q + 100_000, 10_000, Q + 210_000],
                  [7, 7, 7, 7, 9, -1, -1])
    assert gw.wait_ns(s).tolist() == [0, Q + 200_000, 0, 2 * Q + 260_000, Q, 0, Q + 200_000]


# --- real captures

def _diagnose(path: Path):
    if not path.exists():
        pytest.skip(f"{path} is not there")
    return api.diagnose(path)


def _gil_share(diag) -> float:
    return diag.steady_details().get(GIL_WAIT_DETAIL, 0.0) / diag.steady_step_ns


@pytest.mark.parametrize("folder", ["contended", "contended_stack"])
def test_the_waits_are_found_with_and_without_python_events(folder: str) -> None:
    diag = _diagnose(DATA / folder)
    # Unprofiled, the step took 1.64 ms alone and 107 ms beside the thread: nearly all of it waits.
    assert _gil_share(diag) > 0.8
    first = next(f for f in diag.findings if f.grade in ("high", "moderate"))
    assert first.rule == "gil_contention" and first.grade == "high"
    graded = {f.rule: f.grade for f in diag.findings if f.grade in ("high", "moderate")}
    # Before: "host work outside the framework" with hooks on nodes that have none, and dispatch,
    # each graded high (the ops' own dispatch, 0.7 ms a step alone, may still be a moderate cause).
    assert not {"host_compute", "unrecorded"} & set(graded)
    assert graded.get("launch_bound") != "high"
    assert not len(diag.attribution.hooked_nodes)
    per_step = diag.attribution.per_step.to_pandas()
    assert (per_step.drop(columns="total").sum(axis=1) == per_step["total"]).all()


@pytest.mark.parametrize("folder, body", [
    ("contended", None),  # no Python events: the other thread is not in the trace
    ("contended_stack", "python_loop_until"),
    ("prefetch_stack", "build_batches"),
])
def test_the_finding_names_the_other_threads_python_where_recorded(folder: str, body: str | None) -> None:
    diag = _diagnose(DATA / folder)
    finding = next(f for f in diag.findings if f.rule == "gil_contention")
    frame = finding.evidence["busy_thread_frame"]
    assert (frame is None) if body is None else frame.endswith(f": {body}")


def test_no_frame_is_named_where_none_spans_the_other_threads_python(tmp_path: Path) -> None:
    # The other thread's frames without its body and the frames around it: many short calls, none
    # spanning its Python time.
    source = DATA / "prefetch_stack" / "prefetch_stack.pt.trace.json.gz"
    if not source.exists():
        pytest.skip(f"{source} is not there")
    trace = json.loads(gzip.decompress(source.read_bytes()))
    main_thread = next(e["tid"] for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep"))
    body = {"_bootstrap", "_bootstrap_inner", "run", "build_batches"}
    trace["traceEvents"] = [e for e in trace["traceEvents"]
                            if e.get("tid") == main_thread or str(e.get("name", "")).split(": ")[-1] not in body]
    path = tmp_path / "no_body.pt.trace.json"
    path.write_text(json.dumps(trace))
    finding = next(f for f in api.diagnose(path).findings if f.rule == "gil_contention")
    assert finding.evidence["busy_thread_frame"] is None


def test_a_thread_that_builds_the_batches_is_found_too() -> None:
    # The step takes its batch from a queue another thread fills in Python: fewer waits (1.8 a
    # step, in the bindings of two ops), still the first cause.
    diag = _diagnose(DATA / "prefetch_stack")
    assert _gil_share(diag) > 0.4
    assert next(f for f in diag.findings if f.grade in ("high", "moderate")).rule == "gil_contention"


@pytest.mark.parametrize("folder", ["clean", "sleeps_stack"])
def test_a_step_alone_has_no_waits_and_no_such_finding(folder: str) -> None:
    # sleeps_stack: the user's own 5 ms sleeps at two places a step (time.sleep, Event.wait), in
    # the user's frames: the user's time, not waits for the lock.
    diag = _diagnose(DATA / folder)
    assert _gil_share(diag) == 0.0
    assert "gil_contention" not in {f.rule for f in diag.findings}


def test_the_ops_tables_leave_the_waits_out() -> None:
    diag = _diagnose(DATA / "contended")
    # The optimizer's range held waits in its own time; the ops inside it are µs each.
    step_ns = diag.steady_step_ns
    assert diag.ops["time_per_step_ns"].sum() < 0.2 * step_ns


def test_compare_names_the_waits_as_the_cause_of_the_gap() -> None:
    if not (DATA / "clean").exists():
        pytest.skip("tests/data/torch_cpu_gil is not there")
    cmp = api.compare(DATA / "clean", DATA / "contended")
    assert cmp.ranked()[0].bucket == GIL_WAIT_DETAIL
    assert cmp.gil_wait_delta_ns > 0.8 * cmp.gap_ns
    assert abs(cmp.unexplained_ns) < 0.05 * cmp.gap_ns
    gap_rules = [f.rule for f in cmp.findings if f.rule.startswith("gap_") and f.grade == "high"]
    assert gap_rules[0] == "gap_gil_contention"
    assert cmp.to_dict()["comparison"]["ranked_causes"][0] == GIL_WAIT_DETAIL


GROUND_TRUTH_CASES = ["jax-gil-contention", "jax-gil-contention-pytracer", "keras-fit-gil-contention",
                      "tf-function-gil-contention", "tf-gil-contention", "torch-gil-contention"]


@pytest.mark.parametrize("case", GROUND_TRUTH_CASES)
def test_the_ground_truth_captures(case: str) -> None:
    # The clean twin has no waits; the injected one, its waits as the first finding, and they are
    # not pauses too (a wait also makes its place last longer in one step than in the others).
    clean = _diagnose(TRUTH / case / "clean")
    injected = _diagnose(TRUTH / case / "injected")
    assert _gil_share(clean) == 0.0
    assert _gil_share(injected) > 0.3  # (its size against the measured cost: tests/test_truth.py)
    graded = [f.rule for f in injected.findings if f.grade in ("high", "moderate")]
    assert graded[0] == "gil_contention"
    assert "paused" not in graded
    assert injected.steady_details().get(PAUSED_DETAIL, 0.0) < 0.05 * injected.steady_details()[GIL_WAIT_DETAIL]


def test_with_a_python_tracer_the_wait_after_a_native_call_is_found_in_the_users_frame() -> None:
    # jax.profiler.trace's default: the frame that reads the step's result holds the wait after
    # the runtime's calls return, in its own time.
    diag = _diagnose(TRUTH / "jax-gil-contention-pytracer" / "injected")
    rows, waited = diag.attribution.gil_wait_events
    roles = diag.timeline.events["role"].to_numpy()[rows]
    assert (waited[roles == "python_user"] >= Q).any()
    assert (waited[roles == "call"] >= Q).any()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([20_000, Q - 1, Q, Q + 150_000, Q + 900_000, 2 * Q + 100_000]),
                          st.integers(-1, 3), st.integers(0, 9), st.booleans()), max_size=40),
       st.integers(1, 10))
def test_too_few_long_stretches_are_never_contention(rows: list[tuple[int, int, int, bool]], steady: int) -> None:
    # The check that lets a trace skip the stretch-by-stretch passes never skips one that contended
    # would have called contention, whatever the stretches.
    s = gw.Stretches(np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=np.int64),
                     step=np.array([r[2] for r in rows], dtype=np.int64), quiet=np.array([r[3] for r in rows], dtype=bool))
    long_ones = sum(r[0] >= Q for r in rows)
    if gw.contended(s, steady_steps=steady):
        assert not gw.too_few_to_be_contended(long_ones, steady)
