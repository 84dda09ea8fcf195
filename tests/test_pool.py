"""The worker pool (traceview/pool.py): results in input order; a worker that dies is a user
error naming --jobs, a result that cannot be read back is a defect, never called "out of memory"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import pool_workers
from traceview.errors import InputError
from traceview.pool import map_traces

PATHS = [Path(f"/nowhere/trace{i}.json") for i in range(3)]


def test_results_come_back_in_input_order() -> None:
    assert map_traces(pool_workers.name_of, PATHS, jobs=2) == [p.name for p in PATHS]


def test_a_dead_worker_is_one_user_error_naming_jobs() -> None:
    with pytest.raises(InputError, match=r"died .*--jobs \(was 2\)"):
        map_traces(pool_workers.die, PATHS, jobs=2)


def test_a_result_that_cannot_be_read_back_is_a_defect() -> None:
    with pytest.raises(RuntimeError, match="could not be read back .*this result cannot be rebuilt"):
        map_traces(pool_workers.unreadable_result, PATHS, jobs=2)
