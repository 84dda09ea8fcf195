"""The command line keeps freed memory for reuse (traceview/heap.py): a large array allocated
after another was freed takes the same pages, without faulting them in again, also when the
first was allocated on another thread (the command line reads the trace on one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, sample_kineto_traces

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


# numpy's huge-page advice (heap.without_huge_page_advice): the huge pages a 64 MB array got, in a
# process that turned the advice off or not ("off" / "as numpy sets it"), as the command line
# allocates (retain_freed_memory first).
_HUGE_PAGE_PROBE = """
import sys
from traceview.heap import huge_page_advice_off, retain_freed_memory, without_huge_page_advice
retain_freed_memory()
changed = without_huge_page_advice() if sys.argv[1] == "off" else False
import numpy as np
a = np.ones(64 * 2**20 // 8)
huge_kb = sum(int(line.split()[1]) for line in open("/proc/self/smaps_rollup") if line.startswith("AnonHugePages:"))
print(int(changed), int(huge_page_advice_off()), huge_kb)
"""
_THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _huge_page_probe(mode: str, numpy_setting: str | None = None) -> tuple[bool, bool, int]:
    """(whether the advice changed, whether the process says it is off, huge pages in KB);
    ``numpy_setting``: the user's NUMPY_MADVISE_HUGEPAGE, or none."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if numpy_setting is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = numpy_setting
    out = subprocess.run([sys.executable, "-c", _HUGE_PAGE_PROBE, mode], capture_output=True, text=True, check=True,
                         env=env).stdout
    changed, off, huge_kb = (int(x) for x in out.split())
    return bool(changed), bool(off), huge_kb


def _huge_pages_on_advice() -> bool:
    """Whether the kernel gives huge pages to memory advised for them (and only then: with
    "always" it gives them unadvised as well, so advice or none cannot be told apart)."""
    return _THP_SETTING.exists() and "[madvise]" in _THP_SETTING.read_text()


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux's per-process memory summary")
def test_without_the_advice_a_large_array_gets_no_huge_pages() -> None:
    changed, off, huge_kb = _huge_page_probe("off")
    if not changed:
        pytest.skip("this numpy has no switch for its huge-page advice")
    assert off
    if _huge_pages_on_advice():
        assert huge_kb == 0
        # The control: with numpy's advice as it sets it, the same array is backed by huge pages.
        _, off, huge_kb = _huge_page_probe("as numpy sets it")
        assert not off and huge_kb > 0


def test_the_users_numpy_setting_stands() -> None:
    changed, off, _ = _huge_page_probe("off", numpy_setting="1")
    assert not changed and not off


_CONSOLE = ("import atexit, sys, traceview.cli as cli\n"
            "calls = []\n"
            "cli.without_huge_page_advice = lambda: calls.append(True) or True\n"
            "cli._leave_without_teardown = lambda: None\n"
            "atexit.register(lambda: print('advice calls', len(calls), file=sys.stderr))\n"
            "cli.console_main()")


@pytest.mark.parametrize(("arguments", "calls"), [(["diagnose", "{trace}", "-f", "json", "-o", "{out}"], 1),
                                                   (["--help"], 0)])
def test_the_console_script_turns_the_advice_off_for_a_trace(tmp_path: Path, arguments: list[str], calls: int) -> None:
    # (Not for --help and the like: numpy is not imported for them at all.)
    traces = sample_kineto_traces()
    if not traces:
        pytest.skip("no sample trace")
    words = [w.format(trace=traces[0], out=tmp_path / "report.json") for w in arguments]
    done = subprocess.run([sys.executable, "-c", _CONSOLE, *words], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"advice calls {calls}" in done.stderr
