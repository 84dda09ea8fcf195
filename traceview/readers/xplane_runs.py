"""Finding XPlane files: ``<host>.xplane.pb`` in TensorBoard logdirs, ``plugins/profile`` folders
and profiling-run folders, and choosing the newest run."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from traceview.errors import InputError, TraceviewWarning
from traceview.readers._io import absent


XPLANE_SUFFIX = ".xplane.pb"


# A gzipped XPlane (how traces are often shared) is read the same way: content decides the format.
XPLANE_SUFFIXES = (XPLANE_SUFFIX, XPLANE_SUFFIX + ".gz")


def is_xplane_name(path: Path) -> bool:
    """Whether a file name is an XPlane file's (``<host>.xplane.pb``, or the same gzipped)."""
    return path.name.endswith(XPLANE_SUFFIXES)


def xplane_files(folder: Path, recursive: bool, unreadable: list[Path] | None = None) -> list[Path]:
    """The XPlane files in ``folder`` (and below it, when ``recursive``). Paths with an XPlane's
    name that are not regular files (a broken link, a FIFO: reading could fail or block) are left
    out, and added to ``unreadable`` when given."""
    found = folder.rglob("*.xplane.pb*") if recursive else folder.glob("*.xplane.pb*")
    files = []
    for path in sorted(p for p in found if is_xplane_name(p)):
        if path.is_file():
            files.append(path)
        elif not path.is_dir() and unreadable is not None:
            unreadable.append(path)
    return files


def _readable_run(folder: Path, files: list[Path], unreadable: list[Path]) -> list[Path]:
    """The chosen run's files. Its hosts that cannot be read are named in a warning (a host missing
    from a run is never silence); a run none of whose files can be read is refused, naming it (an
    older run is not read in its place without a word)."""
    lost = [p for p in unreadable if p.parent == folder]
    if not files:
        raise InputError(f"{folder}: its {XPLANE_SUFFIX} files are not readable regular files "
                         f"({', '.join(p.name for p in lost)}); capture the profile again or pick a run with --run")
    for path in lost:
        warnings.warn(f"{path}: not a readable regular file (skipped)", TraceviewWarning, stacklevel=3)
    return sorted(files)


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
        raise absent(path)
    if path.is_file():
        if is_xplane_name(path):
            return [path]
        raise InputError(f"{path}: not an {XPLANE_SUFFIX} file; point at a trace or a TensorBoard logdir")
    unreadable: list[Path] = []
    direct = xplane_files(path, recursive=False, unreadable=unreadable)
    if direct or unreadable:  # a run folder
        if run is not None and run != path.name:
            raise InputError(
                f"{path}: is the run folder '{path.name}', not run '{run}'; "
                f"point at its plugins/profile folder or drop --run"
            )
        return _readable_run(path, direct, unreadable)
    runs: dict[Path, list[Path]] = {}
    for file in xplane_files(path, recursive=True, unreadable=unreadable):
        runs.setdefault(file.parent, []).append(file)
    for file in unreadable:  # a run whose hosts are all unreadable is still a run (the newest, maybe)
        runs.setdefault(file.parent, [])
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
        return _readable_run(chosen[0], runs[chosen[0]], unreadable)
    newest = max(runs, key=_run_order)
    if len(runs) > 1:
        # (Keras fit twice into one log_dir, or a re-run: each capture is a run of its own.)
        others = sorted(folder.name for folder in runs if folder != newest)
        listed = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        warnings.warn(f"{path}: {len(runs)} profiling runs; reading the newest, '{newest.name}' (also: {listed}); "
                      f"--run NAME reads another", TraceviewWarning, stacklevel=2)
    return _readable_run(newest, runs[newest], unreadable)


def _run_order(folder: Path) -> tuple[int, str, float]:
    if _RUN_NAME.match(folder.name):
        return (1, folder.name, 0.0)
    return (0, "", folder.stat().st_mtime)
