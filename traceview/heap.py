"""Keep freed memory in the process for the next array instead of handing it back to the system.

An analysis allocates and frees arrays of tens to hundreds of MB, one after another (a sorted
copy of a column, a mask, the pieces of an attribution). glibc serves each allocation above its
mmap threshold (at most 32 MB) with a fresh ``mmap`` and returns it with ``munmap`` when freed,
so every such array is new memory to the kernel, which faults each of its pages in again. A page
fault costs about 0.25 µs on bare metal and 5–10 µs in a virtual machine whose memory the host
backs lazily: on a 1 GB trace that was a quarter of the run (``benchmarks/README.md``).

With mmap off for the heap and trimming held back, a freed array's pages stay with the process
and the next array reuses them without a fault. One arena for all threads: the trace is read on
a thread of its own while the analyses are imported (readers/_prefetch.py), and memory that
thread frees must be there for the main thread's arrays (glibc would give the thread an arena
of its own, whose free memory the main thread never takes). The cost is that the process keeps its
high-water mark until it exits, which for a command that reads one trace and ends is the peak it
reached anyway.

numpy, for its part, asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``)
for every array of 4 MB or more. Where the kernel has free 2 MB blocks at hand that is cheaper
than 4 KB pages, but once it has none it stops each fault to compact memory for one, and in a
virtual machine the free blocks are mostly memory the host has not backed yet: here numpy's
allocations of 41 MB, 40 in a row, took 0.2 ms per MB for the first five and 2.2 ms per MB by the
last (0.4–0.8 ms per MB throughout without the advice), and a 1 GB trace's diagnosis took 6.7 s
with it against 5.4 s without. A diagnosis writes each array once and reads it in a few
sequential passes, where huge pages save little, so the command line asks numpy not to advise
them (:func:`without_huge_page_advice`), unless ``NUMPY_MADVISE_HUGEPAGE`` says otherwise.

Only the command line and its worker processes call these: a program that imports traceview as
a library keeps its own allocator settings.
"""

from __future__ import annotations

import ctypes
import os
import sys

# mallopt parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# numpy's own switch for its huge-page advice, read when numpy is imported (numpy/__init__.py);
# where the user set it, their choice stands.
_NUMPY_HUGEPAGE_VARIABLE = "NUMPY_MADVISE_HUGEPAGE"
_huge_page_advice_off = [False]  # whether without_huge_page_advice() changed it in this process
# Free memory at the top of the heap is given back only beyond this (glibc takes an int).
_TRIM_THRESHOLD = 2**31 - 1


def retain_freed_memory() -> bool:
    """Ask glibc to serve large allocations from the heap and keep freed memory for reuse.
    Returns whether it took the settings (False off Linux or on another C library)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present on glibc only (musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mallopt(_M_ARENA_MAX, 1)  # (a help, not a need: the reuse below holds per arena without it)
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


def without_huge_page_advice() -> bool:
    """Stop numpy from advising transparent huge pages for this process's arrays (imports
    numpy). Returns whether the setting changed: not where ``NUMPY_MADVISE_HUGEPAGE`` is set, nor
    where this numpy has no such switch."""
    if os.environ.get(_NUMPY_HUGEPAGE_VARIABLE) is not None:
        return False
    import numpy  # noqa: F401 - (numpy sets its advice at import: it must come first)

    # The switch numpy's import calls itself (numpy >= 2: numpy._core; before: numpy.core).
    multiarray = sys.modules.get("numpy._core.multiarray") or sys.modules.get("numpy.core.multiarray")
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is None:
        return False
    setter(False)
    _huge_page_advice_off[0] = True
    return True


def huge_page_advice_off() -> bool:
    """Whether :func:`without_huge_page_advice` turned the advice off in this process (its
    worker processes do as it did)."""
    return _huge_page_advice_off[0]
