"""Finding XPlane files: ``<host>.xplane.pb`` in TensorBoard logdirs, ``plugins/profile`` folders
and profiling-run folders, and choosing the newest run."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from traceview.errors import InputError, TraceviewWarning


XPLANE_SUFFIX = ".xplane.pb"


# A gzipped XPlane (how traces are often shared) is read the same way: content decides the format.
XPLANE_SUFFIXES = (XPLANE_SUFFIX, XPLANE_SUFFIX + ".gz")


def is_xplane_name(path: Path) -> bool:
    """Whether a file name is an XPlane file's (``<host>.xplane.pb``, or the same gzipped)."""
    return path.name.endswith(XPLANE_SUFFIXES)


def xplane_files(folder: Path, recursive: bool) -> list[Path]:
    """The XPlane files in ``folder`` (and below it, when ``recursive``). One with an XPlane's
    name that is not a regular file (a broken link, a FIFO: reading could fail or block) is left
    out with a warning naming it: a host missing from a run is never silence."""
    found = folder.rglob("*.xplane.pb*") if recursive else folder.glob("*.xplane.pb*")
    files = []
    for path in sorted(p for p in found if is_xplane_name(p)):
        if path.is_file():
            files.append(path)
        elif not path.is_dir():
            warnings.warn(f"{path}: not a readable regular file (skipped)", TraceviewWarning, stacklevel=2)
    return files


_RUN_NAME = re.compile(r"^\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}")


def find_xplanes(path: Path, run: str | None = None) -> list[Path]:
    """The ``.xplane.pb`` files of one profiling run under ``path``.

    ``path`` may be a run folder (``…/plugins/profile/2026_11_22_02_43_17``), a
    ``plugins/profile`` folder, or a TensorBoard logdir. Without ``run`` the newest run is taken:
    run folders are named by capture time (``YYYY_MM_DD_HH_MM_SS``), so the greatest name is the
    newest; runs named otherwise are ordered by modification time, after the timestamped ones.
    With several ``plugins/profile`` folders under a logdir, runs of all of them compete.
    A run with several hosts returns one file per host.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_file():
        if is_xplane_name(path):
            return [path]
        raise InputError(f"{path}: not an {XPLANE_SUFFIX} file; point at a trace or a TensorBoard logdir")
    direct = xplane_files(path, recursive=False)
    if direct:  # a run folder
        if run is not None and run != path.name:
            raise InputError(
                f"{path}: is the run folder '{path.name}', not run '{run}'; "
                f"point at its plugins/profile folder or drop --run"
            )
        return direct
    runs: dict[Path, list[Path]] = {}
    for file in xplane_files(path, recursive=True):
        runs.setdefault(file.parent, []).append(file)
    if not runs:
        raise InputError(
            f"{path}: no {XPLANE_SUFFIX} files found (searched this folder and below, e.g. "
            f"plugins/profile/<run>/<host>{XPLANE_SUFFIX}); point at a TensorBoard logdir written by "
            f"tf.profiler / jax.profiler, or at a trace file"
        )
    if run is not None:
        chosen = [folder for folder in runs if folder.name == run]
        if not chosen:
            names = ", ".join(sorted({folder.name for folder in runs}))
            raise InputError(f"{path}: no run named '{run}' (runs found: {names}); pick one of those")
        if len(chosen) > 1:
            where = ", ".join(str(folder) for folder in sorted(chosen))
            raise InputError(f"{path}: run '{run}' exists in several profile folders ({where}); point at one")
        return sorted(runs[chosen[0]])
    newest = max(runs, key=_run_order)
    return sorted(runs[newest])


def _run_order(folder: Path) -> tuple[int, str, float]:
    if _RUN_NAME.match(folder.name):
        return (1, folder.name, 0.0)
    return (0, "", folder.stat().st_mtime)
