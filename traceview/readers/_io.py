"""Reading raw bytes from disk: gzip by magic number, clear errors for unreadable files."""

from __future__ import annotations

import errno
import gzip
import io
import os
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO
from contextlib import contextmanager
from pathlib import Path

from traceview.errors import FormatError, InputError, UsageError

try:
    # Intel ISA-L's inflate, with zlib's and gzip's interfaces: a gzipped trace inflates 2-2.5x
    # faster than with zlib (0.05 s against 0.11 s for the 54 MB trace of benchmarks/README.md),
    # releasing the interpreter lock as zlib does. Where it is not installed, zlib does the same.
    from isal import igzip as _gzip
    from isal import isal_zlib as _zlib

    INFLATE_ERRORS: tuple[type[BaseException], ...] = (EOFError, zlib.error, gzip.BadGzipFile, _zlib.error)
except ImportError:  # pragma: no cover - isal is a dependency; a platform without its wheel falls back
    _gzip = gzip  # type: ignore[no-redef]
    _zlib = zlib  # type: ignore[no-redef]
    INFLATE_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)

GZIP_MAGIC = b"\x1f\x8b"
GZIP_WINDOW = 16 + zlib.MAX_WBITS  # (wbits of a gzip stream: a gzip header and trailer around deflate data)
UTF8_BOM = b"\xef\xbb\xbf"


def absent(path: Path) -> InputError:
    """The error for a path that does not lead to a file or folder, saying why where the system
    tells more than "missing": a symbolic link to nothing, a loop of links, a folder on the way
    the user may not enter."""
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return InputError(f"{path}: a loop of symbolic links; point at the trace file itself")
        if err.errno == errno.EACCES:
            return InputError(f"{path}: permission denied on the way to it")
        if err.errno == errno.ENOENT and os.path.islink(path):
            return InputError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist")
    return InputError(f"{path}: no such file or directory")


@contextmanager
def user_errors(path: Path) -> Iterator[None]:
    """Turn file-system and gzip errors into one-line errors that name the file."""
    try:
        yield
    except FileNotFoundError:
        raise absent(path) from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a trace file") from None
    except INFLATE_ERRORS as err:
        raise FormatError(f"{path}: gzip data is truncated or corrupt ({err}); re-copy or re-export the trace") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror or err})") from None


# The most a compressed trace may inflate to (TRACEVIEW_MAX_BYTES, or --max-bytes on the command
# line): a gzip bomb is refused after a counting pass that holds one chunk at a time.
DEFAULT_MAX_BYTES = 8 * 2**30
_CHUNK = 16 * 2**20


class InflatedText(io.BytesIO):
    """A gzipped file's content, already inflated: read like the file's gzip stream (the reader
    counts its bytes against the decompressed-size limit as for one), or taken whole (:attr:`text`)."""

    def __init__(self, text: bytes) -> None:
        super().__init__(text)
        self.text = text  # (the same bytes: a BytesIO copies only when written to)


def max_bytes() -> int:
    """The decompressed-size limit in force (bytes)."""
    value = os.environ.get("TRACEVIEW_MAX_BYTES")
    if value is None or not value.strip():
        return DEFAULT_MAX_BYTES
    digits = value.strip()
    # ASCII digits only: str.isdigit() also takes "²" and other digits int() refuses.
    if digits.isascii() and digits.isdigit() and int(digits) > 0:
        return int(digits)
    # A limit the user set and mistyped is not replaced by the default in silence.
    raise UsageError(f"TRACEVIEW_MAX_BYTES is {value!r}, not a number of bytes; set it to a whole number "
                     f"above 0 (the default is {DEFAULT_MAX_BYTES}) or unset it")


def read_bytes(path: Path) -> bytes:
    """Whole file content, gunzipped when the file starts with the gzip magic number.

    Compressed content is first measured in a streaming pass (one chunk in memory) and refused
    when it would inflate beyond :func:`max_bytes`."""
    with user_errors(path):
        raw = path.read_bytes()
        if raw[:2] != GZIP_MAGIC:
            return raw
        limit = max_bytes()
        inflated = 0
        with gzip_reader(io.BytesIO(raw)) as stream:
            while chunk := stream.read(_CHUNK):
                inflated += len(chunk)
                if inflated > limit:
                    raise InputError(
                        f"{path}: decompresses to more than {limit:,} bytes (the limit); if the trace is "
                        f"really that large, raise it with --max-bytes or TRACEVIEW_MAX_BYTES")
        return _gzip.decompress(raw)


def is_chrome_trace(head: bytes) -> bool:
    """True when the first bytes look like a Chrome-trace JSON document."""
    text = head.removeprefix(UTF8_BOM).lstrip()
    if text[:1] == b"[":
        return b'"ph"' in text or text[1:].lstrip()[:1] in (b"{", b"]")
    return text[:1] == b"{" and (b'"traceEvents"' in text or b'"schemaVersion"' in text or b'"ph"' in text)


def head_bytes(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for format sniffing."""
    with user_errors(path), path.open("rb") as handle:
        if handle.read(2) != GZIP_MAGIC:
            handle.seek(0)
            return handle.read(size)
        handle.seek(0)
        with gzip_reader(handle) as inner:
            return inner.read(size)


def gzip_reader(handle: BinaryIO) -> gzip.GzipFile:
    """A gzip stream's content, read as it inflates (every member, as gzip.GzipFile reads)."""
    return _gzip.GzipFile(fileobj=handle, mode="rb")


def inflater() -> Any:  # noqa: ANN401 - zlib's or ISA-L's decompression object
    """A decompression object for one gzip member (``decompress`` / ``eof`` / ``unused_data``)."""
    return _zlib.decompressobj(GZIP_WINDOW)
