"""The three C extensions built with AddressSanitizer and UndefinedBehaviorSanitizer, run on the
hostile corpus, the bundled traces, the decoder tests and a fixed-seed fuzz smoke: any report fails.

The regular build is -O3 with CPython's -fwrapv, under which a signed overflow wraps silently and
an out-of-bounds read usually goes unnoticed. Here setup.py builds the extensions into a temporary
folder with ``CFLAGS`` = :data:`SANITIZER_FLAGS` (setup.py lets CFLAGS set the optimisation level),
and each check runs in a child interpreter (``python -m tests.test_sanitizers TASK LIB``) with the
sanitizers' runtime preloaded, the Python allocator switched to malloc (so that ASan puts redzones
around the bytes objects and arrays the extensions read), and an import hook that loads the
sanitized modules in place of the installed ones; the child asserts it did.

Needs gcc and its sanitizer runtimes (on Debian: ``apt-get install gcc libasan8 libubsan1``);
without them the checks are skipped, saying so.
"""

from __future__ import annotations

import gzip
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
EXTENSIONS = ("traceview.readers._kineto_scan", "traceview.readers._xplane_wire", "traceview._passes")
# -fno-wrapv undoes CPython's -fwrapv, which defines signed overflow and so hides it from UBSan;
# -fno-sanitize-recover makes the first UB report fatal; float-cast-overflow (a double out of an
# integer's range converted to it) is not part of gcc's "undefined" group.
SANITIZER_FLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined,float-cast-overflow",
                   "-fno-wrapv", "-fno-sanitize-recover=undefined,float-cast-overflow")
# What the sanitizers print on stderr when they find something (with a non-zero exit status).
REPORT_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
                  "SUMMARY: AddressSanitizer")
# The decoder and pass tests run under the sanitizers: hand-written edge inputs of the scanner and
# the decoder, and the property tests of the passes (their real-trace cases are in the corpus task).
DECODER_TESTS = ("tests/test_kineto_scan.py", "tests/test_xplane_wire.py", "tests/test_nesting_paths.py")
DECODER_TESTS_DESELECTED = "not real_traces"
FUZZ_SEED = 37
PIPELINE_FUZZ_INPUTS = 150  # through the whole diagnosis: every pass of _passes.c
PIPELINE_FUZZ_SECONDS = 20.0
DECODER_FUZZ_INPUTS = 3000  # straight into the Kineto scanner and the XPlane decoder
DECODER_FUZZ_SECONDS = 30.0
DECODER_FUZZ_BLOCK_BYTES = 4096
CHILD_TIMEOUT_S = 240


# ---------------------------------------------------------------------------------------------
# The parent: build once, run each task in a child, fail on any report


def sanitizer_runtime() -> Path | None:
    """gcc's AddressSanitizer runtime (to preload: the interpreter is not built with it), or None."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    named = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    # (gcc prints the bare name back when it has no such file)
    return Path(named) if os.path.isabs(named) and os.path.exists(named) else None


def built_file(lib: Path, module: str) -> Path:
    return lib.joinpath(*module.split(".")).with_name(module.rsplit(".", 1)[1]
                                                       + importlib.machinery.EXTENSION_SUFFIXES[0])


def build_sanitized(source: Path, folder: Path) -> Path:
    """The three extensions of the checkout at ``source``, built by its setup.py with the sanitizer
    flags into ``folder``; the folder they are in."""
    lib = folder / "lib"
    env = {**os.environ, "CFLAGS": " ".join(SANITIZER_FLAGS), "LDFLAGS": "-fsanitize=address,undefined"}
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(lib),
                           "--build-temp", str(folder / "objects")],
                          cwd=source, env=env, capture_output=True, text=True, timeout=300)
    log = done.stdout + done.stderr
    # The extensions are optional: a failed compile is a warning, so each file is looked for.
    missing = [module for module in EXTENSIONS if not built_file(lib, module).is_file()]
    assert done.returncode == 0 and not missing, f"not built: {missing}\n{log[-4000:]}"
    compiles = [shlex.split(line) for line in log.splitlines() if line.startswith(("gcc ", "cc ")) and " -c " in line]
    assert len(compiles) == len(EXTENSIONS), log[-4000:]
    for command in compiles:  # the compiler takes the last -O it is given: CFLAGS', not setup.py's -O3
        assert [flag for flag in command if flag.startswith("-O")][-1] == "-O1", command
    return lib


@pytest.fixture(scope="module")
def sanitized_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if sanitizer_runtime() is None:
        pytest.skip("no gcc with AddressSanitizer's runtime (gcc -print-file-name=libasan.so finds none); "
                    "on Debian: apt-get install gcc libasan8 libubsan1")
    return build_sanitized(REPO, tmp_path_factory.mktemp("sanitized"))


def run_sanitized(lib: Path, task: str) -> str:
    """Run ``task`` in a child with the sanitized extensions; its stdout, or a failure with the report."""
    env = {**os.environ, "LD_PRELOAD": str(sanitizer_runtime()), "PYTHONMALLOC": "malloc", "NO_COLOR": "1",
           # Leaks: CPython keeps objects alive to its exit on purpose; the checks are for memory errors.
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    env.pop("TRACEVIEW_MAX_BYTES", None)
    done = subprocess.run([sys.executable, "-m", "tests.test_sanitizers", task, str(lib)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    reports = [marker for marker in REPORT_MARKERS if marker in done.stderr]
    assert done.returncode == 0 and not reports, (
        f"{task}: exit {done.returncode}, sanitizer reports {reports}\n--- stderr (end)\n{done.stderr[-8000:]}"
        f"\n--- stdout (end)\n{done.stdout[-2000:]}")
    return done.stdout


def test_hostile_corpus_and_bundled_traces_under_sanitizers(sanitized_lib: Path) -> None:
    assert "cases" in run_sanitized(sanitized_lib, "corpus")


def test_decoder_tests_under_sanitizers(sanitized_lib: Path) -> None:
    assert " passed" in run_sanitized(sanitized_lib, "decoder-tests")


def test_fuzz_smoke_under_sanitizers(sanitized_lib: Path) -> None:
    assert "inputs" in run_sanitized(sanitized_lib, "fuzz")


# ---------------------------------------------------------------------------------------------
# The child: load the sanitized extensions, then run one task. traceview, and the test modules that
# import it, are imported inside the tasks: only once the hook is in place.


class SanitizedExtensions(importlib.abc.MetaPathFinder):
    """Finds the three extensions in the sanitized build, ahead of every other finder."""

    def __init__(self, lib: Path) -> None:
        self.files = {module: built_file(lib, module) for module in EXTENSIONS}

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, file, loader=importlib.machinery.ExtensionFileLoader(fullname, str(file)))


def load_sanitized(lib: Path) -> None:
    already = [module for module in EXTENSIONS if module in sys.modules]
    assert not already, f"imported before the hook: {already}"
    finder = SanitizedExtensions(lib)
    sys.meta_path.insert(0, finder)
    from traceview import compiled
    from traceview.readers import kineto_scan, xplane_events

    loaded = {"traceview._passes": compiled.passes, "traceview.readers._kineto_scan": kineto_scan._kineto_scan,
              "traceview.readers._xplane_wire": xplane_events._xplane_wire}
    for module, file in finder.files.items():
        assert loaded[module] is sys.modules[module], module
        assert Path(loaded[module].__file__) == file, f"{module} loaded from {loaded[module].__file__}, not {file}"
    assert kineto_scan.available()
    with open("/proc/self/maps") as maps:
        assert "libasan" in maps.read(), "the sanitizer runtime is not loaded (LD_PRELOAD)"


def task_corpus() -> str:
    """Every hostile case through ``traceview diagnose`` (in this process, as
    tests/test_hostile_corpus.py runs it), with its expected exit code; a trace of dense events;
    every bundled trace."""
    from tests.hostile_corpus import CASES
    from tests.test_compiled_vs_arrays import bundled_traces
    from tests.test_hostile_corpus import run_cli

    wrong = []
    with tempfile.TemporaryDirectory(prefix="traceview-sanitized-") as work:
        for case in CASES:
            folder = Path(work) / case.name
            folder.mkdir()
            os.environ.pop("TRACEVIEW_MAX_BYTES", None)  # (--max-bytes sets it for the process)
            code, _, err = run_cli([*case.options, "diagnose", str(case.build(folder)), "--format", "json"])
            expected = case.expect.exit_code
            if code != expected and not case.xfail and not (case.skip_as_root and os.geteuid() == 0):
                wrong.append(f"{case.name}: exit {code}, expected {expected}: {err[-300:]}")
    os.environ.pop("TRACEVIEW_MAX_BYTES", None)
    with tempfile.TemporaryDirectory(prefix="traceview-sanitized-") as work:
        dense = Path(work) / "dense.json"
        dense.write_bytes(dense_events_text())
        code, _, err = run_cli(["diagnose", str(dense), "--format", "json"])
        if code != 0:
            wrong.append(f"{dense.name}: exit {code}: {err[-300:]}")
    traces = bundled_traces()
    for path in traces:
        code, _, err = run_cli(["diagnose", str(path), "--format", "json"])
        if "Traceback" in err or code not in (0, 2):
            wrong.append(f"{path}: exit {code}: {err[-300:]}")
    assert not wrong, "\n".join(wrong)
    return f"{len(CASES)} cases, {len(traces)} bundled traces, {dense.name}"


def dense_events_text(count: int = 5000) -> bytes:
    """A trace of events shorter than the Kineto scanner sizes its outputs for (96 bytes an event):
    they fill before the text ends (no hostile case or sample trace does), and the scan goes on
    with fresh ones."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(count)]
    return json.dumps({"traceEvents": events}, separators=(",", ":")).encode()


def task_decoder_tests() -> str:
    import pytest as runner

    # --capture=sys: pytest's default capture takes over file descriptor 2 during each test, where a
    # sanitizer's report would be lost when it aborts the process.
    code = runner.main(["-q", "-p", "no:cacheprovider", "--capture=sys", "-k", DECODER_TESTS_DESELECTED,
                        *DECODER_TESTS])
    assert code == 0, f"pytest exit {code}"
    return "pytest passed"


def task_fuzz() -> str:
    """The fuzz target's inputs, fixed seed: a few hundred through the whole diagnosis (every pass of
    _passes.c), then a few thousand straight into the two decoders (each stream stops early at its
    time bound)."""
    from tests.fuzz import fuzz, kineto_seeds, make_input, summary, xplane_seeds
    from traceview.readers import _json_stream

    stats = fuzz(seconds=PIPELINE_FUZZ_SECONDS, seed=FUZZ_SEED, save=None, max_inputs=PIPELINE_FUZZ_INPUTS,
                 timeout_s=60.0)
    report = summary(stats)
    assert stats.outcomes["INTERNAL"] == 0 and stats.outcomes["VIOLATION"] == 0, report
    # Small blocks: the scanner stops and resumes at many more places (partial elements carried
    # over, elements longer than a block), and its buffer ends close behind the text, where ASan
    # sees a read past it (a 32 MiB buffer would hide that, and zeroing it is most of a small read).
    _json_stream.BLOCK_BYTES = DECODER_FUZZ_BLOCK_BYTES
    rng = random.Random(FUZZ_SEED)
    seeds = kineto_seeds() + xplane_seeds()
    inputs = events = 0
    deadline = time.monotonic() + DECODER_FUZZ_SECONDS
    with tempfile.TemporaryDirectory(prefix="traceview-sanitized-fuzz-") as work:
        while inputs < DECODER_FUZZ_INPUTS and time.monotonic() < deadline:
            data, suffix, _ = make_input(seeds, rng)
            path = Path(work) / f"input{suffix}"
            path.write_bytes(data)
            events += decoded_events(path, data)
            inputs += 1
    return f"{stats.inputs} inputs diagnosed; {inputs} inputs decoded ({events} events)\n{report}"


def decoded_events(path: Path, data: bytes) -> int:
    """Run the compiled decoder of the file's format on it as its reader calls it (the Kineto scanner
    block by block; the XPlane skeleton cutter, then each line's events); how many events it gave."""
    from traceview.errors import TraceviewError
    from traceview.readers import kineto_scan, xplane_space
    from traceview.readers._json_stream import Declined
    from traceview.readers.proto.xplane_descriptor import message_classes

    try:
        if ".xplane.pb" not in path.name:
            return sum(block.count for block in kineto_scan.EventScanner(path).blocks())
        classes = message_classes()
        space = xplane_space.read_space(path, gzip.decompress(data) if path.suffix == ".gz" else data, classes)
        lines = [line.decode(classes["XLine"]) for plane in space.planes for line in plane.lines]
        return sum(len(line.ts) for line in lines if line is not None)
    except (Declined, TraceviewError, EOFError, OSError, zlib.error):  # refused, as the readers refuse it
        return 0


TASKS: dict[str, Callable[[], str]] = {"corpus": task_corpus, "decoder-tests": task_decoder_tests,
                                       "fuzz": task_fuzz}


def main(argv: list[str]) -> int:
    task, lib = argv
    load_sanitized(Path(lib))
    sys.stdout.write(TASKS[task]() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
