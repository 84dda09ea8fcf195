"""The command line keeps freed memory for reuse (traceview/heap.py): a large array allocated
after another was freed takes the same pages, without faulting them in again, also when the
first was allocated on another thread (the command line reads the trace on one)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import resource, sys
import numpy as np
from traceview.heap import retain_freed_memory
took = retain_freed_memory() if sys.argv[1] == "retain" else False
def faults_of_one_array():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(64 * 2**20 // 8)  # 64 MB: above glibc's largest mmap threshold
    del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
if sys.argv[2] == "thread":
    import threading
    counted = []
    thread = threading.Thread(target=lambda: counted.append(faults_of_one_array()))
    thread.start()
    thread.join()
    first = counted[0]
else:
    first = faults_of_one_array()
second = faults_of_one_array()
print(int(took), first, second)
"""


def _probe(mode: str, first_on: str = "main") -> tuple[bool, int, int]:
    out = subprocess.run([sys.executable, "-c", _PROBE, mode, first_on], capture_output=True, text=True,
                         check=True).stdout
    took, first, second = (int(x) for x in out.split())
    return bool(took), first, second


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize("first_on", ["main", "thread"])
def test_a_freed_array_is_reused_without_faults(first_on: str) -> None:
    took, first, second = _probe("retain", first_on)
    if not took:
        pytest.skip("not glibc: the settings are not available")
    assert first > 100  # 64 MB of fresh pages (faulted in blocks of 4 KB to 2 MB)
    assert second < first / 10


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_without_the_settings_each_array_is_new_memory() -> None:
    # The control: the default allocator maps and unmaps the array, so it faults again.
    _, first, second = _probe("default")
    assert second > first / 2


def test_the_command_line_takes_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from traceview import cli

    calls: list[bool] = []
    monkeypatch.setattr(cli, "retain_freed_memory", lambda: calls.append(True) or True)
    cli.main(["--version"])
    assert calls == [True]
