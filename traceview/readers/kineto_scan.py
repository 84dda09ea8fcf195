"""Drive the compiled event scanner (``_kineto_scan.c``) over a trace file, block by block.

The file is read in blocks (gunzipped on the way, the inflated size counted against
``--max-bytes``); the scanner writes each element's fields into column buffers and stops where
the text runs out, so the unscanned tail of one block is carried into the next: no cutting and
no retries. Each yielded :class:`ScannedBlock` holds the columns of a run of whole elements, the
distinct raw tokens of the interned fields, and the text the ``args`` offsets point into (valid
until the next block is asked for). readers/kineto_fields.py gives the tokens their meaning.

When the extension is not built (no C compiler at install time), :func:`available` is False
and traces are decoded by the typed msgspec path, which gives the same timelines.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from traceview.readers import _json_stream
from traceview.readers._io import InflatedText
from traceview.readers._json_stream import Declined, EventArrayReader, open_stream

try:  # built by setup.py; optional
    from traceview.readers import _kineto_scan
except ImportError:  # pragma: no cover - exercised where no C compiler was available
    _kineto_scan = None

# Rows of the scanner's int64 and float64 outputs and bits of its flags (mirrors the C enums).
ROW_PH, ROW_CAT, ROW_NAME, ROW_PID, ROW_TID, ROW_INPUT_TYPES = range(6)  # interned tokens' codes
ROW_TS_NS, ROW_ELEMENTS, ROW_ARGS_START, ROW_ARGS_END = range(6, 10)
# Then one row per args key read as an integer, in the C table's order (INTEGER_ARGS).
INTEGER_ARGS = ("device", "stream", "correlation", "bytes",
                "Bytes", "Total Allocated", "Total Reserved", "Device Type", "Device Id")
INTEGER_ARG_ROW = {key: 10 + k for k, key in enumerate(INTEGER_ARGS)}
INT_ROWS = 10 + len(INTEGER_ARGS)
ROW_TS, ROW_DUR = 0, 1
DOUBLE_ROWS = 2
FLAG_TS, FLAG_TS_PLAIN, FLAG_TS_BEYOND, FLAG_ARGS_OTHER = 1, 2, 4, 8
_END, _FULL, _MORE, _DECLINED = range(4)
_AT_ELEMENT, _AT_ARRAY_START, _AT_SEPARATOR = range(3)
# Upper bound on events per byte of text used to size the outputs; a denser text fills them and
# the scan simply goes on with fresh ones (real Kineto events are 150-300 bytes).
_BYTES_PER_EVENT = 96


_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
# Texts shorter than this are scanned in one piece; longer ones in two halves on two threads.
_SPLIT_BYTES = 4 * 2**20
# Where one element ends and the next begins, as trace writers lay them out: "},\n  {".
_ELEMENT_SEAM = re.compile(rb"\}\s*,\s*\{")


def _likely_boundary(text: bytes | bytearray, start: int, end: int) -> int | None:
    """A position just after an element's "}" near the middle of ``text[start:end]``, when the
    text is worth splitting (found by the text's shape; the scan confirms it)."""
    if end - start < _SPLIT_BYTES:
        return None
    seam = _ELEMENT_SEAM.search(text, start + (end - start) // 2, end)
    return seam.start() + 1 if seam else None


class _Outputs:
    """One set of reusable column buffers and the scanner call that fills them."""

    def __init__(self) -> None:
        self.ints = np.empty((INT_ROWS, 0), dtype=np.int64)
        self.doubles = np.empty((DOUBLE_ROWS, 0), dtype=np.float64)
        self.flags = np.empty(0, dtype=np.uint8)

    def scan(self, text: bytes | bytearray, pos: int, end: int, mode: int) -> tuple[int, int, int, int, tuple[list[bytes], ...], str]:
        capacity = max(1024, (end - pos) // _BYTES_PER_EVENT)
        if capacity > len(self.flags):
            self.ints = np.empty((INT_ROWS, capacity), dtype=np.int64)
            self.doubles = np.empty((DOUBLE_ROWS, capacity), dtype=np.float64)
            self.flags = np.empty(capacity, dtype=np.uint8)
        return _kineto_scan.scan(text, pos, end, mode, self.ints, self.doubles, self.flags)

    def block(self, count: int, tokens: tuple[list[bytes], ...], text: bytes | bytearray) -> ScannedBlock:
        return ScannedBlock(count, self.ints[:, :count], self.doubles[:, :count], self.flags[:count], tokens, text)


def available() -> bool:
    """True when the compiled scanner is importable."""
    return _kineto_scan is not None and _kineto_scan.INT_ROWS == INT_ROWS and _kineto_scan.DOUBLE_ROWS == DOUBLE_ROWS


@dataclass
class ScannedBlock:
    """A run of whole array elements as columns: views into the scanner's buffers, which the
    next block overwrites (take copies of what is kept)."""

    count: int
    ints: np.ndarray  # (INT_ROWS, count) int64
    doubles: np.ndarray  # (DOUBLE_ROWS, count) float64
    flags: np.ndarray  # (count,) uint8
    tokens: tuple[list[bytes], ...]  # per interned field: the distinct raw tokens, codes index them
    text: bytes | bytearray  # what the args offsets point into

    def args_array(self, rows: np.ndarray) -> tuple[bytes, np.ndarray]:
        """The args objects of ``rows`` as one JSON array text (gathered with array operations,
        for the typed decoding to read in one call), and which rows have args at all."""
        starts = self.ints[ROW_ARGS_START, rows]
        has = starts >= 0
        starts = starts[has]
        lengths = self.ints[ROW_ARGS_END, rows][has] - starts
        if not len(starts):
            return b"[]", has
        # Each object followed by a separator byte: "[" + a + "," + b + "," … with the last "," → "]".
        spans = lengths + 1
        out_start = np.concatenate(([0], np.cumsum(spans)[:-1]))
        source = np.repeat(starts - out_start, spans) + np.arange(int(spans.sum()))
        text = np.frombuffer(self.text, dtype=np.uint8)
        gathered = text[np.minimum(source, len(text) - 1)]
        gathered[out_start + lengths] = ord(",")
        gathered[-1] = ord("]")
        return b"[" + gathered.tobytes(), has


class EventScanner:
    """Iterate :class:`ScannedBlock` s of ``path``'s ``traceEvents`` array.

    After the iteration, :attr:`top` holds the document's other top-level keys and
    :attr:`events_seen` the number of array elements. Raises :class:`Declined` where the
    scanner does not take the text (the caller decodes the document another way)."""

    def __init__(self, path: Path, stream: BinaryIO | None = None, halves: Callable[[], bool] = lambda: True) -> None:
        if not available():
            raise Declined("the compiled scanner is not built")
        self.path = path
        self._stream = stream  # the file's content already opened (readers/_prefetch.py), else opened here
        # Whether long blocks go in two halves on two threads, asked block by block: only where
        # there is a second core, and while nothing else needs it (readers/_prefetch.py).
        self._halves = (lambda: _CORES > 1 and halves())
        self._reader = EventArrayReader(path, decoder=None)  # type: ignore[arg-type]
        self.top: dict[str, Any] = self._reader.top
        self.events_seen = 0

    def blocks(self) -> Iterator[ScannedBlock]:
        reader = self._reader
        block_bytes = _json_stream.BLOCK_BYTES
        # The outputs are reused from block to block (fresh pages cost as much as the scan): a
        # block's columns are valid until the next block is asked for.
        here, ahead = _Outputs(), _Outputs()
        opened = nullcontext(self._stream) if self._stream is not None else open_stream(self.path)
        with opened as stream, ThreadPoolExecutor(max_workers=1) as helper:
            text: bytes | bytearray
            in_memory = isinstance(stream, InflatedText)
            if in_memory:
                # The whole content is in memory already: it is scanned where it lies, a block's
                # length at a time (no copy of it, and no fresh buffer to fault in).
                text, pos, wrapped = reader.whole_text(stream)
                filled, eof = len(text), True
            else:
                # One buffer for the whole file, read into where it lies: the unscanned end of the
                # text (a partial element) moves to its front and the next block is read in
                # behind it (no block is copied, nor the buffer made anew).
                text = bytearray(2 * block_bytes)
                filled, pos, wrapped = reader.read_to_array(stream, text)
                eof = False
            mode, status, may_split = _AT_ARRAY_START, _MORE, self._halves()
            span = block_bytes  # text in memory: how much one pass scans (the outputs are reused)
            while True:
                # Read on when less than a block is left, or when the last scan needed more text (an
                # element longer than what is left).
                if not eof and (filled - pos < block_bytes or status == _MORE):
                    if len(text) - (filled - pos) < block_bytes:  # one element longer than a block
                        text.extend(bytes(block_bytes))
                    with memoryview(text) as view:
                        view[: filled - pos] = view[pos:filled]  # (a move in place: no copy made)
                        filled -= pos
                        pos = 0
                        got = reader.read_into(stream, view[filled: filled + block_bytes])
                    eof = got == 0
                    filled += got
                    if not eof and filled < block_bytes:
                        status = _FULL  # (not MORE: a short read alone is no reason to read again)
                        continue
                end = min(filled, pos + span) if in_memory else filled
                passed_from = pos
                # Two halves at once: the second from a likely element boundary, on the helper
                # thread; it counts only if the first half, scanned from a known position, ends
                # exactly there (else that boundary was inside a string and the rest is rescanned).
                boundary = _likely_boundary(text, pos, end) if may_split else None
                second = helper.submit(ahead.scan, text, boundary, end, _AT_SEPARATOR) if boundary else None
                while True:
                    status, pos, count, mode, tokens, why = here.scan(text, pos, boundary or end, mode)
                    if status == _DECLINED:
                        raise Declined(f"compiled scanner: {why}")
                    if count:
                        self.events_seen += count
                        yield here.block(count, tokens, text)
                    if status != _FULL:
                        break
                if second is not None:
                    result = second.result()
                    if not (status == _MORE and mode == _AT_SEPARATOR and pos == boundary):
                        if status == _END:  # the array ended before the seam
                            self._finish(stream, bytes(text[pos:filled]), wrapped, eof)
                            return
                        may_split, status = False, _FULL  # the rest in one piece, then split again
                        continue
                    status, pos, count, mode, tokens, why = result
                    if status == _DECLINED:
                        raise Declined(f"compiled scanner: {why}")
                    if count:
                        self.events_seen += count
                        yield ahead.block(count, tokens, text)
                may_split = self._halves()
                if status == _END:
                    self._finish(stream, bytes(text[pos:filled]), wrapped, eof)
                    return
                if status == _MORE and eof and end == filled:
                    raise Declined("the traceEvents array does not end")
                # (An element longer than a pass over text in memory: a longer pass.)
                span = block_bytes if pos > passed_from else 2 * span

    def _finish(self, stream: Any, after: bytes, wrapped: bool, eof: bool) -> None:
        """Read what follows the array and keep its top-level keys."""
        parts = [after]
        while not eof:
            block = self._reader.read_block(stream)
            eof = not block
            parts.append(block)
        tail = self._reader.parse_tail(b"".join(parts), wrapped)
        if tail is None:
            raise Declined("the text after the traceEvents array is not the end of the document")
        self.top.update(tail)
