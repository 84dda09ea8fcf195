"""Read the traces named on the command line while the interpreter is still loading.

``traceview diagnose trace.json.gz`` spends its first few hundred milliseconds importing
numpy, the command-line parser and the analyses, on one core. Reading the trace needs none of
them but numpy, and the slow parts let go of the interpreter lock (the inflater while it inflates, the compiled Kineto
scanner while it scans), so the command line starts the reading on a thread before anything
else (:func:`start`; traceview/console.py, before even the command-line parser is loaded): a
Chrome-trace JSON file (told by its first bytes) is inflated into memory when gzipped, then
scanned into the reader's fields (readers/kineto_fields.py, which needs numpy: the console
script imports numpy and that module first, while the thread inflates the file, and the thread
imports nothing before its inflating is done: :func:`load_scanner`). A diagnosis imports no pandas, so the
imports end before the reading does (on the 54 MB trace, 0.27 s against 0.4 s on one core): the
scan splits long blocks over both cores from the start. An XPlane (the first trace named only) has its
skeleton parsed and its lines' events decoded one line after another (readers/xplane_space.py)
until the reader waits; the reader decodes the lines left. The readers take what the thread
made (:func:`take`) instead of doing that work again; other formats, and installs without the
compiled scanner or decoder, are not read ahead.

What is taken is the same file (same resolved path, device, inode, size, and modification and
change times) read within the size limit in force when it is taken; anything unusual (a
corrupt or oversized stream, trailing bytes, an error of any kind) leaves the file to the
reader, which reports it, and a document the scanner declines is handed on as declined. Memory
is bounded: the first trace's fields are what its reader would hold anyway, but gzip text and
the fields of any further trace (held while the first is analysed) are read ahead only within
:data:`PREFETCH_BYTES`, and :func:`forget` drops whatever was not taken.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from traceview.errors import UsageError
from traceview.readers._io import (GZIP_MAGIC, UTF8_BOM, InflatedText, head_bytes, inflater, is_chrome_trace, max_bytes,
                                  read_bytes)

if TYPE_CHECKING:
    from traceview.readers.kineto_fields import ScannedFields
    from traceview.readers.xplane_space import SpaceSource

# Bytes read ahead at most, all files together, beyond the first trace's fields: inflated gzip
# text, and the fields of further traces (counted at their file's size).
PREFETCH_BYTES = 256 * 2**20
_HEAD_BYTES = 4096  # what the format is told by (readers/__init__.py detect)

_Key = tuple[str, int, int, int, int, int]


@dataclass
class ReadAhead:
    """What the thread made of one file."""

    scanned: ScannedFields | None = None  # the scanner's reading of it
    space: SpaceSource | None = None  # an XPlane's skeleton, lines decoded ahead (readers/xplane_space.py)
    declined: str | None = None  # why the scanner did not take the document
    size: int = 0  # inflated bytes of a gzip file, for the limit in force when the reader takes it
    cost: int = 0  # bytes charged to the budget
    waited: threading.Event = field(default_factory=threading.Event)  # set once the reader waits for it


_pending: dict[_Key, tuple[threading.Thread, ReadAhead]] = {}
_budget = [PREFETCH_BYTES]
_json_reads = [False]  # whether a read of JSON was started (:func:`load_scanner`)


def _key(path: Path) -> _Key | None:
    """What tells this file from any other, now and later."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (str(path.resolve()), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _built(module: str) -> bool:
    """Whether a compiled module is installed (found, not imported: that would load numpy)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def start(path_text: str) -> None:
    """Begin reading ``path_text`` on a thread, when it is a regular file the budget allows."""
    path = Path(path_text)
    key = _key(path)
    if key is None or key in _pending or not os.path.isfile(path):
        return
    size = key[3]
    try:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
            gzipped = head[:2] == GZIP_MAGIC
            if not gzipped and head.removeprefix(UTF8_BOM).lstrip()[:1] not in (b"{", b"["):
                _start_binary(path, key)
                return
            if not _built("traceview.readers._kineto_scan"):
                return
            if gzipped:
                handle.seek(-4, os.SEEK_END)
                (inflated_mod_4gib,) = struct.unpack("<I", handle.read(4))  # the gzip trailer's ISIZE
    except (OSError, struct.error):
        return
    expected = None
    if gzipped:
        try:
            limit = max_bytes()
        except UsageError:
            return  # (the reader says so, where the command's errors are reported)
        # (A size of 4 GiB or more shows here as its remainder; the inflating stops at it anyway.)
        if size < 18 or inflated_mod_4gib > limit:
            return
        expected = cost = inflated_mod_4gib
    else:
        cost = size if _pending else 0  # (the first trace's fields: what its reader holds anyway)
    if cost > _budget[0]:
        return
    _start_thread(key, _read_ahead, (path, expected), ReadAhead(cost=cost))
    _json_reads[0] = True


def _start_binary(path: Path, key: _Key) -> None:
    """Begin reading a file that is not JSON: an XPlane's skeleton and events (what its reader
    holds anyway), for the first trace only, where the compiled decoder is installed."""
    if not _pending and _built("traceview.readers._xplane_wire"):
        _start_thread(key, _read_xplane_ahead, (path,), ReadAhead())


def _start_thread(key: _Key, target: Callable[..., None], args: tuple[object, ...], result: ReadAhead) -> None:
    thread = threading.Thread(target=target, args=(*args, result), daemon=True, name="traceview-prefetch")
    try:
        thread.start()
    except RuntimeError:  # no thread to be had: the reader reads it as ever
        return
    _budget[0] -= result.cost
    _pending[key] = (thread, result)


def _read_ahead(path: Path, expected: int | None, result: ReadAhead) -> None:
    """Scan the file if it is Chrome-trace JSON, inflating it first when gzipped (``expected``:
    its inflated size); whatever fails is left to the reader."""
    try:
        if not is_chrome_trace(head_bytes(path, _HEAD_BYTES)):
            return  # (another format: its own reader reads it)
        # A gzip file is inflated before anything is imported on this thread: the inflater lets
        # go of the interpreter lock, so it runs beside the main thread's imports, where an
        # import here would take turns with them. (A plain file is read by the scanner, into
        # its buffer, once numpy is there: read ahead of it into fresh memory, its first blocks
        # slowed the main thread's imports more than they saved, 85 MB trace 1.01 -> 1.13 s.)
        stream: InflatedText | BinaryIO
        if expected is not None:
            text = _inflate(path, expected)
            if text is None:
                return
            result.size = len(text)
            stream = InflatedText(text)
            del text
        else:
            stream = path.open("rb")
        with stream:
            # The main thread imports these meanwhile (:func:`load_scanner`); here they are found.
            from traceview.readers import kineto_fields
            from traceview.readers._json_stream import Declined

            try:
                # Long blocks in two halves from the start: the reading, not the imports, is what
                # the reader waits for (the module docstring).
                result.scanned = kineto_fields.scan_fields(path, stream)
            except Declined as why:
                result.declined = str(why)
    except Exception:  # noqa: BLE001 - an unreadable or oversized file: the reader meets it again and says so
        result.scanned = result.declined = None


def load_scanner() -> None:
    """Import what a started scan of JSON needs (numpy, msgspec, the scanner), on the calling
    thread: the console script's main thread, right after numpy, while the reading thread
    inflates. Imported on the reading thread instead, they took turns with the main thread's
    imports for the interpreter lock and held back the inflating behind them (the 54 MB trace's
    scan started ~40 ms later)."""
    if _json_reads[0]:
        from traceview.readers import kineto_fields  # noqa: F401 - (imported for the reading thread)


def _read_xplane_ahead(path: Path, result: ReadAhead) -> None:
    """Parse the skeleton of the file if it is an XPlane (readers/xplane_space.py), then decode
    its lines' events one by one until the reader waits for them (it decodes the rest); whatever
    fails is left to the reader."""
    try:
        raw = read_bytes(path)  # (read while the main thread imports numpy, which the next line needs)
        from traceview.readers.proto.xplane_descriptor import message_classes
        from traceview.readers.xplane_space import space_of_file

        space = space_of_file(path, raw)  # (not an XPlane: refused, and left to its reader)
        del raw
        result.space = space
        line_class = message_classes()["XLine"]
        for line in (line for plane in space.planes for line in plane.lines if line.count):
            if result.waited.is_set():
                return
            line.decode_ahead(line_class)
    except Exception:  # noqa: BLE001 - an unreadable or malformed file: the reader meets it again and says so
        result.space = None


def _inflate(path: Path, expected: int) -> bytes | None:
    """Every gzip member of the file, inflated; None for anything the streaming reader should see."""
    try:
        data = path.read_bytes()
        parts: list[bytes] = []
        total = 0
        while data:
            member = inflater()
            part = member.decompress(data, expected - total + 1)
            total += len(part)
            if total > expected or not member.eof:  # larger than the trailer said, or truncated
                return None
            parts.append(part)
            data = member.unused_data
        return b"".join(parts) if total == expected else None
    except Exception:  # noqa: BLE001 - whatever it is, the streaming reader reports it
        return None


def take(path: Path) -> ReadAhead | None:
    """What the thread made of ``path`` (waiting for it), when one was started for this very
    file; a scan of a gzip file now beyond the size limit in force (``--max-bytes`` is read
    after the thread started) is not handed on. The entry is gone after this call."""
    key = _key(path)
    entry = _pending.pop(key, None) if key is not None else None
    if entry is None:
        return None
    thread, result = entry
    result.waited.set()
    thread.join()
    _budget[0] += result.cost
    if result.size > max_bytes():
        return ReadAhead()
    return result


def forget() -> None:
    """Drop whatever was read ahead and not taken (a thread still running finishes for nothing)."""
    for _, result in _pending.values():
        _budget[0] += result.cost
    _pending.clear()
