"""Decode the event array of a large JSON trace block by block, without one Python dict per event.

A Chrome/Kineto trace is one JSON object (or array) whose ``traceEvents`` array holds nearly every
byte. This module reads the file in blocks (gunzipping as it goes), cuts the array at event
boundaries and hands each run of whole events to a typed ``msgspec`` decoder, which skips every
field the schema does not ask for at C speed. Only a block of raw text and its decoded events
live at a time; the caller turns each batch into columns.

Cutting is safe without a tokenizer: a cut is tried after a ``}`` followed by ``,``, and the
piece is accepted only when ``[`` + piece + ``]`` decodes as a list of events. A piece that starts
at an element boundary and decodes as a complete array necessarily ends at an element boundary (a
cut inside a string or a nested value leaves a bracket or a quote open), so an accepted cut is a
true one. Anything the fast decoding cannot take (a type the schema does not allow, a number out
of range, a document that is not a plain ``{…"traceEvents": […]…}``) raises :class:`Declined` and
the caller decodes the whole document the plain way, which names each problem.
"""

from __future__ import annotations

import codecs
import gzip
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import orjson

from traceview.errors import InputError
from traceview.readers._io import GZIP_MAGIC, UTF8_BOM, InflatedText, gzip_reader, max_bytes, user_errors

# Raw text decoded per batch. Large enough that the per-batch overhead vanishes, small enough
# that a batch's decoded events (a few hundred bytes each) stay far below the trace's columns.
BLOCK_BYTES = 32 * 2**20
_MAX_CUT_TRIES = 16  # candidate cuts tried per batch before giving up on the fast decoding
_ARRAY_OPEN = re.compile(rb'"traceEvents"\s*:\s*\[')
# A UTF-8 byte-order mark, which editors and Windows tools put at the start of a JSON file they
# save; JSON parsers reject it (RFC 8259 §8.1 lets them ignore it), so it is skipped here.
_LEADING_SPACE = re.compile(rb"(?:\xef\xbb\xbf)?\s*")  # a byte-order mark, then what bytes.lstrip() takes away
_ELEMENT_END = re.compile(rb"\}\s*,")
_HEAD_LIMIT = 64 * 2**20  # the array must open within this many bytes (top-level keys come first)


class Declined(Exception):
    """The document is not one the fast decoding handles; decode it the plain way instead."""


@contextmanager
def open_stream(path: Path) -> Iterator[BinaryIO]:
    """The file's content as a binary stream, gunzipped when it starts with the gzip magic number."""
    with user_errors(path), path.open("rb") as handle:
        if handle.read(2) != GZIP_MAGIC:
            handle.seek(0)
            yield handle
            return
        handle.seek(0)
        with gzip_reader(handle) as inflating:
            yield inflating  # type: ignore[misc]


class Utf8Check:
    """Whether text fed in pieces is UTF-8, and where it first is not (:attr:`bad_at`, a byte
    offset from the first piece). ASCII pieces (nearly every trace) are passed over at memory
    speed; nothing of the text is kept."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._pending = False  # a multi-byte sequence split at the end of the last piece
        self._fed = 0
        self.bad_at: int | None = None

    def feed(self, piece: bytes, final: bool = False) -> bool:
        """Check the next piece (``final``: the text ends with it); False once the text is not UTF-8."""
        if self.bad_at is not None:
            return False
        start, self._fed = self._fed, self._fed + len(piece)
        if not final and not self._pending and piece.isascii():
            return True
        try:
            self._decoder.decode(piece, final)
        except UnicodeDecodeError as err:
            # err.start counts from the bytes the decoder held back from the previous piece.
            self.bad_at = start - len(self._decoder.getstate()[0]) + err.start
            return False
        self._pending = bool(self._decoder.getstate()[0])
        return True


NOT_UTF8 = "text that is not UTF-8: the plain decoding names where"


class EventArrayReader:
    """Iterate batches of decoded events of ``path``'s ``traceEvents`` array.

    After the iteration, :attr:`top` holds the document's other top-level keys and
    :attr:`events_seen` the number of array elements.
    """

    def __init__(self, path: Path, decoder: msgspec.json.Decoder[Any]) -> None:
        self.path = path
        self.decoder = decoder
        self.top: dict[str, Any] = {}
        self.events_seen = 0
        self._inflated = 0
        self._limit = max_bytes()

    def read_block(self, stream: BinaryIO) -> bytes:
        with user_errors(self.path):
            block = stream.read(BLOCK_BYTES)
        self._count(stream, len(block))
        return block

    def read_into(self, stream: BinaryIO, buffer: memoryview) -> int:
        """Fill ``buffer`` from the stream as far as one read goes; the number of bytes read (0 at the end)."""
        with user_errors(self.path):
            got = stream.readinto(buffer)
        self._count(stream, got)
        return got

    def _count(self, stream: BinaryIO, size: int) -> None:
        """Count inflated bytes against the limit (a small gzip file may inflate without bound)."""
        self._inflated += size
        if self._inflated > self._limit and isinstance(stream, (gzip.GzipFile, InflatedText)):
            raise InputError(
                f"{self.path}: decompresses to more than {self._limit:,} bytes (the limit); if the trace is "
                f"really that large, raise it with --max-bytes or TRACEVIEW_MAX_BYTES")

    def batches(self) -> Iterator[list[Any]]:
        with open_stream(self.path) as stream:
            rest, wrapped = self.open_array(stream)
            # msgspec skips the fields the structs do not name without looking at their text:
            # the whole array is checked to be UTF-8 here, as every other decoding requires.
            utf8 = Utf8Check()

            def read_checked() -> bytes:
                block = self.read_block(stream)
                if not utf8.feed(block, final=not block):
                    raise Declined(NOT_UTF8)
                return block

            if not utf8.feed(rest):
                raise Declined(NOT_UTF8)
            # The text still to decode, behind a "[" of our own: a run of whole elements is decoded in
            # place by writing "]" after it for the moment of the call (no copy of the block).
            buf = bytearray(b"[") + rest
            eof = False
            while True:
                while not eof and len(buf) < BLOCK_BYTES:
                    block = read_checked()
                    eof = not block
                    buf += block
                if eof:
                    yield from self._last_batch(bytes(buf[1:]), wrapped)
                    return
                cut = self._cut(buf)
                if cut is None:  # no whole element in a block: a giant event; read on
                    block = read_checked()
                    eof = not block
                    buf += block
                    continue
                events, rest_at = cut
                self.events_seen += len(events)
                yield events
                buf = bytearray(b"[") + buf[rest_at:]

    def open_array(self, stream: BinaryIO) -> tuple[bytes, bool]:
        """Skip to just after the array's ``[``; returns the remaining text and whether the
        document is an object around the array (True) or the bare array (False)."""
        text = bytearray()
        filled, start, wrapped = self.read_to_array(stream, text)
        return bytes(text[start:filled]), wrapped

    def read_to_array(self, stream: BinaryIO, text: bytearray) -> tuple[int, int, bool]:
        """Read the stream into ``text`` (from its start, a block at a time, the bytearray
        grown as needed) until the array's ``[`` is in it: how many bytes were read, where the
        array's elements begin, and whether the document is an object around the array."""
        filled = 0
        while True:
            if len(text) - filled < BLOCK_BYTES:
                text.extend(bytes(filled + BLOCK_BYTES - len(text)))
            with memoryview(text) as view:
                got = self.read_into(stream, view[filled: filled + BLOCK_BYTES])
            filled += got
            found = self.array_start(text, filled)
            if found is not None:
                return filled, *found
            if not got or filled > _HEAD_LIMIT:
                raise Declined("no traceEvents array near the start")

    def whole_text(self, stream: InflatedText) -> tuple[bytes, int, bool]:
        """An inflated text taken whole (counted against the limit as if read): the text, where
        the array's elements begin, and whether the document is an object around the array."""
        self._count(stream, len(stream.text))
        # The same window open_array reads before it gives up: whole blocks until past the limit.
        window = BLOCK_BYTES * (_HEAD_LIMIT // BLOCK_BYTES + 1)
        found = self.array_start(stream.text, window)
        if found is None:
            raise Declined("no traceEvents array near the start")
        return stream.text, *found

    def array_start(self, text: bytes, window: int | None = None) -> tuple[int, bool] | None:
        """Where the ``traceEvents`` array's elements begin in ``text`` (just after its ``[``, in
        the first ``window`` bytes) and whether the document is an object around it (its other
        top-level keys so far go to :attr:`top`); None when the text does not reach it."""
        lead = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]
        if text[lead:lead + 1] == b"[":
            return lead + 1, False
        match = _ARRAY_OPEN.search(text, 0, len(text) if window is None else window)
        if match is None:
            return None
        try:
            head = orjson.loads(text[len(UTF8_BOM) if text.startswith(UTF8_BOM) else 0: match.end()] + b"]}")
        except orjson.JSONDecodeError:
            raise Declined("the traceEvents key is not a top-level key") from None
        if not isinstance(head, dict) or head.get("traceEvents") != []:
            raise Declined("the traceEvents key is not a top-level key")
        del head["traceEvents"]
        self.top.update(head)
        return match.end(), True

    def _decode(self, piece: bytes) -> list[Any] | None:
        """Events of a run of whole array elements; None when the text is not such a run."""
        return self._decode_text(b"[" + piece + b"]")

    def _decode_text(self, text: bytes | memoryview) -> list[Any] | None:
        """Events of ``[`` + whole elements + ``]``; None when the text is not that."""
        try:
            return self.decoder.decode(text)
        except msgspec.ValidationError as err:
            # Well-formed JSON of another shape (a string where a number belongs …).
            raise Declined(str(err)) from None
        except UnicodeDecodeError:
            raise Declined(NOT_UTF8) from None
        except RecursionError:
            raise Declined("values nested too deeply for the decoder") from None
        except msgspec.DecodeError:
            return None

    def _decode_in_place(self, buf: bytearray, close_at: int) -> list[Any] | None:
        """:meth:`_decode` of ``buf[1:close_at]`` (``buf[0]`` is "["), with "]" written at ``close_at``
        while the decoder reads and the byte put back after."""
        kept = buf[close_at]
        buf[close_at] = ord("]")
        try:
            with memoryview(buf) as view:
                return self._decode_text(view[: close_at + 1])
        finally:
            buf[close_at] = kept

    def _cut(self, buf: bytearray) -> tuple[list[Any], int] | None:
        """Decode the longest run of whole elements at the start of ``buf`` (after its "["):
        (events, where the rest begins)."""
        window = 1 << 16
        tried = 0
        limit = len(buf)
        while tried < _MAX_CUT_TRIES:
            start = max(1, limit - window)
            matches = list(_ELEMENT_END.finditer(buf, start, limit))
            if not matches:
                if start == 1:
                    return None
                window *= 4
                continue
            for match in reversed(matches):
                # The byte after the "}" is white space or the comma: room for the "]".
                events = self._decode_in_place(buf, match.start() + 1)
                if events is not None:
                    return events, match.end()
                tried += 1
                if tried >= _MAX_CUT_TRIES:
                    break
            limit = matches[0].start()
        raise Declined("no element boundary found")

    def _last_batch(self, buf: bytes, wrapped: bool) -> Iterator[list[Any]]:
        """The events before the array's closing ``]``, and the top-level keys after it."""
        end = len(buf)
        for _ in range(_MAX_CUT_TRIES):
            close = buf.rfind(b"]", 0, end)
            if close < 0:
                break
            end = close
            tail = self.parse_tail(buf[close + 1:], wrapped)
            if tail is None:
                continue
            piece = buf[:close]
            events = self._decode(piece) if piece.strip() else []
            if events is None:
                continue
            self.top.update(tail)
            self.events_seen += len(events)
            if events:
                yield events
            return
        raise Declined("the traceEvents array does not end where expected")

    @staticmethod
    def parse_tail(text: bytes, wrapped: bool) -> dict[str, Any] | None:
        """Top-level keys after the array (``, "k": v … }``), or None when ``text`` is not such a tail."""
        text = text.strip()
        if not wrapped:
            return {} if not text else None
        if text == b"}":
            return {}
        if text[:1] != b",":
            return None
        try:
            tail = orjson.loads(b"{" + text[1:])
        except orjson.JSONDecodeError:
            return None
        if isinstance(tail, dict) and "traceEvents" in tail:
            # A second traceEvents key: a JSON parser keeps the last one, the plain decoding too.
            raise Declined("a second traceEvents key after the array")
        return tail if isinstance(tail, dict) else None
