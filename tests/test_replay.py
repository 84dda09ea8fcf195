"""The replay of each step along its recorded dependencies (analyzers/replay.py): unchanged factors
give back every recorded step of every real trace; the compiled pass and the Python walk agree;
over generated segment streams the replay keeps its invariants (identity, monotonicity, the
critical path's sums); and small hand-built steps replay as the dependencies say.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traceview import compiled
from traceview.analyzers import replay as replay_module
from traceview.analyzers import whatif
from traceview.analyzers.attribution import replay_segments
from traceview.analyzers.diagnosis import diagnose_timeline
from traceview.analyzers.layers import (CALL_FALLBACK, GAP_LONG, GAP_SHORT, LAYERS, PAUSE, WAIT, WAIT_FALLBACKS,
                                        WAIT_SYNC, WAIT_TRACING, WAITING_IF_OTHERS_COMPUTE)
from traceview.analyzers.replay import D, H, NO_LANE, O, LaneTable, Replayed, lane_table, replay
from traceview.api import trace_files
from traceview.loader import load_with_steps
from traceview.results import BUCKETS
from tests.conftest import REPO, SAMPLES, SHARED_TRACES, shared_trace

# As tests/test_properties.py: every run draws the same examples; TRACEVIEW_EXPLORE=N draws N
# fresh random examples a property instead.
EXPLORE = int(os.environ.get("TRACEVIEW_EXPLORE") or 0)
SETTINGS = settings(max_examples=EXPLORE or 300, derandomize=not EXPLORE, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

MODES = ("cpu", "device")
LAYERS_OF = {mode: [layer for layer in LAYERS if mode in layer.modes] for mode in MODES}
TABLES = {mode: lane_table(LAYERS_OF[mode], mode) for mode in MODES}
TRUTH = REPO / "benchmarks" / "truth" / "cases"
MS = 1_000_000
TOLERANCE_NS = 1e-6
needs_compiled = pytest.mark.skipif(compiled.passes is None, reason="the compiled passes are not built")


def _walked(segments: whatif.Segments, factors: np.ndarray) -> list[Replayed]:
    """The replay walked in Python (the compiled pass switched off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "passes", None)
        return whatif.replayed(segments, factors)


def _fix_factors(table: LaneTable) -> np.ndarray:
    """The identity row, then a row without each of whatif.FIXES."""
    return np.stack([np.ones(len(table.names))]
                    + [whatif.layer_factors(table, whatif.Transform(without=(cause,))) for cause in whatif.FIXES])


def _assert_same(a: list[Replayed], b: list[Replayed], label: str) -> None:
    """Two replays give the same arrays (within TOLERANCE_NS)."""
    assert len(a) == len(b)
    for row, (x, y) in enumerate(zip(a, b)):
        for name in ("length_ns", "path_ns", "lane_ns", "unsupported_ns"):
            mine, theirs = getattr(x, name), getattr(y, name)
            assert mine.shape == theirs.shape, f"{label}, row {row}: {name} shapes {mine.shape} vs {theirs.shape}"
            diff = float(np.abs(mine - theirs).max()) if mine.size else 0.0
            assert diff <= TOLERANCE_NS, f"{label}, row {row}: {name} differs by {diff} ns"


# ---------------------------------------------------------------------------------------------
# Real traces


def _real_traces() -> list[Path]:
    """Every sample capture, every truth case's injected and clean capture, the shared traces present."""
    folders = sorted(p for p in SAMPLES.glob("*/*") if p.is_dir())
    folders += sorted(p for p in TRUTH.glob("*/*") if p.is_dir() and p.name in ("injected", "clean"))
    paths = [path for folder in folders for path in trace_files(folder)]
    if SHARED_TRACES.is_dir():
        paths += sorted(SHARED_TRACES.glob("*/*.json.gz")) + sorted(SHARED_TRACES.glob("*/*.xplane.pb"))
    return paths


def test_identity_gives_back_every_recorded_step(record_property: Any) -> None:
    """As recorded, every real trace's steps replay to their durations (2 %), whatif["replayed"] too."""
    paths = _real_traces()
    assert paths, "no sample or truth traces found"
    worst, worst_whatif, bad = 0.0, 0.0, []
    for path in paths:
        timeline, steps = load_with_steps(path)
        segments = replay_segments(timeline, steps)
        diag = diagnose_timeline(timeline, steps)
        recorded = steps.table["duration"].astype(np.float64)
        (replayed,) = whatif.replayed(segments, np.ones((1, len(segments.table.names))))
        errors = np.abs(replayed.length_ns - recorded) / np.maximum(recorded, 1.0)
        errors_whatif = np.abs(diag.attribution.whatif["replayed"] - recorded) / np.maximum(recorded, 1.0)
        if len(errors):
            worst, worst_whatif = max(worst, float(errors.max())), max(worst_whatif, float(errors_whatif.max()))
            if errors.max() > 0.02 or errors_whatif.max() > 0.02:
                bad.append(f"{path.relative_to(REPO.parent)} ({segments.mode}): replay off by "
                           f"{errors.max():.2%}, whatif by {errors_whatif.max():.2%}")
    record_property("identity_max_relative_error", worst)
    print(f"\nidentity over {len(paths)} traces: max relative error {worst:.3g} (replay), "
          f"{worst_whatif:.3g} (whatif['replayed'])")
    assert not bad, f"max error {worst:.3%}:\n" + "\n".join(bad)


COMPARED = [
    SAMPLES / "mlp2" / "torch-eager",
    SAMPLES / "transformer" / "tf-function",
    TRUTH / "tf-pyfunc-in-step" / "injected",
    TRUTH / "jax-async-matmul" / "injected",
    TRUTH / "torch-threads" / "injected",
    "torch_gpu/resnet_v100_1rank.pt.trace.json.gz",
    "xplane_gpu/jax_attention_mi300.xplane.pb",
]


@needs_compiled
@pytest.mark.parametrize("source", COMPARED, ids=lambda s: str(s).replace(str(REPO) + "/", ""))
def test_compiled_and_walked_agree_on_real_traces(source: Path | str) -> None:
    """On real traces, as recorded and without each fix, the compiled replay gives the walk's arrays."""
    if isinstance(source, str):
        path = shared_trace(source)
    else:
        if not source.is_dir():
            pytest.skip(f"{source} not present")
        path = trace_files(source)[0]
    segments = replay_segments(*load_with_steps(path))
    factors = _fix_factors(segments.table)
    assert segments.n_steps > 0
    _assert_same(whatif.replayed(segments, factors), _walked(segments, factors), str(path.name))


@needs_compiled
@pytest.mark.parametrize("source", [source for source in COMPARED if isinstance(source, Path)],
                         ids=lambda s: str(s).replace(str(REPO) + "/", ""))
def test_rows_split_over_two_threads_are_the_same_replays(source: Path) -> None:
    """From replay.SPLIT_SEGMENTS on, the rows of factors are replayed half on a second thread, each
    into its own rows of the outputs: the same arrays, to the bit, as in one pass."""
    if not source.is_dir():
        pytest.skip(f"{source} not present")
    segments = replay_segments(*load_with_steps(trace_files(source)[0]))
    factors = _fix_factors(segments.table)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay_module, "SPLIT_SEGMENTS", len(segments.start) + 1)
        whole = whatif.replayed(segments, factors)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(replay_module, "SPLIT_SEGMENTS", 0)
        split = whatif.replayed(segments, factors)
    assert len(whole) == len(split) == len(factors) > 1
    for a, b in zip(whole, split):
        for name in ("length_ns", "path_ns", "lane_ns", "unsupported_ns"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), (source, name)


# ---------------------------------------------------------------------------------------------
# Generated segment streams


def _first(mask: int, candidates: list[int]) -> int:
    """The first of ``candidates`` active in ``mask``; -1 if none."""
    return next((k for k in candidates if mask >> k & 1), -1)


def _attributed_winner(mask: int, mode: str) -> int:
    """The layer the attribution gives a moment of active layers ``mask`` (attribution._segments):
    the first active layer not of the other threads; the step thread's wait in a call goes to the
    other threads' first active work, else to the wait's fallback; its unrecorded or waiting-prone
    moments to the other threads' compute, compile or collective where one runs."""
    layers = LAYERS_OF[mode]
    names = [layer.name for layer in layers]
    others = [i for i, layer in enumerate(layers) if layer.scope == "others"]
    fallback = [i for i in others if CALL_FALLBACK in layers[i].selects]
    winner = _first(mask, [i for i in range(len(layers)) if i not in others])
    for wait_name, fallback_name in WAIT_FALLBACKS:
        if wait_name in names and winner == names.index(wait_name):
            resolved = _first(mask, [i for i in others if i not in fallback])
            winner = resolved if resolved >= 0 else next(i for i in fallback if names[i] == fallback_name)
    gap_layers = [i for i, layer in enumerate(layers) if layer.selects in ((GAP_SHORT,), (GAP_LONG,), (PAUSE,))
                  or (layer.scope == "driver" and layer.name in WAITING_IF_OTHERS_COMPUTE)]
    if winner < 0 or winner in gap_layers:
        resolved = _first(mask, [i for i in others if i not in fallback
                                 and layers[i].bucket in ("kernel", "communication", "graph_build")])
        winner = resolved if resolved >= 0 else winner
    return winner


class Stream:
    """Generated segments and each step's recorded window (ns)."""

    def __init__(self, segments: whatif.Segments, windows: np.ndarray) -> None:
        self.segments = segments
        self.windows = windows  # float per step: the sum of its segments' lengths

    def __repr__(self) -> str:
        """The segments, one a line (what hypothesis prints for a failing example)."""
        s = self.segments
        rows = [f"  [{int(a)}, {int(a + n)}) step {int(k)}{'' if i else ' (outside)'} active "
                f"{[f'{s.table.names[b]}#{b}' for b in range(len(s.table.names)) if int(m) >> b & 1]} "
                f"won {f'{s.table.names[w]}#{w}' if w >= 0 else -1}"
                for a, n, k, i, m, w in zip(s.start, s.length, s.step, s.in_step, s.active, s.winner)]
        return f"Stream({s.mode}, {s.n_steps} steps, windows {self.windows.tolist()}):\n" + "\n".join(rows)


@st.composite
def streams(draw: Any) -> Stream:
    """A few steps, each a run of contiguous segments of random lengths with random active layers
    (some active all through the step: a thread beside it) and the winner the attribution gives
    them; now and then a stretch outside the steps between them; both modes."""
    mode = draw(st.sampled_from(MODES))
    n_layers = len(TABLES[mode].names)
    layer = st.integers(0, n_layers - 1)
    n_steps = draw(st.integers(1, 4))
    rows: list[tuple[int, int, int, bool, int, int]] = []  # start, length, step, in step, active, winner
    windows = np.zeros(n_steps)
    t = draw(st.integers(0, 10**6))
    for position in range(n_steps):
        if draw(st.integers(0, 4)) == 0:
            n = draw(st.integers(1, 1000))
            outside = draw(st.integers(0, 2**n_layers - 1))
            rows.append((t, n, draw(st.sampled_from([-1, position])), False, outside, -1))
            t += n
        background = sum(1 << k for k in draw(st.lists(layer, max_size=2))) if draw(st.integers(0, 3)) == 0 else 0
        for _ in range(draw(st.integers(0, 8))):  # (none: a step with an empty window)
            n = draw(st.one_of(st.integers(1, 10**6), st.sampled_from([1, 1000, MS])))
            mask = background | sum(1 << k for k in draw(st.lists(layer, max_size=4)))
            rows.append((t, n, position, True, mask, _attributed_winner(mask, mode)))
            windows[position] += n
            t += n
    start, length, step, in_step, active, winner = (list(column) for column in zip(*rows)) if rows else [[]] * 6
    segments = whatif.Segments(np.array(start, dtype=np.int64), np.array(length, dtype=np.int64),
                               np.array(step, dtype=np.int64), np.array(in_step, dtype=bool),
                               np.array(active, dtype=np.uint64), np.array(winner, dtype=np.int64), TABLES[mode],
                               mode, n_steps)
    return Stream(segments, windows)


FACTOR = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0))


def _factor_rows(n_layers: int, rows: int) -> st.SearchStrategy[np.ndarray]:
    """``rows`` rows of a factor in [0, 1] per layer."""
    return st.lists(st.lists(FACTOR, min_size=n_layers, max_size=n_layers), min_size=rows, max_size=rows).map(
        lambda r: np.array(r, dtype=np.float64))


@SETTINGS
@given(stream=streams())
def test_property_identity_is_each_window(stream: Stream) -> None:
    """Unchanged factors give each step its recorded window (the sum of its segments) exactly."""
    s = stream.segments
    (result,) = whatif.replayed(s, np.ones((1, len(s.table.names))))
    assert np.abs(result.length_ns - stream.windows).max() <= TOLERANCE_NS, (result.length_ns, stream.windows)


@SETTINGS
@given(data=st.data(), stream=streams())
def test_property_lower_factors_never_lengthen_a_step(data: st.DataObject, stream: Stream) -> None:
    """Factors lowered elementwise never lengthen any step."""
    s = stream.segments
    n_layers = len(s.table.names)
    higher = data.draw(_factor_rows(n_layers, 1))[0]
    scale = data.draw(_factor_rows(n_layers, 1))[0]
    lower = higher * scale  # (elementwise <= higher, rounding included)
    low, high = whatif.replayed(s, np.stack([lower, higher]))
    assert (low.length_ns <= high.length_ns + TOLERANCE_NS).all(), \
        f"lower {lower.tolist()}\nhigher {higher.tolist()}\n{low.length_ns} vs {high.length_ns}"


@needs_compiled
@SETTINGS
@given(data=st.data(), stream=streams())
def test_property_compiled_is_walked(data: st.DataObject, stream: Stream) -> None:
    """The compiled replay gives the Python walk's arrays under any factors."""
    s = stream.segments
    factors = np.vstack([np.ones(len(s.table.names)), data.draw(_factor_rows(len(s.table.names), 3))])
    _assert_same(whatif.replayed(s, factors), _walked(s, factors), "generated")


@SETTINGS
@given(data=st.data(), stream=streams())
def test_property_critical_path_sums_to_the_step(data: st.DataObject, stream: Stream) -> None:
    """Each step's critical path, by bucket and by lane, sums to its replayed length."""
    s = stream.segments
    factors = np.vstack([np.ones(len(s.table.names)), data.draw(_factor_rows(len(s.table.names), 2))])
    for row, result in zip(factors, whatif.replayed(s, factors)):
        assert np.abs(result.path_ns.sum(axis=1) - result.length_ns).max() <= TOLERANCE_NS, \
            (row.tolist(), result.path_ns, result.length_ns)
        assert np.abs(result.lane_ns.sum(axis=1) - result.length_ns).max() <= TOLERANCE_NS, \
            (row.tolist(), result.lane_ns, result.length_ns)


# ---------------------------------------------------------------------------------------------
# Hand-built steps


def _layer(table: LaneTable, name: str, lane: int | None = None) -> int:
    """The index of the layer named ``name`` (on ``lane`` where several share the name; the first in
    priority where several share both: a launch call, then a launch into a full queue)."""
    found = [i for i, n in enumerate(table.names) if n == name and (lane is None or table.lane[i] == lane)]
    assert found and len({table.lane[i] for i in found}) == 1, f"{name}: {found}"
    return found[0]


def _step(mode: str, moments: list[tuple[int, list[int], int]]) -> whatif.Segments:
    """One step of contiguous moments, each (length ns, active layers, winner)."""
    lengths = np.array([n for n, _, _ in moments], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return whatif.Segments(starts, lengths, np.zeros(len(moments), dtype=np.int64), np.ones(len(moments), dtype=bool),
                           np.array([sum(1 << k for k in on) for _, on, _ in moments], dtype=np.uint64),
                           np.array([w for _, _, w in moments], dtype=np.int64), TABLES[mode], mode, 1)


def _replay(segments: whatif.Segments, *without: str) -> tuple[Replayed, Replayed]:
    """The step as recorded and without ``without``, compiled (where built) and walked agreeing."""
    factors = np.stack([np.ones(len(segments.table.names)),
                        whatif.layer_factors(segments.table, whatif.Transform(without=without))])
    results = whatif.replayed(segments, factors)
    _assert_same(results, _walked(segments, factors), "hand-built")
    return results[0], results[1]


def test_hand_removing_the_awaited_threads_work_shortens_by_it() -> None:
    """CPU: a 3 ms call wait on another thread's 2 ms compute: without kernel the step is 2 ms shorter."""
    table = TABLES["cpu"]
    python, wait = _layer(table, "host_compute.python"), _layer(table, "<wait>")
    other, call = _layer(table, "kernel.other_threads"), _layer(table, "launch_overhead.call")
    segments = _step("cpu", [(MS, [python], python), (2 * MS, [wait, other], other), (MS, [wait], call),
                             (MS, [python], python)])
    recorded, without = _replay(segments, "kernel")
    assert recorded.length_ns[0] == 5 * MS and without.length_ns[0] == 3 * MS
    assert recorded.unsupported_ns[0] == 0 and without.unsupported_ns[0] == 0
    assert recorded.lane_ns[0, O] == 2 * MS and without.lane_ns[0, O] == 0
    assert recorded.path_ns[0, BUCKETS.index("kernel")] == 2 * MS


def test_hand_unsupported_wait_keeps_its_length() -> None:
    """CPU: a wait nothing elsewhere explains keeps its length, is unsupported, goes with its own cause."""
    table = TABLES["cpu"]
    python, wait = _layer(table, "host_compute.python"), _layer(table, "<wait>")
    call = _layer(table, "launch_overhead.call")
    segments = _step("cpu", [(MS, [python], python), (3 * MS, [wait], call), (MS, [python], python)])
    recorded, without_kernel = _replay(segments, "kernel")
    assert recorded.length_ns[0] == 5 * MS and recorded.unsupported_ns[0] == 3 * MS
    assert without_kernel.length_ns[0] == 5 * MS  # (nothing it waits for to remove)
    assert recorded.path_ns[0, BUCKETS.index("launch_overhead")] == 3 * MS
    _, without = _replay(segments, "launch_overhead")
    assert without.length_ns[0] == 2 * MS and without.unsupported_ns[0] == 0


def test_hand_background_thread_is_no_dependency() -> None:
    """CPU: a thread busy all through the step is no dependency: without own work the step loses it all."""
    table = TABLES["cpu"]
    python, wait = _layer(table, "host_compute.python"), _layer(table, "<wait>")
    other = _layer(table, "kernel.other_threads")
    segments = _step("cpu", [(2 * MS, [python, other], python), (MS, [wait, other], other),
                             (2 * MS, [python, other], python)])
    recorded, without = _replay(segments, "host_compute")
    assert recorded.length_ns[0] == 5 * MS and without.length_ns[0] == MS
    assert without.lane_ns[0, O] == 0


def test_hand_wait_then_a_thread_starting_as_the_step_goes_on() -> None:
    """CPU: an unexplained 1 ms wait, then own work beside a starting input thread: 2 ms, 1 ms without it."""
    table = TABLES["cpu"]
    python, wait = _layer(table, "host_compute.python"), _layer(table, "<wait>")
    call, prefetch = _layer(table, "launch_overhead.call"), _layer(table, "input", O)
    # The input thread's work starts as the call returns: it is not what the call waited for.
    segments = _step("cpu", [(MS, [wait], call), (MS, [python, prefetch], python)])
    recorded, without = _replay(segments, "launch_overhead")
    assert recorded.length_ns[0] == 2 * MS and recorded.unsupported_ns[0] == MS
    assert recorded.path_ns[0].sum() == 2 * MS and recorded.lane_ns[0].tolist() == [2 * MS, 0, 0]
    assert without.length_ns[0] == MS and without.unsupported_ns[0] == 0


def test_hand_device_launch_and_sync() -> None:
    """Device: without launch work the kernel starts 1 ms earlier; without the sync the device ends the step."""
    table = TABLES["device"]
    kernel, launch = _layer(table, "kernel"), _layer(table, "launch_overhead.launch_api")
    sync, python = _layer(table, "sync_wait", H), _layer(table, "host_compute.python")
    segments = _step("device", [(MS, [launch], launch), (5 * MS, [sync, kernel], kernel), (MS, [python], python)])
    recorded, without_launch = _replay(segments, "launch_overhead")
    assert recorded.length_ns[0] == 7 * MS and without_launch.length_ns[0] == 6 * MS
    assert recorded.path_ns[0, BUCKETS.index("kernel")] == 5 * MS and recorded.lane_ns[0, D] == 5 * MS
    assert without_launch.path_ns[0, BUCKETS.index("launch_overhead")] == 0
    _, without_sync = _replay(segments, "sync_wait")
    assert without_sync.length_ns[0] == 6 * MS  # the device's 1 ms launch + 5 ms, the host done at 2 ms
    assert without_sync.lane_ns[0, D] == 5 * MS and without_sync.path_ns[0, BUCKETS.index("sync_wait")] == 0
    assert without_sync.path_ns[0, BUCKETS.index("host_compute")] == 0  # (the host's work is off the path)


def test_hand_a_launch_into_a_full_queue_waits_for_the_device() -> None:
    """Device: a launch call that waited for room in the queue while the device ran 4 ms of kernels
    is a wait for them: with the kernels twice as fast, the call returns 2 ms sooner. A launch call
    beside running kernels is the host's own work (a launch returns once its work is queued)."""
    table = TABLES["device"]
    kernel, python = _layer(table, "kernel"), _layer(table, "host_compute.python")
    launch = _layer(table, "launch_overhead.launch_api")
    blocked = next(i for i, n in enumerate(table.names)
                   if n == "launch_overhead.launch_api" and i != launch and table.lane[i] == H)
    assert table.waits[blocked] and not table.waits[launch]
    for call, expected in ((blocked, 4 * MS), (launch, 6 * MS)):
        segments = _step("device", [(MS, [launch], launch), (4 * MS, [call, kernel], kernel), (MS, [python], python)])
        factors = np.stack([np.ones(len(table.names)),
                            whatif.layer_factors(table, whatif.Transform(scale={"kernel": 0.5}))])
        results = whatif.replayed(segments, factors)
        _assert_same(results, _walked(segments, factors), "hand-built")
        assert results[0].length_ns[0] == 6 * MS and results[1].length_ns[0] == expected, results[1].length_ns


def test_lane_table_names_the_lanes() -> None:
    """Other threads' work is on O, the device's on D, the step thread's on H, fallbacks and queue on none."""
    cpu, device = TABLES["cpu"], TABLES["device"]
    assert cpu.lane[_layer(cpu, "kernel.other_threads")] == O and cpu.lane[_layer(cpu, "host_compute.python")] == H
    call = _layer(cpu, "launch_overhead.call")
    assert cpu.lane[call] == NO_LANE and cpu.unsupported[call]
    assert device.lane[_layer(device, "kernel")] == D
    assert device.lane[_layer(device, "launch_overhead.queued")] == NO_LANE
    assert not (TABLES["device"].lane == O).any()
    # The step thread's own waits (in a call, a tracing call, a sync) are waits, and a blocking
    # sync's time is sync_wait's: what removing it removes.
    assert {cpu.names[k] for k in np.flatnonzero(cpu.waits)} == {WAIT, WAIT_TRACING, WAIT_SYNC}
    assert cpu.bucket[_layer(cpu, WAIT_SYNC)] == BUCKETS.index("sync_wait")


def test_replay_api_direct_call() -> None:
    """replay() called with plain arrays gives one result per factors row, of the documented shapes."""
    python = _layer(TABLES["cpu"], "host_compute.python")
    s = _step("cpu", [(MS, [python], python)])
    out = replay(s.start, s.length, s.step, s.in_step, s.active, s.winner, s.table, s.mode, 1,
                 np.ones((3, len(s.table.names))))
    assert len(out) == 3 and out[0].path_ns.shape == (1, len(BUCKETS)) and out[0].lane_ns.shape == (1, 3)
