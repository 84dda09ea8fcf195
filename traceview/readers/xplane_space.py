"""An XSpace's planes and lines, with each line's events left in the file's bytes until decoded.

Parsing a whole XSpace with the protobuf runtime builds a message per event and per stat: on a
105 MB TensorFlow trace that is 0.5 s and 470 MB before any work, and the events are then
serialized again to be decoded as columns (``xplane_events``). Here the runtime parses only the
skeleton — every field except the planes' lines and the lines' events — and each line's events
stay a byte range of the file, decoded straight into columns by the compiled decoder.

The skeleton is cut with ``_xplane_wire.field_ranges`` / ``field_run``, which walk the fields of
one message without decoding them. Wherever that is not possible — the extension is not built,
the bytes are not well-formed fields, or a line's events are split by other fields — the
message is parsed by the runtime as before, so a malformed file gets the runtime's error and a
well-formed one the same timeline either way (``tests/test_xplane_space.py``). One difference
remains by design: a str stat the reader does not read is not checked for UTF-8, where the whole
parse refused the file for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceview.errors import FormatError
from traceview.readers import xplane_events
from traceview.readers.xplane_events import LineEvents, decode_compiled, decode_line
from traceview.readers.xplane_runs import XPLANE_SUFFIX

# Format detection (readers/__init__.py detect, and the command line's read-ahead: see
# readers/_prefetch.py), on the first bytes alone.
_XSPACE_FIELDS = {1: 2, 2: 2, 3: 2, 4: 2}  # field number -> wire type (all length-delimited)
_XPLANE_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2}


def sniff(head: bytes) -> bool:
    """True when the first bytes are a serialized XSpace whose first field is a plane.

    The TF/JAX/XLA profilers write the planes first (field 1, tag 0x0a). The walk checks every
    field tag and length that fits in ``head``: XSpace fields 1–4 (all length-delimited), the
    first plane's fields 1–6 with their wire types, map entries starting with their key, and
    strings that decode as UTF-8. JSON, text and gzip fail at the first or second tag.
    """
    if len(head) < 2 or head[0] != 0x0A:
        return False
    pos = 0
    first = True
    while pos < len(head):
        tag = _varint(head, pos)
        if tag is None:
            return not first
        value, pos = tag
        field_no, wire = value >> 3, value & 7
        if _XSPACE_FIELDS.get(field_no) != wire:
            return False
        length = _varint(head, pos)
        if length is None:
            return not first
        size, pos = length
        body = head[pos : pos + size]
        if field_no == 1:
            if not _plausible_plane(body, complete=len(body) == size):
                return False
        elif not _utf8_prefix(body):
            return False
        first = False
        pos += size
    return not first


def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    """Decode a varint at ``pos``; None when it runs past the buffer or is longer than 10 bytes."""
    result = 0
    shift = 0
    for i in range(10):
        if pos + i >= len(buf):
            return None
        byte = buf[pos + i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos + i + 1
        shift += 7
    return None


def _plausible_plane(body: bytes, complete: bool) -> bool:
    pos = 0
    seen = False
    while pos < len(body):
        tag = _varint(body, pos)
        if tag is None:
            return seen or not complete
        value, pos = tag
        field_no, wire = value >> 3, value & 7
        if _XPLANE_FIELDS.get(field_no) != wire:
            return False
        if wire == 0:
            number = _varint(body, pos)
            if number is None:
                return not complete
            pos = number[1]
        else:
            length = _varint(body, pos)
            if length is None:
                return not complete
            size, pos = length
            if pos + size > len(body) and complete:
                return False
            content = body[pos : pos + size]
            if field_no in (4, 5) and content[:1] not in (b"\x08", b""):
                return False  # map entries are written key first
            if field_no == 2 and not _utf8_prefix(content):
                return False
            pos += size
        seen = True
    return seen or complete


def _utf8_prefix(data: bytes) -> bool:
    """Whether ``data`` is UTF-8, allowing a character cut at the end of the sniffed head."""
    for cut in range(4):
        try:
            data[: len(data) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


# Field numbers in xplane.proto.
_SPACE_PLANES = 1
_PLANE_LINES = 3
_LINE_EVENTS = 4


@dataclass
class LineSource:
    """One XLine: its fields other than the events, and where its events are."""

    header: Any  # XLine message; its events are empty when they are still bytes of the file
    count: int  # events in the line
    data: bytes | None = None  # the file's bytes, when the events are a range of them
    begin: int = 0
    end: int = 0
    ahead: tuple[LineEvents | None] | None = None  # decoded ahead (decode_ahead), till decode() takes it

    def decode_ahead(self, line_class: Any) -> None:
        """Decode the events now, for :meth:`decode` to hand over (the command line's read-ahead
        thread, readers/_prefetch.py, while the analyses are imported)."""
        self.ahead = (self.decode(line_class),)

    def decode(self, line_class: Any) -> LineEvents | None:
        """The events as columns; None when the fast decodings decline (then :meth:`runtime_events`)."""
        if self.ahead is not None:
            (decoded,), self.ahead = self.ahead, None
            return decoded
        if self.data is None:
            return decode_line(self.header, line_class)
        return decode_compiled(self.data, self.begin, self.end, self.count, int(self.header.timestamp_ns))

    def runtime_events(self, path: Path, line_class: Any) -> Any:
        """The events as protobuf messages (parsed now when they were left as bytes)."""
        if self.data is None:
            return self.header.events
        line = _parse(path, line_class, self.data[self.begin:self.end], "a line's events")
        if len(line.events) != self.count:  # the decoder and the runtime read different records
            raise FormatError(f"{path}: XPlane line events could not be read consistently; re-capture the profile")
        return line.events


@dataclass
class PlaneSource:
    plane: Any  # XPlane message, without its lines
    lines: list[LineSource]


@dataclass
class SpaceSource:
    space: Any  # XSpace message, without its planes (host names, errors, warnings)
    planes: list[PlaneSource]


def space_of_file(path: Path, raw: bytes) -> SpaceSource:
    """The XSpace in a file's bytes (``raw``), refused with one line where they are empty or not
    an XSpace. The source holds the bytes while the lines are decoded, and no longer."""
    if not raw:
        raise FormatError(f"{path}: file is empty; re-capture the profile (tf.profiler / jax.profiler)")
    if not sniff(raw[:4096]):
        raise FormatError(
            f"{path}: not an XSpace protobuf (first bytes {raw[:8].hex(' ')}); expected a TensorFlow/JAX "
            f"profiler {XPLANE_SUFFIX} file"
        )
    from traceview.readers.proto.xplane_descriptor import message_classes

    return read_space(path, raw, message_classes())


def read_space(path: Path, raw: bytes, classes: dict[str, Any]) -> SpaceSource:
    """The XSpace in ``raw``: its skeleton parsed, its events left as bytes where possible."""
    wire = xplane_events._xplane_wire  # looked up now: absent where the extension is not built
    if wire is not None:
        planes = wire.field_ranges(raw, 0, len(raw), _SPACE_PLANES)
        if planes is not None:
            space = _parse(path, classes["XSpace"], _without(raw, 0, len(raw), planes), "the space")
            return SpaceSource(space, [_plane(wire, path, raw, begin, end, classes) for _, begin, end in planes])
    space = _parse(path, classes["XSpace"], raw, "the file")
    return SpaceSource(space, [PlaneSource(plane, [LineSource(line, len(line.events)) for line in plane.lines])
                               for plane in space.planes])


def _plane(wire: Any, path: Path, raw: bytes, begin: int, end: int, classes: dict[str, Any]) -> PlaneSource:
    lines = wire.field_ranges(raw, begin, end, _PLANE_LINES)
    if lines is None:
        plane = _parse(path, classes["XPlane"], raw[begin:end], "a plane")
        return PlaneSource(plane, [LineSource(line, len(line.events)) for line in plane.lines])
    plane = _parse(path, classes["XPlane"], _without(raw, begin, end, lines), "a plane")
    return PlaneSource(plane, [_line(wire, path, raw, line_begin, line_end, classes["XLine"])
                               for _, line_begin, line_end in lines])


def _line(wire: Any, path: Path, raw: bytes, begin: int, end: int, line_class: Any) -> LineSource:
    run = wire.field_run(raw, begin, end, _LINE_EVENTS)
    if run is None:
        line = _parse(path, line_class, raw[begin:end], "a line")
        return LineSource(line, len(line.events))
    count, run_begin, run_end = run
    header = _parse(path, line_class, raw[begin:run_begin] + raw[run_end:end], "a line")
    return LineSource(header, count, raw, run_begin, run_end)


def _without(raw: bytes, begin: int, end: int, records: list[tuple[int, int, int]]) -> bytes:
    """The bytes of [begin, end) with the given records cut out (the message's other fields)."""
    parts = []
    at = begin
    for record_begin, _, record_end in records:
        parts.append(raw[at:record_begin])
        at = record_end
    parts.append(raw[at:end])
    return b"".join(parts)


def _parse(path: Path, message_class: Any, data: bytes, what: str) -> Any:
    from google.protobuf.message import DecodeError

    message = message_class()
    try:
        message.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise FormatError(
            f"{path}: XPlane protobuf is truncated or corrupt ({detail}, in {what} of {len(data)} bytes); "
            f"re-copy the file or re-capture the profile"
        ) from None
    return message
