"""Input formats: each reader module offers ``sniff(head_bytes) -> bool`` and ``read(path) -> Timeline``.

The format is chosen by content, never by file name: every reader is asked in turn whether the
first bytes are its format. A directory is searched for traces (Kineto JSON files, and the
newest run of each TensorBoard ``plugins/profile`` folder); a file there that is named like a
trace, or whose first bytes cannot be read, is read with the others and, when it cannot be, left
out of the folder's report with its reason (api.diagnose_report).
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from collections.abc import Iterator
from types import ModuleType

from traceview.errors import InputError, TraceviewError, TraceviewWarning
from traceview.readers._io import absent, head_bytes

# Reader modules, asked in this order.
_READER_MODULES = ("traceview.readers.kineto", "traceview.readers.xplane")
_JSON_SUFFIXES = (".json", ".json.gz")
# Names that say a file is a trace whatever its bytes (empty, truncated, not JSON): read with the
# folder's others, so that it is named as left out, never skipped in silence. torch.profiler's
# tensorboard_trace_handler writes <worker>.<time>.pt.trace.json(.gz); *.trace.json(.gz) is the
# Chrome-trace convention (JAX's beside its XPlane is passed over above).
_TRACE_NAMES = (".pt.trace.json", ".pt.trace.json.gz", ".trace.json", ".trace.json.gz")


def readers() -> Iterator[ModuleType]:
    """Reader modules in order, imported only when asked (so a plain JSON read never loads protobuf)."""
    for name in _READER_MODULES:
        yield importlib.import_module(name)


def detect(path: Path) -> ModuleType:
    """The reader module for ``path``, decided from its content."""
    head = head_bytes(path)
    if not head:
        raise InputError(f"{path}: file is empty; expected a torch.profiler JSON or an .xplane.pb trace")
    for module in readers():
        if module.sniff(head):
            return module
    raise InputError(
        f"{path}: not a trace traceview can read (expected Kineto/Chrome-trace JSON, .json.gz, or XPlane .xplane.pb)"
    )


def format_of(path: Path) -> str | None:
    """The reader format ``path``'s first bytes say (``FORMAT_NAME``); None where they say none or
    cannot be read (the trace's own reading then says why)."""
    try:
        return detect(path).FORMAT_NAME
    except TraceviewError:
        return None


def discover(path: Path, run: str | None = None) -> list[Path]:
    """Trace files named by ``path``: the file itself, or the traces found under a directory."""
    if not path.exists():
        raise absent(path)
    if path.is_file():
        return [path]
    if not path.is_dir():  # a FIFO, a socket, a device: reading could block or never end
        raise InputError(f"{path}: not a regular file or a directory (a pipe, socket or device?); give a trace file "
                         "or a folder of traces")
    found: list[Path] = []
    xplane_runs = importlib.import_module("traceview.readers.xplane_runs")
    unreadable: list[Path] = []  # (their runs compete too: find_xplanes names them)
    xplanes = xplane_runs.xplane_files(path, recursive=True, unreadable=unreadable)
    logdirs = sorted({_logdir_of(f, path) for f in xplanes + unreadable})
    if logdirs:
        for logdir in logdirs:
            found.extend(xplane_runs.find_xplanes(logdir, run))
    # A JSON trace beside an XPlane file in a profile run folder (JAX writes <host>.trace.json.gz
    # there) is the trace viewer's rendering of that same XPlane: the XPlane is read instead.
    xplane_run_folders = {f.parent for f in xplanes + unreadable}
    for candidate in sorted(path.rglob("*")):
        if candidate.parent in xplane_run_folders or not candidate.name.endswith(_JSON_SUFFIXES):
            continue
        if not candidate.is_file():
            if not candidate.is_dir():  # a broken link, a FIFO, a socket: reading could fail or block
                _skipped(f"{candidate}: not a readable regular file")
            continue
        if candidate.name == "manifest.json":
            continue
        try:
            if (importlib.import_module("traceview.readers.kineto").sniff(head_bytes(candidate))
                    or candidate.name.endswith(_TRACE_NAMES)):
                found.append(candidate)
        except TraceviewError:
            # Unreadable, a corrupt gzip: read with the others, it is left out of the folder's
            # report with its reason (and alone, refused with it).
            found.append(candidate)
    found = sorted(set(found))
    if not found:
        raise InputError(
            f"{path}: no traces found (looked for *.json / *.json.gz torch.profiler traces and "
            f"plugins/profile/<run>/*.xplane.pb); point at a trace file or a TensorBoard logdir"
        )
    return found


def _skipped(reason: str) -> None:
    """A file of a folder that is left out: a warning naming it, never silence."""
    warnings.warn(f"{reason} (skipped)", TraceviewWarning, stacklevel=3)


def _logdir_of(xplane_file: Path, root: Path) -> Path:
    """The folder whose newest run this file competes in: the TensorBoard logdir above
    ``plugins/profile/<run>/``, the ``profile`` folder or run folder the user named, or the file's folder."""
    run_dir = xplane_file.parent
    profile_dir = run_dir.parent
    if run_dir == root:
        return root
    if profile_dir == root:
        return root
    if profile_dir.name == "profile" and profile_dir.parent.name == "plugins":
        logdir = profile_dir.parent.parent
        if logdir == root or root in logdir.parents:
            return logdir
        return root
    return run_dir
