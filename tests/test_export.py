"""``traceview export --perfetto``: valid Chrome trace JSON that the viewers bind the way we mean.

The viewers are not available offline, so the checks emulate what they do on import: slices of a
thread must nest (else Perfetto drops them), a flow's ``s`` binds to the innermost slice open at
its timestamp on its thread and its ``f`` (``bp: "e"``) to the innermost enclosing slice.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from tests.conftest import (REPO, TORCH_GPU_TRACES, XPLANE_GPU_TRACES, cached_diagnosis, sample_kineto_traces,
                            sample_xplane_traces, shared_trace)
from traceview.results import BUCKETS
from traceview.normalize import launch_rows
from traceview.redact import redact_path, redact_text, secrets_from, secrets_of
from traceview.renderers import perfetto
from traceview.renderers.perfetto import ATTRIBUTION_CAT, ATTRIBUTION_TRACK, STEPS_CAT, STEPS_TRACK
from traceview.schema import event_table, TraceMeta

RESNET = "torch_gpu/resnet_v100_1rank.pt.trace.json.gz"
ALEXNET = "torch_gpu/alexnet_a100_nosteps.json.gz"
CPU_HOST = "cpu-box-7.example.org"
EVIL_NAME = '<script>alert("x")</script>'


def write_cpu_trace(folder: Path, user: str = "alice") -> Path:
    """A small CPU-only torch.profiler trace (Kineto JSON): 3 steps of linear + relu, one op named like markup.

    The file sits under a fake home folder and names the host, so redaction has something to remove.
    """
    path = folder / "home" / user / "runs" / f"{CPU_HOST.split('.')[0]}_4242.pt.trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    pid, tid = 4242, 4242
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "thread 4242 (python3)"}},
    ]
    # Work before the first step, so the trace has a lead-in to align.
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::zeros", "pid": pid, "tid": tid, "ts": 200.0, "dur": 50.0})
    t = 1_000.0
    for step in range(1, 4):
        start = t
        ops = []
        t += 5.0
        for layer in range(4):
            ops.append(("cpu_op", "aten::linear", t, 40.0))
            ops.append(("cpu_op", "aten::t", t + 1.0, 2.0))
            ops.append(("cpu_op", "aten::addmm", t + 4.0, 34.5))
            ops.append(("cpu_op", "aten::relu", t + 45.0, 6.0))
            ops.append(("python_function", f"/home/{user}/proj/model.py(12): forward", t + 52.0, 3.0))
            t += 60.0
        ops.append(("cpu_op", EVIL_NAME, t, 8.0))
        t += 12.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid, "tid": tid,
                       "ts": start, "dur": t - start})
        for cat, name, ts, dur in ops:
            events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                           "args": {"External id": 1}})
        t += 20.0
    doc = {"schemaVersion": 1, "host_name": CPU_HOST, "traceEvents": events,
           "traceName": f"/home/{user}/runs/trace.json"}
    path.write_bytes(orjson.dumps(doc))
    return path


def _traces() -> list[Path]:
    return TORCH_GPU_TRACES + XPLANE_GPU_TRACES + sample_kineto_traces() + sample_xplane_traces()


def _doc(diagnoses: list[Any], redact: bool = False) -> dict[str, Any]:
    return orjson.loads(perfetto.render(diagnoses, redact=redact))


def _ns(us: float) -> int:
    return int(round(us * 1000))


def _threads(doc: dict[str, Any]) -> dict[int, str]:
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cpu_trace(tmp_path_factory.mktemp("cpu"))


@pytest.mark.parametrize("path", _traces(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_kept_event_is_one_slice_and_slices_nest(path):
    diag = cached_diagnosis(path)
    doc = _doc([diag])
    _check_nesting(doc)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    segments = diag.attribution.segments
    by_cat = Counter(e["cat"] for e in slices)
    assert by_cat[ATTRIBUTION_CAT] == len(segments)
    assert by_cat[STEPS_CAT] == len(diag.steps.table)
    assert len(slices) == len(diag.timeline.events) + len(segments) + len(diag.steps.table)
    kept = Counter(diag.timeline.events["kind"].astype(str))
    assert {k: by_cat[k] for k in kept} == dict(kept)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)


def test_slice_fields_and_thread_order():
    diag = cached_diagnosis(shared_trace(RESNET))
    doc = _doc([diag])
    threads = _threads(doc)
    names = [threads[t] for t in sorted(threads)]
    assert names[:2] == [STEPS_TRACK, ATTRIBUTION_TRACK]
    kinds = ["device" if n.startswith("GPU") else "host" for n in names[2:]]
    assert kinds == sorted(kinds, key=lambda k: k == "device"), "host tracks come before device streams"
    process = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert process[0]["args"]["name"] == "resnet_v100_1rank.pt.trace.json.gz (torch)"

    ev = diag.timeline.events
    kernel_row = int(np.flatnonzero(ev["kind"].astype(str).to_numpy() == "kernel")[0])
    kernel = ev.iloc[kernel_row]
    match = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "kernel"
             and e["args"].get("correlation") == int(kernel["correlation"])]
    assert len(match) == 1
    event = match[0]
    assert _ns(event["ts"]) == int(kernel["ts"])  # one trace: timestamps are the normalized ones
    assert _ns(event["dur"]) == int(kernel["dur"])
    assert event["name"] == kernel["name"]
    assert event["args"]["kind"] == "kernel"
    assert event["args"]["launcher"] == kernel["launcher"]
    assert event["args"]["step"] == int(diag.steps.table["number"][int(kernel["step"])])
    assert threads[event["tid"]] == kernel["track"]
    copies = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "memcpy"]
    assert copies and all("copy_kind" in e["args"] and "bytes" in e["args"] for e in copies)


def _check_nesting(doc: dict[str, Any]) -> None:
    per_thread: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            start = _ns(e["ts"])
            per_thread[(e["pid"], e["tid"])].append((start, start + _ns(e["dur"])))
    for key, spans in per_thread.items():
        stack: list[int] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], f"thread {key}: [{start}, {end}) overlaps an open slice"
            stack.append(end)


def _bound(thread: tuple[list[dict[str, Any]], np.ndarray], t: int) -> list[dict[str, Any]]:
    """The slices a flow event at ``t`` can bind to: the innermost one containing ``t``, or, when that
    one lasts 0 ns, every 0 ns slice at ``t`` (the viewers cannot tell those apart either)."""
    slices, starts = thread
    inner = _innermost(slices, starts, t)
    if inner is None:
        return []
    if _ns(inner["dur"]) > 0:
        return [inner]
    lo, hi = np.searchsorted(starts, t, side="left"), np.searchsorted(starts, t, side="right")
    return [slices[i] for i in range(lo, hi) if _ns(slices[i]["dur"]) == 0]


def _innermost(slices: list[dict[str, Any]], starts: np.ndarray, t: int) -> dict[str, Any] | None:
    """The innermost slice containing ``t`` on a properly nested thread (latest start that still contains it)."""
    i = int(np.searchsorted(starts, t, side="right")) - 1
    while i >= 0:
        s = slices[i]
        if _ns(s["ts"]) <= t < _ns(s["ts"]) + max(_ns(s["dur"]), 1):
            return s
        i -= 1
    return None


@pytest.mark.parametrize("relative", [RESNET, ALEXNET])
def test_flows_pair_up_and_bind_launch_to_its_device_event(relative):
    diag = cached_diagnosis(shared_trace(relative))
    doc = _doc([diag])
    ev = diag.timeline.events
    expected = int((launch_rows(event_table(ev)) >= 0).sum())
    starts = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "f"}
    assert len(starts) == len(ends) == expected > 0
    assert set(starts) == set(ends)
    assert all(e.get("bp") == "e" for e in ends.values())
    by_thread: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_thread[e["tid"]].append(e)
    index = {}
    for tid, slices in by_thread.items():
        slices.sort(key=lambda s: (_ns(s["ts"]), -_ns(s["dur"])))
        index[tid] = (slices, np.array([_ns(s["ts"]) for s in slices], dtype=np.int64))
    for flow_id in sorted(starts):
        s, f = starts[flow_id], ends[flow_id]
        assert _ns(s["ts"]) <= _ns(f["ts"]), "the arrow must start before it ends"
        src = _bound(index[s["tid"]], _ns(s["ts"]))
        dst = _bound(index[f["tid"]], _ns(f["ts"]))
        correlations = {c for c in (e["args"].get("correlation") for e in src) if c is not None}
        assert any(e["args"].get("correlation") in correlations for e in dst), (s, f)
        assert any(e["cat"] in ("launch", "runtime", "sync") for e in src)
        assert any(e["cat"] in ("kernel", "memcpy", "memset", "device_sync", "device_annotation") for e in dst)


def test_attribution_track_matches_the_report():
    diag = cached_diagnosis(shared_trace(RESNET))
    segments = diag.attribution.segments.to_pandas()
    lengths = (segments["end"] - segments["start"]).to_numpy()
    assert (lengths > 0).all()
    per = diag.attribution.per_step
    for pos in range(len(diag.steps.table)):
        mine = segments[segments["step"] == pos]
        sums = {b: int(lengths[(segments["step"] == pos).to_numpy() & (segments["bucket"] == b).to_numpy()].sum())
                for b in BUCKETS}
        assert sums == {b: int(per[b][pos]) for b in BUCKETS}
        # Consecutive, merged, and covering the window exactly.
        assert int(mine["start"].iloc[0]) == int(diag.steps.table["start"][pos])
        assert int(mine["end"].iloc[-1]) == int(diag.steps.table["end"][pos])
        assert (mine["start"].to_numpy()[1:] == mine["end"].to_numpy()[:-1]).all()
        assert (mine["bucket"].to_numpy()[1:] != mine["bucket"].to_numpy()[:-1]).all()


def test_two_traces_become_two_processes_aligned_on_their_first_step():
    a = cached_diagnosis(shared_trace(RESNET))
    b = cached_diagnosis(shared_trace(ALEXNET))
    doc = _doc([a, b])
    processes = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert processes == {1: "resnet_v100_1rank.pt.trace.json.gz (torch)", 2: "alexnet_a100_nosteps.json.gz (torch)"}
    pids_of_tid: dict[int, set[int]] = defaultdict(set)
    for e in doc["traceEvents"]:
        if e["ph"] != "M" or e["name"].startswith("thread"):
            pids_of_tid[e["tid"]].add(e["pid"])
    assert all(len(p) == 1 for p in pids_of_tid.values()), "thread ids are unique over the whole file"
    first_step = {pid: min(e["ts"] for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == STEPS_CAT
                           and e["pid"] == pid) for pid in (1, 2)}
    assert first_step[1] == first_step[2]
    assert [t["pid"] for t in doc["otherData"]["traces"]] == [1, 2]
    assert len({e["id"] for e in doc["traceEvents"] if e["ph"] == "s"}) == \
        sum(1 for e in doc["traceEvents"] if e["ph"] == "s"), "flow ids are unique over the whole file"
    _check_nesting(doc)


def test_traces_with_different_lead_ins_line_up_on_their_first_step(cpu_trace):
    gpu = cached_diagnosis(shared_trace(ALEXNET))
    cpu = cached_diagnosis(cpu_trace)
    lead_in = int(cpu.steps.table["start"][0])
    assert lead_in == 800_000 and int(gpu.steps.table["start"][0]) == 0
    doc = _doc([gpu, cpu])
    first_step = {pid: min(e["ts"] for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == STEPS_CAT
                           and e["pid"] == pid) for pid in (1, 2)}
    assert first_step == {1: 800.0, 2: 800.0}
    assert min(e["ts"] for e in doc["traceEvents"] if e["ph"] == "X") == 0.0
    assert [t["shift_us"] for t in doc["otherData"]["traces"]] == [800.0, 0.0]


def test_output_is_deterministic(tmp_path):
    diag = cached_diagnosis(shared_trace(RESNET))
    assert perfetto.render([diag]) == perfetto.render([diag])
    small = cached_diagnosis(shared_trace(ALEXNET))
    first, second = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    perfetto.write([small], first)
    perfetto.write([small], second)
    assert first.read_bytes() == second.read_bytes()
    assert orjson.loads(gzip.decompress(first.read_bytes())) == _doc([small])


def test_redaction_removes_host_names_and_paths():
    diag = cached_diagnosis(shared_trace(RESNET))
    host = diag.timeline.meta.host_name
    assert host
    plain = perfetto.render([diag])
    assert host.encode() in plain and b"/tmp/" in plain  # the test has something to remove
    redacted = perfetto.render([diag], redact=True)
    for secret in (host, host.split(".")[0], "/tmp/", str(Path(diag.timeline.meta.source).parent)):
        assert secret.encode() not in redacted, secret
    doc = orjson.loads(redacted)
    assert doc["otherData"]["traces"][0]["host_name"] == "<host>"
    assert doc["otherData"]["redacted"] is True
    # Redaction changes names, never the events.
    assert Counter(e["ph"] for e in doc["traceEvents"]) == Counter(e["ph"] for e in orjson.loads(plain)["traceEvents"])


def test_redaction_of_a_cpu_trace_from_a_home_folder(cpu_trace):
    diag = cached_diagnosis(cpu_trace)
    redacted = perfetto.render([diag], redact=True)
    for secret in (b"alice", CPU_HOST.encode(), b"cpu-box-7", b"/home/"):
        assert secret not in redacted, secret
    doc = orjson.loads(redacted)
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert "<path>/model.py(12): forward" in names
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"} == \
        {"<host>_4242.pt.trace.json (torch)"}
    _check_nesting(doc)


def test_redact_text_rules():
    secrets = secrets_from(hosts=["gpu-7.corp.example.com"], users=["alice"])
    assert secrets == {"gpu-7.corp.example.com": "<host>", "gpu-7": "<host>", "alice": "<user>"}
    cases = {
        "/home/alice/proj/train.py(12): main": "<path>/train.py(12): main",
        "~/proj/x.py": "<path>/x.py",
        "C:\\Users\\alice\\x.py": "<path>\\x.py",
        "gpu-7_123.1700000000.pt.trace.json": "<host>_123.1700000000.pt.trace.json",
        "run by alice on gpu-7.corp.example.com": "run by <user> on <host>",
        "malice": "malice",  # only whole words
        "/usr/bin/python3 train.py": "<path>/python3 train.py",
        # Names that only look like paths stay as they are.
        "sequential/dense/MatMul": "sequential/dense/MatMul",
        "/job:localhost/replica:0/task:0/device:GPU:0": "/job:localhost/replica:0/task:0/device:GPU:0",
        "host 1102/1262 (pt_main_thread)": "host 1102/1262 (pt_main_thread)",
        "jit(train_step)/jit(main)/dot_general": "jit(train_step)/jit(main)/dot_general",
        "Memcpy DtoD (Device -> Device)": "Memcpy DtoD (Device -> Device)",
    }
    for text, expected in cases.items():
        assert redact_text(text, secrets) == expected, text
        assert redact_text(expected, secrets) == expected, "idempotent"
    assert redact_path("/home/alice/runs/gpu-7_1.json", secrets) == "<path>/<host>_1.json"
    assert redact_path("trace.json", secrets) == "trace.json"


def test_a_short_host_name_goes_where_a_value_is_the_host_and_stays_in_words():
    from traceview.redact import host_field

    secrets = secrets_from(hosts=["vm"])
    assert host_field("vm", secrets) == "<host>"
    # The profilers' default file names start with the host's name, whatever its length.
    assert redact_path("/runs/plugins/profile/2026_01_01_00_00_00/vm.xplane.pb", secrets) == "<path>/<host>.xplane.pb"
    assert redact_path("vm_27927.1795319437029376727.pt.trace.json.gz", secrets) == \
        "<host>_27927.1795319437029376727.pt.trace.json.gz"
    # In free text two letters are too common to replace: a word is not mangled.
    assert redact_text("vm vmap llvm_pass", secrets) == "vm vmap llvm_pass"
    assert redact_path("vmap_1.json", secrets) == "vmap_1.json"
    assert secrets_from(hosts=["localhost"]) == {}
    # The short form of a long host name is a host name too, and a field's spaces do not hide it.
    dotted = secrets_from(hosts=["vm.corp.example"])
    assert redact_path("vm_123.1.pt.trace.json", dotted) == "<host>_123.1.pt.trace.json"
    assert host_field(" vm ", secrets) == "<host>"


def test_names_redaction_makes_equal_stay_distinct_whatever_is_already_there():
    from traceview.analyzers.redaction import _unique_renames

    # "/a/x" and "/b/x" both redact to "<path>/x"; the suffix must not land on the "<path>/x [2]"
    # the trace already has.
    renamed = _unique_renames(["<path>/x", "<path>/x", "<path>/x [2]", "<path>/x"])
    assert len(set(renamed)) == 4 and renamed[0] == "<path>/x" and renamed[2] == "<path>/x [2]"


def test_secrets_of_numbers_distinct_hosts_in_order():
    a = TraceMeta(source="/home/bob/a.json", format="kineto-json", framework="torch", host_name="node-a.cluster")
    b = TraceMeta(source="/Users/carol/b.json", format="kineto-json", framework="torch", host_name="node-b.cluster")
    c = TraceMeta(source="c.json", format="kineto-json", framework="torch", host_name="node-a.cluster")
    secrets = secrets_of(a, b, c)
    assert secrets["node-a.cluster"] == secrets["node-a"] == "<host-1>"
    assert secrets["node-b.cluster"] == "<host-2>"
    assert secrets["bob"] == "<user-1>" and secrets["carol"] == "<user-2>"
    assert secrets_of(TraceMeta(source="x", format="f", framework="torch", host_name="localhost")) == {}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "traceview", *args], capture_output=True, text=True, cwd=REPO,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)


def test_cli_export_two_traces_redacted(tmp_path, cpu_trace):
    gpu = shared_trace(ALEXNET)
    out = tmp_path / "both.json"
    result = run_cli("export", str(gpu), str(cpu_trace), "--perfetto", str(out), "--redact")
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stderr
    raw = out.read_bytes()
    doc = orjson.loads(raw)
    assert [t["pid"] for t in doc["otherData"]["traces"]] == [1, 2]
    assert [t["framework"] for t in doc["otherData"]["traces"]] == ["torch", "torch"]
    assert b"alice" not in raw and CPU_HOST.encode() not in raw
    again = tmp_path / "again.json"
    assert run_cli("export", str(gpu), str(cpu_trace), "--perfetto", str(again), "--redact").returncode == 0
    assert again.read_bytes() == raw, "byte-identical for the same input"


def test_cli_export_bad_input_is_one_line(tmp_path):
    result = run_cli("export", str(tmp_path / "missing.json"), "--perfetto", str(tmp_path / "out.json"))
    assert result.returncode == 2
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1
    assert not (tmp_path / "out.json").exists()
    trace = tmp_path / "t.json"
    trace.write_bytes(b'{"traceEvents": []}')
    result = run_cli("export", str(trace), "--perfetto", str(trace))
    assert result.returncode == 2 and "overwrite" in result.stderr
    os.link(trace, tmp_path / "same-file.json")
    result = run_cli("export", str(trace), "--perfetto", str(tmp_path / "same-file.json"))
    assert result.returncode == 2 and "overwrite" in result.stderr
    assert trace.read_bytes() == b'{"traceEvents": []}'
