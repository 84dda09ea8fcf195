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

import io
import os
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from traceview.readers._io import GZIP_MAGIC, max_bytes

if TYPE_CHECKING:
    from traceview.readers.kineto_fields import ScannedFields

PREFETCH_BYTES = 256 * 2**20  # inflated bytes held at most, all prefetched files together
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # a gzip header and trailer around deflate data

_Key = tuple[str, int, int]


@dataclass
class _ReadAhead:
    """What the thread made of one file: its text, until the scan has taken it over."""

    text: bytes | None = None  # the inflated content (None: left to the reader)
    scanned: ScannedFields | None = None  # the scanner's reading of it (the text is then let go)
    size: int = 0  # inflated bytes, for the limit in force when the reader takes the result


_pending: dict[_Key, tuple[threading.Thread, _ReadAhead]] = {}
_budget = [PREFETCH_BYTES]


class InflatedText(io.BytesIO):
    """A gzipped file's content, already inflated: read like the file's gzip stream (the reader
    counts its bytes against the decompressed-size limit as for one)."""


def _key(path: Path) -> _Key | None:
    try:
        stat = path.stat()
        return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    except OSError:
        return None


def start(path_text: str) -> None:
    """Begin inflating ``path_text`` on a thread when it is a gzip file small enough to hold."""
    path = Path(path_text)
    key = _key(path)
    if key is None or key in _pending or not os.path.isfile(path) or key[1] < 18:
        return
    try:
        with path.open("rb") as handle:
            if handle.read(2) != GZIP_MAGIC:
                return
            handle.seek(-4, os.SEEK_END)
            (inflated_mod_4gib,) = struct.unpack("<I", handle.read(4))  # the gzip trailer's ISIZE
    except OSError:
        return
    if inflated_mod_4gib > _budget[0]:  # (a size of 4 GiB or more shows here as its remainder;
        return                          # the inflating below stops at the budget anyway)
    _budget[0] -= inflated_mod_4gib
    result = _ReadAhead()
    thread = threading.Thread(target=_read_ahead, args=(path, inflated_mod_4gib, result), daemon=True,
                              name="traceview-prefetch")
    _pending[key] = (thread, result)
    thread.start()


def _read_ahead(path: Path, expected: int, result: _ReadAhead) -> None:
    """Inflate the file, then scan it; whatever fails is left to the reader."""
    result.text = _inflate(path, expected)
    if result.text is None:
        return
    result.size = len(result.text)
    try:
        # Imported here, on this thread: numpy is the main thread's first import as well, and
        # the command line must not wait for it before it starts.
        from traceview.readers import kineto_fields

        # One thread: the other core is importing the analyses meanwhile.
        result.scanned = kineto_fields.scan_fields(path, InflatedText(result.text), halves=False)
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
