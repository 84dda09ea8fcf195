"""Read a gzipped trace named on the command line while the interpreter is still loading.

``traceview diagnose trace.json.gz`` spends its first few hundred milliseconds importing
numpy, pandas and the analyses, on one core. Inflating the trace does not need any of them and
zlib lets go of the interpreter lock while it works, so the command line starts it on a thread
before anything else (:func:`start`). The same thread then runs the compiled Kineto scanner over
the text (readers/kineto_fields.py, which needs numpy but not pandas; the scan itself runs
without the interpreter lock), so the trace is usually read by the time the analyses are
imported. The reader picks up the scanned fields (:func:`take_scanned`), or else the text
(:func:`take`), instead of doing that work again.

Only what is certainly the same file is taken (same resolved path, size and modification time),
and anything unusual (a corrupt or oversized stream, trailing bytes, a document the scanner does
not take, an error of any kind) leaves the file, or its text, to the ordinary reader, which
reports it. The inflated text is held in memory, so only traces up to :data:`PREFETCH_BYTES` in
all are taken.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from traceview.readers._io import GZIP_MAGIC, InflatedText, head_bytes, max_bytes

if TYPE_CHECKING:
    from traceview.readers.kineto_fields import ScannedFields

PREFETCH_BYTES = 256 * 2**20  # inflated bytes held at most, all prefetched files together
_HEAD_BYTES = 4096  # what the format is told by (readers/__init__.py detect)
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # a gzip header and trailer around deflate data

_Key = tuple[str, int, int]


@dataclass
class _ReadAhead:
    """What the thread made of one file: its text, until the scan has taken it over."""

    text: bytes | None = None  # the inflated content (None: left to the reader)
    scanned: ScannedFields | None = None  # the scanner's reading of it (the text is then let go)
    size: int = 0  # inflated bytes, for the limit in force when the reader takes the result
    waited: threading.Event = field(default_factory=threading.Event)  # set once the reader waits for it


_pending: dict[_Key, tuple[threading.Thread, _ReadAhead]] = {}
_budget = [PREFETCH_BYTES]


def _key(path: Path) -> _Key | None:
    try:
        stat = path.stat()
        return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except OSError:
        return None


def start(path_text: str) -> None:
    """Begin reading ``path_text`` on a thread: a plain file is scanned from the disk, a gzip
    file inflated into memory first when it is small enough to hold."""
    path = Path(path_text)
    key = _key(path)
    if key is None or key in _pending or not os.path.isfile(path):
        return
    try:
        with path.open("rb") as handle:
            gzipped = handle.read(2) == GZIP_MAGIC
            if gzipped:
                handle.seek(-4, os.SEEK_END)
                (inflated_mod_4gib,) = struct.unpack("<I", handle.read(4))  # the gzip trailer's ISIZE
    except (OSError, struct.error):
        return
    expected = None
    if gzipped:
        if key[1] < 18 or inflated_mod_4gib > _budget[0]:  # (a size of 4 GiB or more shows here as
            return                                          # its remainder; the inflating stops anyway)
        _budget[0] -= inflated_mod_4gib
        expected = inflated_mod_4gib
    result = _ReadAhead()
    thread = threading.Thread(target=_read_ahead, args=(path, expected, result), daemon=True,
                              name="traceview-prefetch")
    _pending[key] = (thread, result)
    thread.start()


def _read_ahead(path: Path, expected: int | None, result: _ReadAhead) -> None:
    """Inflate the file (``expected``: its inflated size, None when it is not gzipped), then scan
    it if it is Chrome-trace JSON; whatever fails is left to the reader."""
    if expected is not None:
        result.text = _inflate(path, expected)
        if result.text is None:
            return
        result.size = len(result.text)
    try:
        # Imported here, on this thread: numpy is the main thread's first import as well, and
        # the command line must not wait for it before it starts.
        from traceview.readers import kineto_fields

        head = result.text[:_HEAD_BYTES] if result.text is not None else head_bytes(path, _HEAD_BYTES)
        if not kineto_fields.sniff(head):
            return  # (another format: its own reader reads it)
        # (A stream of its own: the scanner would otherwise ask this module for the file.)
        with InflatedText(result.text) if result.text is not None else path.open("rb") as stream:
            # Long blocks in two halves once the reader waits for them: till then the other
            # core imports the analyses.
            result.scanned = kineto_fields.scan_fields(path, stream, halves=result.waited.is_set)
    except Exception:  # noqa: BLE001 - declined or refused: the reader meets it again and says so
        return
    result.text = None  # (its columns are all the reader needs now)


def _inflate(path: Path, expected: int) -> bytes | None:
    """Every gzip member of the file, inflated; None for anything the streaming reader should see."""
    try:
        data = path.read_bytes()
        parts: list[bytes] = []
        total = 0
        while data:
            inflater = zlib.decompressobj(_GZIP_WINDOW)
            part = inflater.decompress(data, expected - total + 1)
            total += len(part)
            if total > expected or not inflater.eof:  # larger than the trailer said, or truncated
                return None
            parts.append(part)
            data = inflater.unused_data
        return b"".join(parts) if total == expected else None
    except Exception:  # noqa: BLE001 - whatever it is, the streaming reader reports it
        return None


def _finished(path: Path) -> tuple[_Key, _ReadAhead] | None:
    """The read-ahead of ``path`` when one was started for this very file (waiting for it)."""
    key = _key(path)
    entry = _pending.get(key) if key is not None else None
    if key is None or entry is None:
        return None
    thread, result = entry
    result.waited.set()
    thread.join()
    return key, result


def take_scanned(path: Path) -> ScannedFields | None:
    """The compiled scanner's reading of ``path`` when the thread made it, and the file is within
    the size limit in force now (``--max-bytes`` is set after the thread started)."""
    found = _finished(path)
    if found is None or found[1].scanned is None:
        return None
    key, result = found
    del _pending[key]
    return result.scanned if result.size <= max_bytes() else None


def take(path: Path) -> InflatedText | None:
    """The inflated content of ``path`` when it was prefetched and not scanned (waiting for the
    thread if needed)."""
    found = _finished(path)
    if found is None:
        return None
    key, result = found
    del _pending[key]
    return InflatedText(result.text) if result.text is not None else None
