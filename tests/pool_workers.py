"""Per-trace functions for tests/test_pool.py, importable by worker processes."""

from __future__ import annotations

import os
from pathlib import Path


def _refuse() -> None:
    raise ValueError("this result cannot be rebuilt")


class Unreadable:
    """A result that pickles in the worker and fails to unpickle in the parent."""

    def __reduce__(self):  # noqa: ANN204
        return (_refuse, ())


def unreadable_result(path: Path) -> Unreadable:
    return Unreadable()


def die(path: Path) -> None:
    os._exit(9)  # as the kernel's out-of-memory killer ends a worker: no exception, no result


def name_of(path: Path) -> str:
    return path.name
