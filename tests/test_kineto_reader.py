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
    assert (kernels["ts"] + timeline.meta.origin_ns == exact_ns).any()
    # Some timestamps carry sub-µs digits that a double would have rounded to 0.25 µs.
    assert (timeline.events["ts"].to_numpy() % 250 != 0).any()


def test_profiler_steps_are_found_and_all_kept():
    path = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    _, steps = load_with_steps(path)
    assert steps.rule == "markers"
    assert steps.table["number"].tolist() == [101, 102, 103, 104, 105]
    durations = steps.table["duration"]
    assert (durations > 0).all()
    starts = steps.table["start"]
    ends = steps.table["end"]
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
        assert steps.table["start"][0] <= ev["ts"].min()
        assert steps.table["end"][0] >= (ev["ts"] + ev["dur"]).max()


def test_step_window_extends_to_last_device_work_launched_in_it():
    path = shared_trace("torch_gpu/resnet_v100_1rank.pt.trace.json.gz")
    timeline, steps = load_with_steps(path)
    ev = timeline.events
    table = steps.table
    # Step #101's host range ends long before its kernels finish: the window must cover them.
    first = table.row(0)
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


# torch.profiler's exporter writes event names unescaped (readers/kineto_names.py); a Python frame's
# name as it appears in real exports, each making the whole file invalid JSON.
_PYTHON_FRAME = ('  {{\n    "ph": "X",\n    "cat": "python_function",\n    "name": "{name}",\n    "pid": 7,\n'
                 '    "tid": 7,\n    "ts": {ts},\n    "dur": 2\n    ,\n    "args": {{\n      "Python id": {ts}\n    }}\n  }}')
_ONE_LINE_FRAME = ('{{"ph": "X", "cat": "python_function", "name": "{name}", "pid": 7, "tid": 7,\n'
                   '    "ts": {ts}, "dur": 2,\n    "args": {{"Python id": {ts}}}}}')


@pytest.mark.parametrize(("layout", "broken", "read_as"), [
    # a module docstring's line as the function (torch 2.13, torch.compile with with_stack=True)
    (_PYTHON_FRAME, 'torch/_inductor/fx_passes/quantization.py(0):     """', 'torch/_inductor/fx_passes/quantization.py(0):     """'),
    # a source line with quotes and a newline (pytorch/pytorch#113001)
    (_ONE_LINE_FRAME, '_lib = torch.library.Library("_inductor_test", "IMPL")\n(1): <module>',
     '_lib = torch.library.Library("_inductor_test", "IMPL")\n(1): <module>'),
    # a dict-like file name of code dynamo generates, quotes and ", " inside
    (_PYTHON_FRAME, '{"device": "cpu", "dtype": "float32"}(12): run', '{"device": "cpu", "dtype": "float32"}(12): run'),
    # Windows paths with bare backslashes (pytorch/pytorch#98432); a valid escape stays one
    (_ONE_LINE_FRAME, 'torch\\cuda\\__init__.py(219): _lazy_init \\n', 'torch\\cuda\\__init__.py(219): _lazy_init \n'),
    # a control character
    (_PYTHON_FRAME, 'torch/_inductor/config.py(0): \x01', 'torch/_inductor/config.py(0): \x01'),
])
def test_event_names_the_exporter_left_unescaped_are_read(tmp_path, layout, broken, read_as):
    """Real exports hold Python frame names that are not valid JSON strings: one makes the whole
    file invalid. The reader escapes them, keeps every event, and says how many it repaired."""
    events = [layout.format(name="step.py(3): train", ts=1000), layout.format(name=broken, ts=1010),
              layout.format(name="torch/nn/modules/module.py(1751): _call_impl", ts=1020)]
    path = tmp_path / "trace.json"
    path.write_text('{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + ",\n".join(events) + "\n  ]\n}\n",
                    encoding="utf-8")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(path.read_bytes())
    timeline = kineto.read(path)
    names = [str(n) for n in timeline.events["name"]]
    assert names == ["step.py(3): train", read_as, "torch/nn/modules/module.py(1751): _call_impl"]
    assert timeline.meta.input_events == 3 and not timeline.meta.dropped
    assert any(note.startswith("1 event name(s) were not valid JSON") for note in timeline.meta.notes)


def test_names_that_are_not_utf8_are_read_with_replacement_characters(tmp_path):
    """A name holding bytes that are not UTF-8 (pytorch/pytorch#136180): read, the bytes replaced."""
    event = _PYTHON_FRAME.format(name="torch/_inductor/config.py(0): @@", ts=1000).encode()
    path = tmp_path / "trace.json"
    path.write_bytes(b'{"traceEvents": [\n' + event.replace(b"@@", b"\xff\xfe") + b"\n]}")
    timeline = kineto.read(path)
    assert [str(n) for n in timeline.events["name"]] == ["torch/_inductor/config.py(0): \ufffd\ufffd"]


def test_a_document_broken_elsewhere_is_still_refused_where_it_breaks(tmp_path):
    """Repair is for names only: a document also broken elsewhere keeps its one-line error."""
    from traceview.errors import FormatError

    good = _PYTHON_FRAME.format(name='a.py(1): f """', ts=1000)
    path = tmp_path / "trace.json"
    path.write_text('{"traceEvents": [\n' + good + ",\n" + good.replace('"ts": 1000', '"ts": 1000 1') + "\n]}")
    with pytest.raises(FormatError, match="invalid JSON at byte"):
        kineto.read(path)


def test_a_repaired_document_reads_the_same_scanned_or_decoded(tmp_path, monkeypatch):
    """After the names are repaired the compiled scanner reads the document (a 715 MB capture: 14 s
    and 3.6 GB against 27 s and 7.4 GB decoded whole); without it, the reference decoding does: the
    same timeline, note included."""
    from tests.test_fast_path import assert_same_timeline

    events = [_PYTHON_FRAME.format(name=name, ts=ts) for name, ts in
              (("step.py(3): train", 1000), ('q.py(0):     """', 1010), ("{\"a\": 1}(2): run", 1020))]
    path = tmp_path / "trace.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + "\n]}", encoding="utf-8")
    scanned = kineto.read(path)
    monkeypatch.setattr(kineto, "_scanned_text", lambda path, text: None)
    decoded = kineto.read(path)
    assert_same_timeline(scanned, decoded)
    assert scanned.meta.notes == decoded.meta.notes and "2 event name(s)" in scanned.meta.notes[-1]
