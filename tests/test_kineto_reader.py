"""Kineto reader on real torch GPU traces (../shared/traces) and the CPU samples."""

from __future__ import annotations

import gzip
from collections import Counter

import numpy as np
import orjson
import pytest

from tests.conftest import TORCH_GPU_TRACES, sample_kineto_traces, shared_trace
from traceview.loader import load_with_steps
from traceview.readers import kineto
from traceview.schema import validate

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _raw_events(path):
    return orjson.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())["traceEvents"]


@pytest.mark.parametrize("path", TORCH_GPU_TRACES + sample_kineto_traces(), ids=lambda p: p.name)
def test_every_event_is_kept_or_dropped_with_a_reason(path):
    timeline, _ = load_with_steps(path)
    meta = timeline.meta
    assert meta.input_events == len(_raw_events(path))
    assert sum(meta.kept.values()) + sum(meta.dropped.values()) == meta.input_events
    assert sum(meta.kept.values()) == len(timeline.events)
    assert validate(timeline) == []


@pytest.mark.parametrize("path", TORCH_GPU_TRACES, ids=lambda p: p.name)
def test_device_events_match_the_file(path):
    raw = _raw_events(path)
    by_cat = Counter(e.get("cat") for e in raw if e.get("ph") == "X")
    timeline, _ = load_with_steps(path)
    kept = timeline.meta.kept
    assert kept.get("kernel", 0) == by_cat["kernel"]
    assert kept.get("memcpy", 0) == by_cat["gpu_memcpy"]
    assert kept.get("memset", 0) == by_cat["gpu_memset"]
    ev = timeline.events
    kernels = ev[ev["kind"] == "kernel"]
    # Every kernel is linked to the host call that launched it, and has a launcher op name.
    assert (kernels["correlation"] >= 0).all()
    assert (kernels["launcher"] != "").mean() > 0.95


def test_exact_nanosecond_timestamps_survive_absolute_float_microseconds():
    path = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    raw_text = gzip.decompress(path.read_bytes())
    timeline = kineto.read(path)
    assert not any("precision" in n for n in timeline.meta.notes)
    # The first kernel's ts in the text, exactly, minus the trace origin, equals the table's ts.
    events = orjson.loads(raw_text)["traceEvents"]
    first = next(e for e in events if e.get("cat") == "kernel")
    needle = orjson.dumps(first["name"])[1:-1]
    start = raw_text.index(needle)
    ts_text = raw_text[raw_text.index(b'"ts":', start) + 5:].split(b",", 1)[0].strip()
    whole, _, frac = ts_text.decode().partition(".")
    exact_ns = int(whole) * 1000 + int((frac + "000")[:3])
    kernels = timeline.events[timeline.events["kind"] == "kernel"]
    assert (kernels["ts"].to_numpy() + timeline.meta.origin_ns == exact_ns).any()
    # Some timestamps carry sub-µs digits that a double would have rounded to 0.25 µs.
    assert (timeline.events["ts"].to_numpy() % 250 != 0).any()


def test_profiler_steps_are_found_and_all_kept():
    path = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    _, steps = load_with_steps(path)
    assert steps.rule == "markers"
    assert steps.table["number"].tolist() == [101, 102, 103, 104, 105]
    durations = steps.table["duration"].to_numpy()
    assert (durations > 0).all()
    starts = steps.table["start"].to_numpy()
    ends = steps.table["end"].to_numpy()
    assert (starts[1:] >= ends[:-1]).all(), "step windows must not overlap"


def test_trace_without_markers_says_which_rule_found_steps():
    path = shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")
    timeline, steps = load_with_steps(path)
    assert steps.rule in ("repeated-top-level", "whole-trace")
    assert steps.rule_detail
    assert len(steps.table) >= 1
    # The whole-trace window covers every kept event.
    if steps.rule == "whole-trace":
        ev = timeline.events
        assert steps.table["start"].iloc[0] <= ev["ts"].min()
        assert steps.table["end"].iloc[0] >= (ev["ts"] + ev["dur"]).max()


def test_step_window_extends_to_last_device_work_launched_in_it():
    path = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    timeline, steps = load_with_steps(path)
    ev = timeline.events
    table = steps.table
    # Step #101's host range ends long before its kernels finish: the window must cover them.
    first = table.iloc[0]
    assert first["end"] > first["host_end"]
    kernels = ev[(ev["kind"] == "kernel") & (ev["step"] == 0)]
    assert (kernels["ts"] + kernels["dur"]).max() <= first["end"]


def test_same_name_reads_the_same_under_another_file_name(tmp_path):
    path = shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")
    renamed = tmp_path / "trace.bin"
    renamed.write_bytes(path.read_bytes())
    a = kineto.read(path).events
    b = kineto.read(renamed).events
    assert a.equals(b)


def test_launch_sync_and_runtime_calls_are_told_apart():
    path = shared_trace("torch_gpu/alexnet_a100_nosteps.json.gz")
    ev = load_with_steps(path)[0].events
    kinds = dict(zip(ev["name"].astype(str), ev["kind"].astype(str)))
    assert kinds["cudaLaunchKernel"] == "launch"
    assert kinds.get("cudaStreamSynchronize", "sync") == "sync"
    assert np.isin(ev.loc[ev["kind"] == "sync", "name"].astype(str).unique(),
                   ["cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpy", "cudaEventSynchronize"]).all()
