"""The XPlane wire decoding of events changes no number: every sample and shared XPlane reads to
the same timeline as through the protobuf runtime, column by column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.test_fast_path import assert_same_timeline
from traceview.readers import xplane, xplane_events, xplane_space

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"
XPLANES = sorted((ROOT / "sample_traces").rglob("*.xplane.pb*")) + sorted((ROOT / "tests" / "data").rglob("*.xplane.pb*"))
if SHARED.is_dir():
    XPLANES += sorted(SHARED.rglob("*.xplane.pb*"))


DECODERS = ["compiled", "arrays"]


def _use(decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pick the compiled decoder (readers/_xplane_wire.c) or the array passes."""
    if decoder == "arrays":
        monkeypatch.setattr(xplane_events, "_xplane_wire", None)
    elif xplane_events._xplane_wire is None:
        pytest.fail("traceview/readers/_xplane_wire.c was not compiled: pip install -e . again")


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("path", XPLANES, ids=lambda p: str(p.relative_to(p.parents[3])))
def test_wire_decoding_equals_runtime(path: Path, decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(decoder, monkeypatch)
    declined: list[int] = []
    real = xplane_space.LineSource.decode

    def counting(self, line_class):  # noqa: ANN001, ANN202
        result = real(self, line_class)
        if result is None and self.count:
            declined.append(self.count)
        return result

    monkeypatch.setattr(xplane_space.LineSource, "decode", counting)
    fast = xplane.read(path)
    assert not declined, f"wire decoding declined lines of a real trace ({declined})"
    monkeypatch.setattr(xplane_space.LineSource, "decode", lambda self, line_class: None)
    assert_same_timeline(fast, xplane.read(path))


def _line_bytes(events: bytes) -> tuple[bytes, int, int]:
    """A serialized XLine holding only ``events`` (the records of field 4), and where they lie."""
    header = b"\x08\x01"  # id = 1
    return header + events, len(header), len(header) + len(events)


def _record(body: bytes) -> bytes:
    assert len(body) < 128
    return b"\x22" + bytes([len(body)]) + body


GOOD_EVENT = b"\x08\x05\x10\x80\x01\x18\x07" + b"\x22\x04\x08\x02\x20\x09"  # id 5, offset 128, dur 7, stat 2 = 9


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("body, expected", [
    (_record(GOOD_EVENT), 1),
    (_record(GOOD_EVENT) + _record(b"\x08\x06\x28\x03"), 2),  # num_occurrences: an aggregated event
    (_record(GOOD_EVENT + b"\x50\x01"), 1),  # an unknown field (10) is skipped
])
def test_both_decoders_read_the_same_columns(decoder: str, body: bytes, expected: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    data, begin, end = _line_bytes(body)
    compiled = xplane_events.decode_compiled(data, begin, end, expected, 1_000)
    arrays = xplane_events._decode(np.frombuffer(data + bytes(16), dtype=np.uint8), begin, end, expected, 1_000)
    assert compiled is not None
    for column in ("metadata_id", "ts", "end", "status", "aggregated", "stat_event", "stat_id", "stat_field",
                   "stat_number", "stat_start", "stat_end"):
        assert np.array_equal(getattr(compiled, column), getattr(arrays, column)), column
    assert compiled.metadata_id[0] == 5 and compiled.ts[0] == 1_000 and compiled.stat_number[0] == 9


@pytest.mark.parametrize("body, expected", [
    (_record(b"\x0a\x01\x05"), 1),  # metadata_id as length-delimited: not an XEvent
    (_record(b"\x08\x80"), 1),  # a varint cut short
    (_record(GOOD_EVENT)[:-1], 1),  # a record overrunning the line
    (_record(b"\x0b\x0c"), 1),  # a group
    (_record(GOOD_EVENT), 2),  # fewer records than the line says
])
def test_the_compiled_decoder_declines_what_is_not_an_event_run(body: bytes, expected: int) -> None:
    if xplane_events._xplane_wire is None:
        pytest.skip("the compiled decoder is not built")
    data, begin, end = _line_bytes(body)
    assert xplane_events.decode_compiled(data, begin, end, expected, 0) is None


def varint(value: int) -> bytes:
    """A protobuf varint (a negative int64 as its two's complement, ten bytes)."""
    value &= 2**64 - 1  # a negative int64 is written as its two's complement
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


MAX_PS = xplane_events.MAX_PS


@pytest.mark.parametrize("offset_ps, duration_ps", [
    (0, 0), (499, 1), (500, 0), (1_499, 1_000), (1_500, 999), (2**40 + 123_456, 7_654_321),
    (MAX_PS, MAX_PS), (MAX_PS + 1, 5), (7, MAX_PS + 1), (3_000, -1), (3_000, -2_501), (3_000, -2**63),
    (-1, 10), (2**63 - 1, 10),
])
@pytest.mark.parametrize("line_ns", [0, 1_700_000_000_000_000_000, -5, 2**61, 2**61 + 1, -(2**61) - 1])
def test_both_decoders_time_events_alike(offset_ps: int, duration_ps: int, line_ns: int) -> None:
    """The compiled decoder's start, end and status equal event_times at every bound and rounding."""
    if xplane_events._xplane_wire is None:
        pytest.skip("the compiled decoder is not built")
    body = b"\x08\x01" + b"\x10" + varint(offset_ps) + b"\x18" + varint(duration_ps)
    data, begin, end = _line_bytes(_record(body))
    compiled = xplane_events.decode_compiled(data, begin, end, 1, line_ns)
    as_int64 = lambda value: np.array([value & (2**64 - 1)], dtype=np.uint64).view(np.int64)  # noqa: E731
    ts, stop, status = xplane_events.event_times(line_ns, as_int64(offset_ps), as_int64(duration_ps))
    assert (compiled.ts[0], compiled.end[0], compiled.status[0]) == (ts[0], stop[0], status[0])
