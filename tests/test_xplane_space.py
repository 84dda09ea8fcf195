"""The XSpace skeleton (readers/xplane_space.py): events left as bytes of the file read to the same
timeline as the protobuf runtime's whole parse, and a file the skeleton cannot cut is read whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fast_path import assert_same_timeline
from tests.test_xplane_wire import varint as _varint
from traceview.errors import FormatError
from traceview.readers import xplane, xplane_events, xplane_space
from traceview.readers.proto.xplane_descriptor import message_classes

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_traces").rglob("*.xplane.pb"))
TF_EAGER = next(p for p in SAMPLES if "mlp2" in p.parts and "tf-eager" in p.parts)

pytestmark = pytest.mark.skipif(xplane_events._xplane_wire is None, reason="the compiled decoder is not built")


def _whole_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: the runtime parses the whole file and reads every event (no skeleton, no decoder)."""
    monkeypatch.setattr(xplane_events, "_xplane_wire", None)
    monkeypatch.setattr(xplane_space.LineSource, "decode", lambda self, line_class: None)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT / "sample_traces").parents[3]))
def test_skeleton_reads_as_the_whole_runtime_parse(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = xplane_space.read_space(path, path.read_bytes(), message_classes())
    assert any(line.data is not None for plane in source.planes for line in plane.lines)  # the skeleton was cut
    fast = xplane.read(path)
    _whole_runtime(monkeypatch)
    assert_same_timeline(fast, xplane.read(path))


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _rewritten(path: Path, tmp_path: Path, line_bytes: callable) -> Path:
    """The sample with its busiest line re-written as ``line_bytes(line)`` (bytes of an XLine)."""
    classes = message_classes()
    space = classes["XSpace"].FromString(path.read_bytes())
    plane = max(space.planes, key=lambda p: sum(len(line.events) for line in p.lines))
    busiest = max(range(len(plane.lines)), key=lambda i: len(plane.lines[i].events))
    lines = [line.SerializeToString() for line in plane.lines]
    lines[busiest] = line_bytes(plane.lines[busiest])
    skeleton = classes["XPlane"]()
    skeleton.CopyFrom(plane)
    del skeleton.lines[:]
    plane_bytes = skeleton.SerializeToString() + b"".join(_field(3, line) for line in lines)
    others = classes["XSpace"]()
    others.CopyFrom(space)
    del others.planes[:]
    planes = [p.SerializeToString() if p is not plane else plane_bytes for p in space.planes]
    out = tmp_path / "vm.xplane.pb"
    out.write_bytes(b"".join(_field(1, p) for p in planes) + others.SerializeToString())
    return out


def _events_split_by_a_field(line) -> bytes:  # noqa: ANN001 - an XLine message
    """The line's events in two runs with its name written between them (valid protobuf)."""
    events = [_field(4, event.SerializeToString()) for event in line.events]
    head = type(line)(id=line.id, timestamp_ns=line.timestamp_ns, display_name=line.display_name).SerializeToString()
    half = len(events) // 2
    return head + b"".join(events[:half]) + _field(2, line.name.encode()) + b"".join(events[half:])


def test_a_line_whose_events_are_split_is_parsed_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _rewritten(TF_EAGER, tmp_path, _events_split_by_a_field)
    source = xplane_space.read_space(path, path.read_bytes(), message_classes())
    split = [line for plane in source.planes for line in plane.lines if line.data is None]
    assert len(split) == 1 and split[0].count > 10  # that line alone went to the runtime
    fast = xplane.read(path)
    _whole_runtime(monkeypatch)
    assert_same_timeline(fast, xplane.read(path))
    assert_same_timeline(fast, xplane.read(TF_EAGER))  # and it is the same trace


def _not_utf8_stat(line) -> bytes:  # noqa: ANN001
    """The line with one event's str stat replaced by bytes that are not UTF-8."""
    copy = type(line)()
    copy.CopyFrom(line)
    event = copy.events[len(copy.events) // 2]
    stat = event.stats.add(metadata_id=1)
    stat.str_value = "\u00e9"
    data = copy.SerializeToString()
    return data.replace("\u00e9".encode(), b"\xc3\x28", 1)  # a broken two-byte sequence, same length


def test_a_stat_that_is_not_utf8_is_refused_in_one_line(tmp_path: Path) -> None:
    path = _rewritten(TF_EAGER, tmp_path, _not_utf8_stat)
    with pytest.raises(FormatError, match="truncated or corrupt") as err:
        xplane.read(path)
    assert "\n" not in str(err.value)


def _event_cut_short(line) -> bytes:  # noqa: ANN001
    """The line with its last event record claiming more bytes than the line holds."""
    data = line.SerializeToString()
    events = [_field(4, event.SerializeToString()) for event in line.events]
    body = b"".join(events[:-1]) + _varint(4 << 3 | 2) + _varint(200) + events[-1][2:]
    head = type(line)(id=line.id, name=line.name, timestamp_ns=line.timestamp_ns).SerializeToString()
    assert len(data) > len(head)
    return head + body


def test_an_event_record_overrunning_its_line_is_refused(tmp_path: Path) -> None:
    path = _rewritten(TF_EAGER, tmp_path, _event_cut_short)
    with pytest.raises(FormatError, match="truncated or corrupt"):
        xplane.read(path)


@pytest.mark.parametrize("data, expected_ranges, expected_run", [
    (b"", [], (0, 0, 0)),
    (_field(4, b"ab") + _field(4, b"c"), [(0, 2, 4), (4, 6, 7)], (2, 0, 7)),
    (b"\x08\x01" + _field(4, b"ab") + b"\x10\x02", [(2, 4, 6)], (1, 2, 6)),  # header and trailer fields
    (_field(4, b"a") + b"\x08\x01" + _field(4, b"b"), [(0, 2, 3), (5, 7, 8)], None),  # a run split by a field
    (b"\x20\x01", None, None),  # field 4 as a varint: not these records
    (_field(4, b"abc")[:-1], None, None),  # a record overrunning the message
    (b"\x08\x80", None, None),  # a varint cut short
    (b"\x0b\x0c", None, None),  # a group
])
def test_fields_are_cut_without_decoding(data: bytes, expected_ranges: list | None, expected_run: tuple | None) -> None:
    wire = xplane_events._xplane_wire
    assert wire.field_ranges(data, 0, len(data), 4) == expected_ranges
    assert wire.field_run(data, 0, len(data), 4) == expected_run
    with pytest.raises(ValueError):
        wire.field_run(data, 0, len(data) + 1, 4)

