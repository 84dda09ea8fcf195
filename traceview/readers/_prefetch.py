"""Inflate a gzipped trace named on the command line while the interpreter is still loading.

``traceview diagnose trace.json.gz`` spends its first few hundred milliseconds importing
numpy, pandas and the analyses, on one core. Inflating the trace does not need any of them and
zlib lets go of the interpreter lock while it works, so the command line starts it on a thread
before anything else (:func:`start`) and the reader picks the text up (:func:`take`) instead of
inflating it again. Only what is certainly the same file is taken (same resolved path, size and
modification time), and anything unusual (a corrupt or oversized stream, trailing bytes, an
error of any kind) leaves the file to the ordinary streaming reader, which reports it. The
inflated text is held in memory, so only traces up to :data:`PREFETCH_BYTES` in all are taken.
"""

from __future__ import annotations

import io
import os
import struct
import threading
import zlib
from pathlib import Path

from traceview.readers._io import GZIP_MAGIC

PREFETCH_BYTES = 256 * 2**20  # inflated bytes held at most, all prefetched files together
_GZIP_WINDOW = 16 + zlib.MAX_WBITS  # a gzip header and trailer around deflate data

_Key = tuple[str, int, int]
_pending: dict[_Key, tuple[threading.Thread, list[bytes | None]]] = {}
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
    result: list[bytes | None] = []
    thread = threading.Thread(target=_inflate, args=(path, inflated_mod_4gib, result), daemon=True,
                              name="traceview-prefetch")
    _pending[key] = (thread, result)
    thread.start()


def _inflate(path: Path, expected: int, result: list[bytes | None]) -> None:
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
                result.append(None)
                return
            parts.append(part)
            data = inflater.unused_data
        result.append(b"".join(parts) if total == expected else None)
    except Exception:  # noqa: BLE001 - whatever it is, the streaming reader reports it
        result.append(None)


def take(path: Path) -> InflatedText | None:
    """The inflated content of ``path`` when it was prefetched (waiting for the thread if needed)."""
    key = _key(path)
    entry = _pending.pop(key, None) if key is not None else None
    if entry is None:
        return None
    thread, result = entry
    thread.join()
    text = result[0] if result else None
    return InflatedText(text) if text is not None else None
