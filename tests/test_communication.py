"""Collective communication: its own bucket (exposed time only), comm/compute overlap per step
against HTA's definition recomputed here from the raw JSON, the finding, and the reports."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import cached_diagnosis, sample_kineto_traces, shared_trace
from traceview.analyzers.attribution import attribute
from traceview.analyzers.communication import comm_overlap
from traceview.loader import diagnose
from traceview.analyzers.ranks import multi_rank, summarize
from traceview.analyzers.steps import find_steps
from traceview.normalize import normalize
from traceview.renderers import html_report, json_report, markdown, terminal
from traceview.renderers.report import finding_lines
from traceview.results import BUCKETS, AttributionOptions, shown_buckets
from traceview.roles import Role
from traceview.schema import Timeline, TraceMeta, build_events
from traceview.text import fmt_ns

V100 = "torch_gpu/v100_2rank_rank1_large.json.gz"
# HTA's communication kernels (hta/utils/utils.py, 0.5.0): the reference below uses its rule, not ours.
HTA_COMM_KERNEL = re.compile(r"^nccl.*Kernel")


# ------------------------------------------------------------------------------------------------
# The reference: HTA's comm/comp overlap from the raw JSON, with plain interval unions
# ------------------------------------------------------------------------------------------------
def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _length(intervals: list[tuple[int, int]], lo: float = -np.inf, hi: float = np.inf) -> int:
    return int(sum(max(0, min(e, hi) - max(s, lo)) for s, e in intervals))


@pytest.fixture(scope="module")
def reference() -> dict:
    """Union of the NCCL kernels and of the other kernels (raw ns), and their intersection."""
    with gzip.open(shared_trace(V100)) as fh:
        events = json.load(fh)["traceEvents"]
    comm, compute = [], []
    for e in events:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            start = int(round(float(e["ts"]) * 1000))  # integer µs in this trace: exact
            (comm if HTA_COMM_KERNEL.match(e["name"]) else compute).append((start, start + int(round(float(e["dur"]) * 1000))))
    comm_union = _union(comm)
    return {"comm": comm_union, "both": _intersection(comm_union, _union(compute)), "comm_kernels": len(comm)}


@pytest.fixture(scope="module")
def v100():
    return cached_diagnosis(shared_trace(V100))


def test_overlap_over_the_whole_trace_is_htas(v100, reference):
    comm = v100.communication
    assert comm is not None
    assert comm.trace_comm_ns == _length(reference["comm"]) > 0
    assert comm.trace_overlapped_ns == _length(reference["both"])
    expected = _length(reference["both"]) / _length(reference["comm"])
    assert comm.trace_overlap_share == pytest.approx(expected, abs=1e-12)


def test_overlap_per_step_matches_the_reference_in_each_step_window(v100, reference):
    origin = v100.timeline.meta.origin_ns
    table = v100.steps.table
    per = v100.communication.per_step
    for i, (start, end) in enumerate(zip(table["start"] + origin, table["end"] + origin)):
        assert per["comm_ns"][i] == _length(reference["comm"], start, end)
        assert per["overlapped_ns"][i] == _length(reference["both"], start, end)
    assert int(per["collectives"].sum()) == reference["comm_kernels"]  # every collective starts inside a step


def test_the_bucket_is_the_exposed_communication_and_buckets_still_sum_to_the_step(v100):
    per = v100.attribution.per_step
    comm = v100.communication.per_step
    assert (per["communication"] > 0).all()
    np.testing.assert_array_equal(per["communication"], comm["exposed_ns"])
    np.testing.assert_array_equal(sum(per[b] for b in BUCKETS), v100.steps.table["duration"])
    assert "communication" in v100.buckets


def test_collective_kernels_are_found_by_their_launcher_and_nothing_else_is(v100):
    ev = v100.timeline.events
    kernels = ev[ev["kind"] == "kernel"]
    is_comm = kernels["role"] == Role.DEVICE_COMMUNICATION.value
    nccl = kernels["name"].astype(str).str.match(HTA_COMM_KERNEL.pattern).to_numpy()
    np.testing.assert_array_equal(is_comm, nccl)
    assert set(kernels.loc[is_comm]["launcher"].astype(str)) == {"record_param_comms"}


def test_exposed_communication_finding_says_what_the_trace_shows(v100):
    finding = next(f for f in v100.findings if f.rule == "exposed_communication")
    assert finding.grade in ("moderate", "high")
    assert finding.explains_ns == pytest.approx(v100.steady_attribution()["communication"])
    assert finding.evidence["overlap_share"] < 0.5 and finding.evidence["collectives_per_step"] > 50
    assert "backward" in finding.advice and "bucket" in finding.advice  # no overlap; hundreds of small collectives
    # Graded on its share, ranked by what removing it buys: the host sets this step's length (the
    # launches), so exposed communication comes after launch overhead, whose fix would make the
    # device's kernels and collectives the critical path.
    ranked = [f.rule for f in v100.findings if f.grade in ("high", "moderate")]
    assert ranked.index("launch_bound") < ranked.index("exposed_communication")
    assert finding.predicted_saving_ns is not None and finding.predicted_saving_ns < finding.explains_ns
    launch = next(f for f in v100.findings if f.rule == "launch_bound")
    assert launch.predicted_saving_ns > finding.predicted_saving_ns


def test_reports_show_communication_only_when_the_trace_has_it(v100):
    cpu = cached_diagnosis(sample_kineto_traces()[0]) if sample_kineto_traces() else pytest.skip("no sample traces")
    assert cpu.communication is None
    for render in (terminal.render, markdown.render, json_report.render):
        assert "communication" not in render([cpu], width=80).lower()
    assert "Communication vs compute" not in html_report.render([cpu])
    assert not any(f.rule == "exposed_communication" for f in cpu.findings)
    for text in (terminal.render([v100], width=80), markdown.render([v100]), html_report.render([v100])):
        assert "Communication vs compute" in text and "whole trace" in text
    doc = json.loads(json_report.render([v100]))
    assert doc["communication"]["trace"]["comm_ns"] == v100.communication.trace_comm_ns
    assert doc["steady_state"]["details_ns"]["communication.exposed"] > 0


# ------------------------------------------------------------------------------------------------
# Hand-built edge cases
# ------------------------------------------------------------------------------------------------
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def _kernel(ts: int, dur: int, name: str = "volta_sgemm_128x64_nn", stream: int = 7, **extra) -> dict:
    return {"ts": ts, "dur": dur, "kind": "kernel", "name": name, "device": 0, "stream": stream,
            "track": f"GPU 0 stream {stream}", **extra}


def _analyse(rows: list[dict]):
    columns = {k: [r.get(k) for r in rows] for k in ("ts", "dur", "kind", "name", "track", "device", "stream",
                                                       "correlation", "copy_kind")}
    defaults = {"device": -1, "stream": -1, "correlation": -1, "copy_kind": "", "track": "host"}
    for key, default in defaults.items():
        columns[key] = [default if v is None else v for v in columns[key]]
    meta = TraceMeta(source="hand-built", format="test", framework="torch", input_events=len(rows))
    timeline = normalize(Timeline(events=build_events(columns), meta=meta))
    steps = find_steps(timeline)
    attribution = attribute(timeline, steps, AttributionOptions(dispatch_gap_ns=0))
    return attribution.per_step.row(0), comm_overlap(timeline, steps), timeline


STEP = {"ts": 0, "dur": 1000, "kind": "step", "name": "ProfilerStep#0"}


def test_communication_fully_overlapped_by_compute_is_not_exposed():
    step, comm, _ = _analyse([STEP, _kernel(100, 400), _kernel(200, 200, NCCL, stream=14)])
    assert "communication" in shown_buckets(comm is not None)  # 0 ns exposed is worth showing
    assert step["communication"] == 0 and step["kernel"] == 400
    row = comm.per_step.row(0)
    assert (row["comm_ns"], row["overlapped_ns"], row["exposed_ns"], row["overlap_share"]) == (200, 200, 0, 1.0)


def test_communication_alone_is_all_exposed_and_beats_a_copy():
    copy = {"ts": 650, "dur": 100, "kind": "memcpy", "name": "Memcpy DtoD (Device -> Device)", "device": 0,
            "stream": 8, "copy_kind": "D2D", "track": "GPU 0 stream 8"}
    step, comm, _ = _analyse([STEP, _kernel(600, 200, NCCL, stream=14), copy])
    assert step["communication"] == 200 and step["memcpy"] == 0 and step["kernel"] == 0
    row = comm.per_step.row(0)
    assert (row["comm_ns"], row["overlapped_ns"], row["exposed_ns"], row["overlap_share"]) == (200, 0, 200, 0.0)
    assert sum(step[b] for b in BUCKETS) == 1000


def test_partly_overlapped_communication_and_concurrent_collectives_count_once():
    rows = [STEP, _kernel(100, 400), _kernel(400, 300, NCCL, stream=14), _kernel(450, 100, NCCL, stream=15)]
    step, comm, _ = _analyse(rows)
    row = comm.per_step.row(0)
    assert (row["comm_ns"], row["overlapped_ns"], row["exposed_ns"], row["collectives"]) == (300, 100, 200, 2)
    assert step["communication"] == 200 and step["kernel"] == 400


def test_a_kernel_launched_by_a_collective_op_is_communication_whatever_its_name():
    rows = [STEP,
            {"ts": 10, "dur": 50, "kind": "host_op", "name": "record_param_comms", "track": "host 1/1"},
            {"ts": 20, "dur": 10, "kind": "launch", "name": "cudaLaunchKernel", "correlation": 5, "track": "host 1/1"},
            _kernel(100, 50, "cross_device_reduce_1stage", stream=14, correlation=5),
            _kernel(200, 50)]
    step, comm, timeline = _analyse(rows)
    roles = dict(zip(timeline.events["name"].astype(str), timeline.events["role"].astype(str)))
    assert roles["cross_device_reduce_1stage"] == Role.DEVICE_COMMUNICATION.value
    assert roles["volta_sgemm_128x64_nn"] == Role.DEVICE_KERNEL.value
    assert step["communication"] == 50 and comm.per_step.row(0)["collectives"] == 1


def test_no_collective_no_communication_anywhere():
    step, comm, _ = _analyse([STEP, _kernel(100, 400)])
    assert comm is None and step["communication"] == 0
    assert "communication" not in shown_buckets(comm is not None)


def test_json_keys_of_the_communication_block_are_plain_numbers(v100):
    block = v100.communication.to_dict(v100.steady_positions)
    assert set(block) == {"steady", "per_step", "trace"}
    assert all(isinstance(v, int) for row in block["per_step"] for k, v in row.items() if k != "overlap_share")
    assert Path(json.loads(json_report.render([v100]))["trace"]["source"]).name == Path(V100).name


GLOO = Path(__file__).resolve().parent / "data" / "torch_cpu_gloo"  # (how: capture.py there)
GLOO_SLEEP_NS = 4_000_000  # rank 1's own host work per step (capture.py: SLOW_RANK_SLEEP_S)


def test_a_gloo_collective_on_cpu_is_communication_and_names_its_straggler() -> None:
    """Two CPU ranks of DistributedDataParallel on Gloo; rank 1 sleeps 4 ms per step before its
    backward. Rank 0 then blocks, unrecorded, while gloo:all_reduce runs on the process group's
    work thread: that is communication (it read as 'host work' to move out of the step), and the
    ranks differ by about the sleep in it — rank 0 waits as long as rank 1 works."""
    diags = {rank: diagnose(GLOO / f"rank-{rank}.pt.trace.json.gz") for rank in (0, 1)}
    steady = {rank: d.steady_attribution() for rank, d in diags.items()}
    assert max(steady[0], key=steady[0].get) == "communication"
    assert steady[0]["host_compute"] < 0.1 * sum(steady[0].values())
    waited = steady[0]["communication"] - steady[1]["communication"]
    worked = steady[1]["host_compute"] - steady[0]["host_compute"]
    assert waited == pytest.approx(GLOO_SLEEP_NS, rel=0.25) and worked == pytest.approx(GLOO_SLEEP_NS, rel=0.25)
    for d in diags.values():
        assert "communication" in d.buckets and d.communication is not None
        assert d.communication.steady(d.steady_positions)["collectives"] == 1  # (DDP: one bucket of 0.5 MB)
    assert diags[0].findings[0].rule == "exposed_communication"
    run = multi_rank([summarize(d) for d in diags.values()])[0]
    spread = run.spread.set_index("bucket")
    assert spread.loc["communication", "max_rank"] == 0 and spread.loc["host_compute", "max_rank"] == 1
    holdup, = (note for note in run.notes if "holds the collectives up" in note)
    assert holdup.startswith("rank 1 holds") and "in host compute" in holdup


MIRRORED = Path(__file__).resolve().parent / "data" / "tf_cpu_mirrored"  # (how: capture.py there)


def test_a_tf_distribute_collective_on_cpu_is_communication() -> None:
    """tf.distribute.MirroredStrategy over two logical CPUs all-reduces the gradients each step:
    `CollectiveReduceV2` op kernels on the collective_ops threads, run by TF's collective executor
    (CollectiveOpV2Kernel::Run, CollectiveExecutor::… ranges). They move and reduce the replicas'
    data: communication (the op kernels read as the top compute op, the executor's ranges as
    dispatch, and no communication was reported at all)."""
    from traceview.loader import trace_paths
    from traceview.roles import Role

    diag = diagnose(trace_paths(MIRRORED)[0])
    ev = diag.timeline.events
    names = ev["name"].astype(str)
    collective = names.str.contains(r":CollectiveReduceV2$") | names.str.match(r"^(Base)?CollectiveExecutor::|^CollectiveOpV2Kernel::")
    assert collective.sum() > 0
    assert set(ev.loc[collective, "role"].astype(str)) == {Role.COMMUNICATION.value}
    assert diag.communication is not None and diag.communication.steady(diag.steady_positions)["collectives"] > 0
    assert diag.steady_attribution()["communication"] > 0
    assert not any("Collective" in str(name) for name in diag.kernels["name"])
    exposed = next(f for f in diag.findings if f.rule == "exposed_communication")
    assert exposed.grade != "skipped"


SHARDED = Path(__file__).resolve().parent / "data" / "jax_cpu_sharded"  # (how: capture.py there)


def test_an_xla_collective_on_host_devices_is_communication():
    """JAX sharded over two host devices all-reduces the gradients in `all-reduce.N` thunks on
    XLA's worker threads, each waiting in a Rendezvous for the other device. They are
    communication (they were compute ops: the top one, in the reduction family), overlapped here
    by the other device's math; the compute advice speaks of XLA's thread pool, not torch's."""
    from traceview.loader import trace_paths
    from traceview.roles import Role

    diag = diagnose(trace_paths(SHARDED)[0])
    ev = diag.timeline.events
    all_reduce = ev["name"].astype(str).str.match(r"^all-reduce(\.\d+)?$")
    assert all_reduce.sum() > 0
    assert set(ev.loc[all_reduce, "role"].astype(str)) == {Role.COMMUNICATION.value}
    assert diag.communication is not None and diag.communication.steady(diag.steady_positions)["collectives"] > 0
    assert not any(str(name).startswith("all-reduce") for name in diag.kernels["name"])
    compute = next(f for f in diag.findings if f.rule == "compute_bound")
    assert "XLA_FLAGS" in compute.advice and "torch" not in compute.advice


def test_collectives_beside_a_host_bound_step_matter_once_the_host_is_fixed(v100):
    """The step's thread sets this step's length (its launches): removing the collectives alone
    saves nothing, removing them once launch overhead is gone saves them all — the finding keeps
    its grade, ranks after launch_bound, and says both."""
    finding = next(f for f in v100.findings if f.rule == "exposed_communication")
    assert finding.first_fix == "launch_overhead" and not finding.measure_grade
    assert finding.predicted_saving_ns < 0.01 * v100.steady_step_ns
    assert finding.predicted_saving_after_ns == pytest.approx(finding.explains_ns, rel=0.05)
    line = next(line for line in finding_lines(v100.findings, v100.steady_step_ns) if line.rule == finding.rule)
    assert f"once launch/dispatch is removed, it saves ~{fmt_ns(finding.predicted_saving_after_ns)}" in line.fix
