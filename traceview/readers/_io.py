"""Reading raw bytes from disk: gzip by magic number, clear errors for unreadable files."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from traceview.errors import FormatError, InputError

GZIP_MAGIC = b"\x1f\x8b"


@contextmanager
def _user_errors(path: Path) -> Iterator[None]:
    """Turn file-system and gzip errors into one-line errors that name the file."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a trace file") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise FormatError(f"{path}: gzip data is truncated or corrupt ({err}); re-copy or re-export the trace") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror or err})") from None


def read_bytes(path: Path) -> bytes:
    """Whole file content, gunzipped when the file starts with the gzip magic number."""
    with _user_errors(path):
        raw = path.read_bytes()
        return gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw


def head_bytes(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for format sniffing."""
    with _user_errors(path), path.open("rb") as handle:
        if handle.read(2) != GZIP_MAGIC:
            handle.seek(0)
            return handle.read(size)
        handle.seek(0)
        with gzip.open(handle) as inner:
            return inner.read(size)
