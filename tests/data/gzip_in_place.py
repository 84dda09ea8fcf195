"""Shared by the capture scripts beside it: profiler output gzipped where it lies (traceview
reads a gzipped trace, JSON or XPlane, by its content)."""

import gzip
import shutil
from pathlib import Path


def gzip_in_place(folder: Path, pattern: str) -> None:
    """Replace every file under ``folder`` matching ``pattern`` with its gzipped copy (name + .gz)."""
    for trace in folder.rglob(pattern):
        with trace.open("rb") as src, gzip.open(f"{trace}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        trace.unlink()
