"""An XLine's events decoded from protobuf wire bytes into columns, without one Python object per event.

The protobuf runtime makes every attribute read of every event a Python object (0.3 µs each: 16 s
for the 5.9 M events of a 100 MB TensorFlow trace). Planes, lines and metadata are few and stay
with the runtime; a line's events are decoded here from the line's wire bytes — a range of the
file's bytes (readers/xplane_space.py) to the compiled decoder, or, where the runtime parsed the
line, its bytes serialized again — into columns. Without the compiled decoder, with array
operations:

1. the line is re-serialized (the runtime writes fields in field-number order, so the events,
   field 4, sit between the header fields 1–3 and the trailer fields 9–11); the header and trailer
   lengths are measured by serializing them alone, and the cut is checked;
2. the events are a chain of ``0x22 <length> <XEvent>`` records: candidate starts are the 0x22
   bytes, each one's successor is computed at once, and the chain is followed from the first;
3. XEvent fields (metadata_id, offset_ps / num_occurrences, duration_ps, stats) and then XStat
   fields are read in passes, one field of every event per pass, varints decoded byte by byte
   over the events still reading one.

Anything unexpected (a field number above 15, a malformed varint, a record overrunning its
message) returns None and the caller reads that line through the runtime instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from traceview.arrays import unique_inverse

try:  # built by setup.py; optional (the array decoding below gives the same columns)
    from traceview.readers import _xplane_wire
except ImportError:  # pragma: no cover - exercised where no C compiler was available
    _xplane_wire = None

_EVENTS_TAG = 0x22  # XLine field 4 (events), wire type 2
_MAX_VARINT = 10


# An event's timing status (the order in which the reader counts drops). _xplane_wire.c applies
# the same rule per event; tests/test_xplane_wire.py checks the two agree at every bound.
TIMED, OUT_OF_RANGE, NEGATIVE, INSTANT = 0, 1, 2, 3
_AGGREGATED = 4  # the compiled decoder's flag bit for an event carrying num_occurrences
# Bounds that keep line time + offset + duration inside int64 ns (2**61 ns ≈ 73 years each).
MAX_PS = 2**61
MAX_LINE_NS = 2**61


def event_times(line_ns: int, offs: np.ndarray, durs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start and end of a line's events in ns, and each one's timing status (int8).

    Offsets, durations and line times that would overflow int64 ns once added up are not times:
    such events are marked out of range (dropped and counted by the reader) and the arithmetic
    never wraps. Start and end are rounded separately (half up) so that nesting survives ps -> ns."""
    out_of_range = (offs < 0) | (offs > MAX_PS) | (durs > MAX_PS)
    if abs(line_ns) > MAX_LINE_NS:
        out_of_range[:] = True
    status = np.full(len(offs), TIMED, dtype=np.int8)
    status[durs == 0] = INSTANT
    status[durs < 0] = NEGATIVE
    if out_of_range.any():
        status[out_of_range] = OUT_OF_RANGE
        offs, durs = np.where(out_of_range, 0, offs), np.where(out_of_range, 0, durs)
        line_ns = line_ns if abs(line_ns) <= MAX_LINE_NS else 0
    ts = (offs + 500) // 1000
    ts += line_ns
    end = (offs + durs + 500) // 1000
    end += line_ns
    return ts, end, status


class _Malformed(Exception):
    """The bytes are not what the fast decoding expects."""


@dataclass
class LineEvents:
    """One line's events as columns, and its stats as one row per (event, stat) record."""

    metadata_id: np.ndarray  # int64
    ts: np.ndarray  # int64 ns on the line's clock (event_times)
    end: np.ndarray  # int64 ns
    status: np.ndarray  # int8 timing status (event_times)
    aggregated: np.ndarray  # bool: the event carries num_occurrences instead of offset_ps (which reads 0)
    stat_event: np.ndarray  # int64 event position of each stat record
    stat_id: np.ndarray  # int64 stat metadata id
    stat_field: np.ndarray  # int64 value field number: 0 none, 2 double, 3 uint64, 4 int64, 5 str, 6 bytes, 7 ref
    stat_number: np.ndarray  # uint64 raw value (varints; the bits of a double)
    stat_start: np.ndarray  # int64 byte range of a str / bytes value
    stat_end: np.ndarray
    buf: np.ndarray  # the line's bytes (uint8), for string values

    def stat_values(self, records: np.ndarray, stat_names: dict[int, str]) -> np.ndarray:
        """Values of the chosen stat records (an object array), as the protobuf runtime would give
        them: ref values resolved to their stat-metadata name, looked up once per distinct ref.
        A str value that is not UTF-8 raises UnicodeDecodeError (the runtime refuses it too)."""
        field = self.stat_field[records]
        number = self.stat_number[records]
        values = np.full(len(records), None, dtype=object)
        for code, convert in ((3, lambda v: v.tolist()), (4, lambda v: v.view(np.int64).tolist()),
                              (2, lambda v: v.view(np.float64).tolist())):
            at = np.flatnonzero(field == code)
            if len(at):
                values[at] = convert(number[at])
        at = np.flatnonzero(field == 7)
        if len(at):
            refs, inverse = unique_inverse(number[at])
            names = np.empty(len(refs), dtype=object)
            names[:] = [stat_names.get(ref, "") for ref in refs.tolist()]
            values[at] = names[inverse]
        starts, ends = self.stat_start[records], self.stat_end[records]
        raw = self.buf
        for i in np.flatnonzero((field == 5) | (field == 6)).tolist():
            data = raw[starts[i]:ends[i]].tobytes()
            values[i] = data.decode("utf-8") if field[i] == 5 else data
        return values


def decode_line(line: Any, line_class: Any) -> LineEvents | None:
    """The events of ``line`` (an XLine message) as columns; None when the fast decoding declines."""
    data = line.SerializeToString()
    header = line_class(id=line.id, name=line.name, timestamp_ns=line.timestamp_ns).SerializeToString()
    trailer = line_class(duration_ps=line.duration_ps, display_id=line.display_id,
                         display_name=line.display_name).SerializeToString()
    if not data.startswith(header) or not data.endswith(trailer):
        return None
    line_ns = int(line.timestamp_ns)
    if _xplane_wire is not None:
        return decode_compiled(data, len(header), len(data) - len(trailer), len(line.events), line_ns)
    buf = np.frombuffer(data + bytes(_MAX_VARINT), dtype=np.uint8)  # padding: see _varints
    try:
        return _decode(buf, len(header), len(data) - len(trailer), len(line.events), line_ns)
    except _Malformed:
        return None


def decode_compiled(data: bytes, begin: int, end: int, expected: int, line_ns: int) -> LineEvents | None:
    """The same columns from the compiled decoder (readers/_xplane_wire.c), in one pass."""
    metadata, start, stop = (np.empty(expected, dtype=np.int64) for _ in range(3))
    flags = np.empty(expected, dtype=np.int8)
    capacity = 2 * expected + 16  # stats per event: a handful; a line with more asks again
    while True:
        stats = np.empty((6, capacity), dtype=np.int64)
        got = _xplane_wire.decode(data, begin, end, expected, line_ns, metadata, start, stop, flags, stats)
        if got == -1:
            return None
        if got >= 0:
            break
        capacity = -got - 2
    stats = stats[:, :got]
    return LineEvents(metadata, start, stop, flags & ~np.int8(_AGGREGATED), (flags & _AGGREGATED) != 0, stats[0],
                      stats[1], stats[2], stats[3].view(np.uint64), stats[4], stats[5],
                      np.frombuffer(data, dtype=np.uint8))


def _decode(buf: np.ndarray, begin: int, end: int, expected: int, line_ns: int) -> LineEvents:
    body_start, body_end = _records(buf, begin, end, expected)
    n = len(body_start)
    metadata_id = np.zeros(n, dtype=np.int64)
    offset_ps = np.zeros(n, dtype=np.int64)
    duration_ps = np.zeros(n, dtype=np.int64)
    aggregated = np.zeros(n, dtype=bool)
    stat_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for rows, field, number, start, stop in _fields(buf, body_start, body_end):
        signed = number.view(np.int64)
        for code, target in ((1, metadata_id), (2, offset_ps), (3, duration_ps)):
            hit = field == code
            target[rows[hit]] = signed[hit]
        hit = field == 2
        aggregated[rows[hit]] = False
        hit = field == 5  # num_occurrences: the oneof's other member; offset_ps reads 0
        aggregated[rows[hit]] = True
        offset_ps[rows[hit]] = 0
        hit = field == 4
        if hit.any():
            stat_parts.append((rows[hit], start[hit], stop[hit]))
    stats = _stats(buf, stat_parts)
    return LineEvents(metadata_id, *event_times(line_ns, offset_ps, duration_ps), aggregated, *stats, buf)


def _records(buf: np.ndarray, begin: int, end: int, expected: int) -> tuple[np.ndarray, np.ndarray]:
    """Body ranges of the ``0x22 <length> <body>`` records that fill ``buf[begin:end]``."""
    if expected == 0:
        if begin != end:
            raise _Malformed
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    candidates = begin + np.flatnonzero(buf[begin:end] == _EVENTS_TAG)
    if not len(candidates):
        raise _Malformed
    length, width = _varints(buf, candidates + 1, end)
    ok = width > 0
    body = candidates + 1 + width
    successor_pos = body + length.astype(np.int64)
    successor = np.searchsorted(candidates, successor_pos)
    clipped = np.minimum(successor, len(candidates) - 1)
    at_candidate = ok & (successor < len(candidates)) & (candidates[clipped] == successor_pos)
    # -1: the record ends the events; -2: not a record start, the chain must not pass here.
    successor = np.where(at_candidate, successor, np.where(ok & (successor_pos == end), -1, -2))
    chain = _follow(successor.tolist(), expected)
    if len(chain) != expected or candidates[chain[0]] != begin:
        raise _Malformed
    index = np.array(chain, dtype=np.int64)
    return body[index], successor_pos[index]


def _follow(successor: list[int], limit: int) -> list[int]:
    """Positions on the chain from candidate 0 to the end (-1); a broken link (-2) is malformed."""
    chain: list[int] = []
    append = chain.append
    k = 0
    for _ in range(limit):
        append(k)
        k = successor[k]
        if k < 0:
            break
    if k != -1:
        raise _Malformed
    return chain


_CHUNK = 1 << 20  # varints decoded per array pass (bounds the temporary arrays)


def _varints(buf: np.ndarray, pos: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray]:
    """The varint at each position: (value as uint64, bytes it takes; 0 when malformed or past ``end``).

    ``buf`` carries :data:`_MAX_VARINT` bytes of padding past its content. Lengths and ids are
    mostly one byte: those finish in the first pass and the rest go on byte by byte; times in ps
    take five to seven bytes: those are read as windows of bytes, as wide as the longest one."""
    first = buf[pos]
    if np.count_nonzero(first >= 0x80) * 2 < len(pos):
        return _varints_bytewise(buf, pos, end, first)
    value = np.zeros(len(pos), dtype=np.uint64)
    width = np.zeros(len(pos), dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(buf, _MAX_VARINT)
    for lo in range(0, len(pos), _CHUNK):
        at = pos[lo:lo + _CHUNK]
        window = windows[at]
        more = window >= 0x80
        last = np.argmin(more, axis=1)  # the first byte without a continuation bit
        span = int(last.max()) + 1
        ok = ~more[np.arange(len(at)), last] & (at + last + 1 <= end)
        payload = (window[:, :span] & 0x7F).astype(np.uint64)
        payload <<= (7 * np.arange(span, dtype=np.uint64))
        payload[np.arange(span) > last[:, None]] = 0
        value[lo:lo + _CHUNK] = np.bitwise_or.reduce(payload, axis=1)
        width[lo:lo + _CHUNK] = np.where(ok, last + 1, 0)
    return value, width


def _varints_bytewise(buf: np.ndarray, pos: np.ndarray, end: int, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    value = (first & 0x7F).astype(np.uint64)
    width = (first < 0x80).astype(np.int64)
    active = np.flatnonzero(first >= 0x80)
    for k in range(1, _MAX_VARINT):
        if not len(active):
            break
        byte = buf[pos[active] + k]
        value[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        done = byte < 0x80
        width[active[done]] = k + 1
        active = active[~done]
    width[pos + width > end] = 0
    return value, width


def _fields(buf: np.ndarray, start: np.ndarray, stop: np.ndarray):  # noqa: ANN202 - a generator of tuples
    """Per pass, one field of every message still reading: (message rows, field number, varint or
    fixed value, payload start, payload end) — payload for length-delimited fields."""
    pos = start.copy()
    rows = np.flatnonzero(pos < stop)
    while len(rows):
        at = pos[rows]
        tag = buf[at].astype(np.int64)
        if (tag & 0x80).any():
            raise _Malformed  # a field number above 15: not one of these messages
        field, wire = tag >> 3, tag & 7
        number = np.zeros(len(rows), dtype=np.uint64)
        payload_start = at + 1
        payload_end = at + 1
        limit = int(stop[rows].max())
        varint = wire == 0
        if varint.any():
            value, width = _varints(buf, at[varint] + 1, limit)
            if (width == 0).any():
                raise _Malformed
            number[varint] = value
            payload_end[varint] = at[varint] + 1 + width
        delimited = wire == 2
        if delimited.any():
            length, width = _varints(buf, at[delimited] + 1, limit)
            if (width == 0).any():
                raise _Malformed
            payload_start[delimited] = at[delimited] + 1 + width
            payload_end[delimited] = payload_start[delimited] + length.astype(np.int64)
        for wire_type, size in ((1, 8), (5, 4)):
            fixed = wire == wire_type
            if fixed.any():
                payload_start[fixed] = at[fixed] + 1
                payload_end[fixed] = at[fixed] + 1 + size
                if wire_type == 1:
                    number[fixed] = _fixed64(buf, at[fixed] + 1, limit)
        if ((wire != 0) & (wire != 1) & (wire != 2) & (wire != 5)).any():
            raise _Malformed
        if (payload_end > stop[rows]).any():
            raise _Malformed
        yield rows, field, number, payload_start, payload_end
        pos[rows] = payload_end
        rows = rows[pos[rows] < stop[rows]]


def _fixed64(buf: np.ndarray, pos: np.ndarray, end: int) -> np.ndarray:
    if (pos + 8 > end).any():
        raise _Malformed
    gathered = buf[pos[:, None] + np.arange(8)]
    return np.ascontiguousarray(gathered).view("<u8").reshape(-1).astype(np.uint64)


def _stats(buf: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """XStat records, in the order they appear within each event (a later one of a name wins)."""
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0, dtype=np.uint64), empty, empty
    event = np.concatenate([p[0] for p in parts])
    start = np.concatenate([p[1] for p in parts])
    stop = np.concatenate([p[2] for p in parts])
    order = np.lexsort((start, event))
    event, start, stop = event[order], start[order], stop[order]
    n = len(event)
    stat_id = np.zeros(n, dtype=np.int64)
    value_field = np.zeros(n, dtype=np.int64)
    number = np.zeros(n, dtype=np.uint64)
    value_start = np.zeros(n, dtype=np.int64)
    value_end = np.zeros(n, dtype=np.int64)
    for rows, field, raw, payload_start, payload_end in _fields(buf, start, stop):
        hit = field == 1
        stat_id[rows[hit]] = raw[hit].view(np.int64)
        value = (field >= 2) & (field <= 7)  # the oneof: the last member seen is the value
        rows_v = rows[value]
        value_field[rows_v] = field[value]
        number[rows_v] = raw[value]
        value_start[rows_v] = payload_start[value]
        value_end[rows_v] = payload_end[value]
    return event, stat_id, value_field, number, value_start, value_end
