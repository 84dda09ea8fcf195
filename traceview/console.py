"""What the ``traceview`` console script does before it loads the command line (traceview/__main__.py).

A diagnosis of a 54 MB trace spends more of its wall clock loading libraries (the command-line
parser, numpy, the analyses) than analysing, and the reading of the trace needs none of
them. So the console script, before importing anything heavy, starts the read-ahead
(readers/_prefetch.py) for the files it can tell are a trace-reading command's arguments
without the parser: the words after ``diagnose`` or ``compare`` that are existing files and do
not follow an option (``--format json`` takes a value, ``--strict`` does not, and only the
parser knows which is which, so a word after any option waits for it). The command line then
starts the ones it finds only with the parser (cli._start_reading); a file already being read
is not read again.

The imports also run with the cyclic garbage collector paused: loading the libraries creates
many objects without a cycle among them, and the collector would scan them again and again as
they appear (with pandas, ~0.04 s of a 0.55 s diagnosis here; a diagnosis no longer imports it). Once the command line has its
libraries (cli._main), what the imports made is set aside from later collections
(``gc.freeze``) and the collector resumes, so the analyses' garbage is collected as ever.

The commands that read and analyse traces do no linear algebra, yet numpy's OpenBLAS starts a
worker thread per further core when numpy is imported, and those threads spin waiting for work
while the trace is read and the analyses load: on a 2-core machine the spinning was the largest
single item of a 54 MB diagnosis's CPU samples (7.6 % of them, under ``perf``), taken from the
two threads that read and import (without it: 0.94 -> 0.84 s of CPU, 0.70 -> 0.64 s wall,
medians of seven). So, for those commands, the console script asks
OpenBLAS for one thread (:func:`without_blas_threads`) before anything imports numpy, unless the
user chose a number (their worker processes inherit it with the environment).
"""

from __future__ import annotations

import gc
import os
import sys

# Commands whose file arguments are traces read from start to end (cli.py registers them).
TRACE_READING_COMMANDS = ("diagnose", "compare", "whatif")
PREFETCHED_FILES = 2  # a diagnosis reads one trace, a comparison two
# Commands that read and analyse traces and do no linear algebra (cli.py registers them); the
# others run workloads (collect, run) or hand SQL to DuckDB (query), and keep OpenBLAS's threads.
ANALYSING_COMMANDS = ("diagnose", "compare", "whatif", "export", "normalize")
# The variables OpenBLAS reads its thread count from, in its order (OpenBLAS driver/others/
# openblas_env.c): where the user set any, their choice stands.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


_collector_paused = [False]  # whether start() paused the garbage collector, till resume_collector()


def start(words: list[str]) -> None:
    """Pause the collector and start reading the traces ``words`` surely names (the console
    script's arguments), before the command line is loaded (traceview/__main__.py)."""
    if gc.isenabled():
        gc.disable()
        _collector_paused[0] = True
    if words and words[0] in ANALYSING_COMMANDS:
        without_blas_threads()
    if "--help" in words:
        return
    from traceview.heap import retain_freed_memory

    retain_freed_memory()  # before the read-ahead's first large buffer: see traceview/heap.py
    paths = surely_trace_arguments(words)[:PREFETCHED_FILES]
    if not paths:
        return
    from traceview.heap import without_huge_page_advice
    from traceview.readers import _prefetch

    for path in paths:
        _prefetch.start(path)
    # numpy and the scanner first, the parser after: the reading thread inflates the file
    # meanwhile, and its scanner can start only once numpy is imported (it writes numpy columns).
    without_huge_page_advice()
    _prefetch.load_scanner()


def without_blas_threads() -> bool:
    """Ask numpy's OpenBLAS for no worker threads (it reads the setting when numpy is imported,
    so this comes first); True where it was set here, False where the user set a number or
    numpy is already imported."""
    if any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES) or "numpy" in sys.modules:
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


def surely_trace_arguments(words: list[str]) -> list[str]:
    """The words of ``words`` that are surely file arguments of a trace-reading command, told
    without the parser: after the command name (the first word, so that no root option's value
    is taken for it), not an option, not right after an option (which may take it as its
    value), and an existing regular file. Every word returned is one the parser takes as an
    argument too; some of its arguments may be missing here."""
    if not words or words[0] not in TRACE_READING_COMMANDS:
        return []
    found: list[str] = []
    after_option = False
    for index, word in enumerate(words[1:], start=1):
        if word == "--":
            found.extend(w for w in words[index + 1:] if os.path.isfile(w))
            break
        if not word.startswith("-") and not after_option and os.path.isfile(word):
            found.append(word)
        after_option = word.startswith("-") and "=" not in word
    return found


def resume_collector() -> None:
    """Resume the garbage collector where :func:`start` paused it, the objects made so far set
    aside from later collections (the libraries' own: they live as long as the process)."""
    if _collector_paused[0]:
        _collector_paused[0] = False
        gc.freeze()
        gc.enable()
