"""Reading raw bytes from disk: gzip by magic number, clear errors for unreadable files."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from traceview.errors import FormatError, InputError

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> bytes:
    """Whole file content, gunzipped when the file starts with the gzip magic number."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a trace file") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror})") from None
    if raw[:2] == GZIP_MAGIC:
        try:
            return gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as err:
            raise FormatError(
                f"{path}: gzip data is truncated or corrupt ({err}); re-copy or re-export the trace"
            ) from None
    return raw


def head_bytes(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for format sniffing."""
    try:
        with path.open("rb") as handle:
            start = handle.read(2)
            handle.seek(0)
            if start == GZIP_MAGIC:
                with gzip.open(handle) as inner:
                    try:
                        return inner.read(size)
                    except (EOFError, OSError, zlib.error) as err:
                        raise FormatError(
                            f"{path}: gzip data is truncated or corrupt ({err}); re-copy or re-export the trace"
                        ) from None
            return handle.read(size)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a trace file") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror})") from None
