"""The compiled scanner (readers/_kineto_scan.c) on small hand-written texts: what it takes gives
the reference decoding's timeline, what it does not take it declines (and the next decoding
gives the same timeline as ever). Real traces are compared in tests/test_fast_path.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from traceview.readers import _json_stream, kineto, kineto_fields, kineto_scan
from traceview.readers._io import InflatedText
from traceview.readers._json_stream import Declined

from test_fast_path import assert_same_timeline

pytestmark = pytest.mark.skipif(not kineto_scan.available(), reason="the compiled scanner is not built")

KERNEL = ('{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000.5, "dur": 3,'
          ' "args": {"device": 0, "stream": 7, "correlation": 11}}')
LAUNCH = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 999,'
          ' "dur": 1.25, "args": {"correlation": 11}}')
OP = ('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 998, "dur": 4,'
      ' "args": {"Input Dims": [[1000, 10], [10, 3], []], "External id": 5}}')


def _doc(*events: str, head: str = '"schemaVersion": 1, ', tail: str = "") -> str:
    return "{" + head + '"traceEvents": [' + ",\n".join(events) + "]" + tail + "}"


def assert_same_fields(a: kineto_fields.ScannedFields, b: kineto_fields.ScannedFields) -> None:
    """Two scans of one document hold the same fields, event by event (the interned values may
    be listed in another order: the blocks, and the halves of each, can fall elsewhere)."""
    assert a.events_seen == b.events_seen and a.top == b.top
    for field in ("ph", "cat", "name", "pid", "tid", "input_dtypes"):
        per_event = []
        for fields in (a.fields, b.fields):
            interner = getattr(fields, field)
            values = np.empty(len(interner.values), dtype=object)
            values[:] = [(type(v).__name__, v) for v in interner.values]  # (1 and "1" stay apart)
            per_event.append(values[interner.all_codes()].tolist())
        assert per_event[0] == per_event[1], field
    for field in ("ts", "dur", "correlation", "nbytes", "elements", "device_ids", "stream_ids"):
        joined_a, joined_b = (np.concatenate(getattr(f, field) or [np.zeros(0)]) for f in (a.fields, b.fields))
        assert np.array_equal(joined_a, joined_b, equal_nan=True), field
    assert a.fields.meta_names == b.fields.meta_names


def _scanned_in_memory(path: Path) -> kineto_fields.ScannedFields | None:
    """The scan of the file's content held in memory (as the command line's read-ahead holds a
    gzip file's), where the scanner reads the text in place, a block's length at a time."""
    try:
        return kineto_fields.scan_fields(path, InflatedText(path.read_bytes()))
    except Declined:
        return None


def _check(tmp_path: Path, text: str, *, scanned: bool) -> None:
    """The reading chain gives the reference timeline; the scanner takes the text iff ``scanned``,
    from the file or from memory alike."""
    path = tmp_path / "trace.json"
    path.write_text(text, encoding="utf-8")
    reference = kineto.read_reference(path)
    try:
        taken = kineto.read_scanned(path)
    except Declined:
        taken = None
    assert (taken is not None) == scanned
    in_memory = _scanned_in_memory(path)
    assert (in_memory is not None) == scanned
    if taken is not None and in_memory is not None:
        assert_same_timeline(taken, reference)
        assert_same_fields(in_memory, kineto_fields.scan_fields(path))
    assert_same_timeline(kineto.read(path), reference)


@pytest.mark.parametrize("text", [
    _doc(OP, LAUNCH, KERNEL),
    _doc(),  # an empty array
    "[" + ",".join([OP, LAUNCH, KERNEL]) + "]",  # the bare-array form
    _doc(OP, tail=', "deviceProperties": [{"id": 0, "name": "GPU"}], "baseTimeNanoseconds": 5'),
    _doc(OP.replace('"aten::mm"', '"aten::\\u00e9\\n\\"q\\""')),  # escapes in a name: decoded once
    _doc(OP.replace('"aten::mm"', '"漢字 é"')),  # UTF-8 in a name
    _doc(KERNEL.replace('"device": 0', '"device": "3"')),  # an id written as text
    _doc(KERNEL.replace('"tid": 7', '"tid": "stream 7"')),
    _doc(OP.replace("[[1000, 10], [10, 3], []]", "[[2, -1], [1.5], [4, 4], 7, null, [[1]]]")),
    _doc(OP.replace("[[1000, 10], [10, 3], []]", "[[99999999999999999, 99999999999999999], [0, 99999999999999999]]")),
    # record_shapes' input types: a list of dtype names and markers; anything else records none
    _doc(OP.replace('"External id"', '"Input type": ["float", "Scalar", "", "long int"], "External id"')),
    _doc(OP.replace('"External id"', '"Input type": [1, null, ["x"], "double", {"k": "v"}], "External id"')),
    _doc(OP.replace('"External id"', '"Input type": "float", "External id"'),
         OP.replace('"External id"', '"Input type": {"0": "float"}, "External id"')),
    _doc(OP.replace('"ts": 998', '"ts": 1669783687464181.123')),  # epoch µs with ns digits
    _doc(OP.replace('"ts": 998', '"ts": -12.5')),
    _doc(OP.replace('"ts": 998', '"ts": 0.0000000000000000000000000000000000000000004')),  # long fraction
    _doc(OP.replace('"dur": 4', '"dur": null')),
    _doc(OP.replace('"ts": 998, ', "")),  # no ts: dropped with its reason
    _doc(OP, LAUNCH.replace('"pid": 1, ', "")),  # no pid beside events with one: dropped too
    _doc(OP.replace('"pid": 1', '"pid": 1.0'), LAUNCH, KERNEL.replace('"tid": 7', '"tid": 7.0')),  # whole floats
    _doc(OP, LAUNCH.replace('"pid": 1', '"pid": 1.5')),  # a pid with a fraction: dropped with its reason
    _doc('{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main \\"loop\\""}}', OP),
    _doc('{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 999,'
         ' "args": {"Bytes": 512, "Total Allocated": "1024", "Total Reserved": 2048.0, "Device Type": 0,'
         ' "Device Id": -1}}', OP),
    _doc('{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",'
         ' "ts": 1, "dur": 9000}', OP, '{"ph": "s", "id": 11, "pid": 1, "tid": 1, "ts": 999, "cat": "ac2g",'
         ' "name": "ac2g"}', '{}', '{"ph": null}'),
    _doc(OP, head=' \n\t'),  # white space everywhere
    _doc(OP.replace(", ", ",\n  ").replace(": ", " :\r\n\t")),
])
def test_what_the_scanner_takes_it_reads_like_the_reference(tmp_path: Path, text: str) -> None:
    _check(tmp_path, text, scanned=True)


def _decimal_texts() -> list[str]:
    """Numbers of 1 to 19 digits around the bounds of the scanner's exact division (all digits
    as one integer at most 2**53, a power of ten at most 1e22), and random ones besides."""
    texts = ["0", "-0.0", "0.5", "9007199254740992", "9007199254740993", "9007199254740.992", "9007199254740.993",
             "-9007199254740.992", "4503599627370.4965", "0.1234567890123456789", "1234567.123456789012",
             "1669783687464.181", "1669783687464181.1", "999999999999999999", "0.0000000000000000001"]
    rng = np.random.default_rng(5)
    for _ in range(400):
        digits = int(rng.integers(1, 20))
        whole = int(rng.integers(1, digits + 1))
        text = "".join(str(d) for d in rng.integers(0, 10, digits))
        text = text[:whole].lstrip("0") or "0"
        text += ("." + "".join(str(d) for d in rng.integers(0, 10, digits - whole))) if digits > whole else ""
        texts.append(("-" if rng.random() < 0.2 else "") + text)
    return texts


def test_numbers_read_as_the_nearest_double(tmp_path: Path) -> None:
    """Every dur the scanner reads is the double Python's own reading gives (correctly rounded),
    bit for bit, whether the scanner divided or handed the text to strtod."""
    texts = _decimal_texts()
    path = tmp_path / "trace.json"
    path.write_text(_doc(*(OP.replace('"dur": 4', f'"dur": {t}') for t in texts)), encoding="utf-8")
    scanned = _scanned_in_memory(path)
    assert scanned is not None
    read = np.concatenate(scanned.fields.dur)
    expected = np.array([float(t) for t in texts])
    assert read.view(np.int64).tolist() == expected.view(np.int64).tolist()


@pytest.mark.parametrize("text", [
    _doc(OP.replace('"ph"', '"p\\u0068"')),  # an escaped key could be any key
    _doc(OP.replace('"name": "aten::mm"', '"name": "a", "name": "b"')),  # a duplicated key
    _doc(KERNEL.replace('"correlation": 11', '"correlation": 11, "correlation": 12')),
    _doc(OP.replace('"External id"', '"Input type": ["float"], "Input type": ["double"], "External id"')),
    _doc(OP.replace('"ts": 998', '"ts": 9.98e2')),  # exponent
    _doc(OP.replace('"ts": 998', '"ts": 1234567890123456789')),  # more digits than int64 µs hold
    _doc(OP.replace('"ts": 998', '"ts": "998"')),  # a string where a number belongs
    _doc(OP.replace('"pid": 1', '"pid": [1]')),  # a type the typed decoding refuses
    _doc(KERNEL.replace('"device": 0', '"device": [0]')),
    _doc(OP.replace('"args": {', '"args": [').replace('"External id": 5}', '5]')),
    _doc(OP, "[1]"),  # an element that is not an object
    _doc(OP) [:-3],  # truncated
    _doc(OP + ","),  # trailing comma
])
def test_what_the_scanner_does_not_take_it_declines(tmp_path: Path, text: str) -> None:
    path = tmp_path / "trace.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(Declined):
        kineto.read_scanned(path)
    assert _scanned_in_memory(path) is None
    try:
        reference = kineto.read_reference(path)
    except Exception as err:  # the reference names the problem; the chain must end the same way
        with pytest.raises(type(err)):
            kineto.read(path)
    else:
        assert_same_timeline(kineto.read(path), reference)


def test_invalid_utf8_is_declined(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_bytes(_doc(OP).encode().replace(b"aten::mm", b"aten::\xff\xfe"))
    with pytest.raises(Declined):
        kineto.read_scanned(path)


def test_one_element_longer_than_a_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An element spanning many blocks: the buffer grows until it holds it."""
    monkeypatch.setattr(_json_stream, "BLOCK_BYTES", 64)
    long_name = "x" * 5000
    _check(tmp_path, _doc(OP, OP.replace("aten::mm", long_name), KERNEL), scanned=True)


def test_more_events_than_the_outputs_hold(tmp_path: Path) -> None:
    """Small events fill the column buffers before the text ends; the scan goes on with fresh ones."""
    tiny = '{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":%d,"dur":1}'
    _check(tmp_path, _doc(*(tiny % i for i in range(20_000))), scanned=True)


# Names long enough that the middle of a block often falls before a seam inside one of them.
@pytest.mark.parametrize("name", ["aten::mm", "}, {" * 400, 'a"},{"b' * 100])
def test_two_halves_on_two_threads_read_like_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Long texts are scanned in two halves, the second from an element seam found by the text's
    shape; a seam inside a string (the names here) is caught and the rest rescanned."""
    monkeypatch.setattr(kineto_scan, "_CORES", 2)
    monkeypatch.setattr(kineto_scan, "_SPLIT_BYTES", 256)
    monkeypatch.setattr(_json_stream, "BLOCK_BYTES", 4096)
    quoted = name.replace('"', '\\"')
    events = [OP.replace("aten::mm", quoted if i % 2 else f"op{i % 5}").replace('"ts": 998', f'"ts": {i}')
              for i in range(400)]
    _check(tmp_path, _doc(*events, LAUNCH, KERNEL), scanned=True)


def test_input_dtypes_label() -> None:
    """An op's input dtypes from record_shapes' ``Input type``: the distinct tensor dtypes, sorted;
    the words for inputs that are not one tensor, empty entries and non-strings left out."""
    label = kineto_fields.input_dtypes_label
    assert label(["float", "Scalar", "", "long int", "float", "ScalarList"]) == "float+long int"
    assert label(["double", "TensorList", "GenericList", "None"]) == "double"
    assert label(["c10::Half", "float"]) == "c10::Half+float"
    assert label([1, None, ["float"], "Scalar"]) == ""
    assert label("float") == "" and label(None) == "" and label({"0": "float"}) == ""
