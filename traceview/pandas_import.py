"""Import pandas without letting it load pyarrow, for a command line that does not need pyarrow.

pandas ≥ 3 imports pyarrow at its own import whenever pyarrow is installed (to back its string
dtype), which costs a report about 0.07 s of a 0.6 s diagnosis of a 54 MB trace and 50 MB of
peak memory (``benchmarks/README.md``). Nothing a report computes goes through pyarrow: the
event table keeps names as categories over plain Python strings (``schema.categorical``), and
where pandas makes a string column of its own, its Python-backed string dtype gives the same
values. Parquet output imports pyarrow itself (``traceview/parquet.py``), which still works
after this: only pandas' own view of what is installed is fixed at its import.

A diagnosis of one trace needs no pandas at all (traceview/table.py); a comparison and a
folder's multi-rank summary do. So the console script, for the commands that write reports
(diagnose, compare), does not import pandas: :func:`withhold_pyarrow_from_pandas` arranges that
pandas, when something imports it later, is imported without pyarrow. A program that imports
traceview as a library keeps pandas as it finds it. Worker processes of such a command (pool.py)
import pandas the same way: their results are unpickled by this process's pandas, which could
not rebuild a column that a pandas seeing pyarrow had backed with it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

from traceview.heap import retain_freed_memory, without_huge_page_advice

_PYARROW = "pyarrow"
_withheld = False  # whether this process's pandas was imported without pyarrow


def import_pandas_without_pyarrow() -> bool:
    """Import pandas with pyarrow unavailable to it; True when that happened, False when pandas
    or pyarrow was imported already (then nothing changes)."""
    if "pandas" in sys.modules or _PYARROW in sys.modules:
        return False
    withhold_pyarrow_from_pandas()
    import pandas  # noqa: F401 - (through the finder just installed)

    return True


def withhold_pyarrow_from_pandas() -> None:
    """Make the first import of pandas in this process, whenever it comes, one without pyarrow
    (``import pyarrow`` fails while pandas imports itself); nothing changes when pandas or pyarrow
    is imported already."""
    global _withheld
    if "pandas" in sys.modules or _PYARROW in sys.modules:
        return
    if not any(isinstance(finder, _PandasWithoutPyarrow) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PandasWithoutPyarrow())
    _withheld = True


class _PandasWithoutPyarrow(importlib.abc.MetaPathFinder):
    """Finds pandas as the other finders do, with a loader that hides pyarrow while pandas runs
    its own import; it steps aside after that one import."""

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # (the other finders: this one is gone)
        if spec is not None and spec.loader is not None and _PYARROW not in sys.modules:
            spec.loader = _WithoutPyarrow(spec.loader)
        return spec


class _WithoutPyarrow(importlib.abc.Loader):
    """A module's loader, run with ``import pyarrow`` failing (pandas then backs nothing with it)."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[_PYARROW] = None  # type: ignore[assignment]
        try:
            self.loader.exec_module(module)
        finally:
            if sys.modules.get(_PYARROW, "") is None:
                del sys.modules[_PYARROW]  # later imports of pyarrow (Parquet output) work as usual
            if module.__spec__ is not None:
                module.__spec__.loader = self.loader  # (the module's own loader, for whoever asks it)
            module.__loader__ = self.loader


def pyarrow_withheld() -> bool:
    """True when this process's pandas was, or will be, imported without pyarrow
    (:func:`import_pandas_without_pyarrow`, :func:`withhold_pyarrow_from_pandas`)."""
    return _withheld


def prepare_worker(withhold_pyarrow: bool, one_values_shared: bool, no_huge_page_advice: bool) -> None:
    """A worker process's first call (pool.py): the command line's allocator settings and
    numpy's huge-page advice as the command line left it (traceview/heap.py), pandas imported as
    the command line imported it, and one-value columns held as it holds them
    (arrays.share_one_values). (This module does not import pandas, so a spawned worker gets here
    before it does; a worker forked from the fork server had pandas imported there, by
    traceview/_pandas_without_pyarrow.py.)"""
    retain_freed_memory()
    if no_huge_page_advice:
        without_huge_page_advice()
    if withhold_pyarrow:
        withhold_pyarrow_from_pandas()
    if one_values_shared:
        from traceview.arrays import share_one_values  # (numpy, after pandas' own import above)

        share_one_values()
