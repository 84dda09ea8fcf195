"""The console script imports pandas without pyarrow for reports (traceview/pandas_import.py):
the reports are the same bytes as with pyarrow loaded, and Parquet output still works after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, sample_kineto_traces, sample_xplane_traces

pyarrow = pytest.importorskip("pyarrow")

_ENV = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
# The console script, reporting on stderr whether pyarrow was loaded when it left.
_CONSOLE = ("import sys, traceview.cli as cli\n"
            "cli._leave_without_teardown = lambda: print('pyarrow' in sys.modules, file=sys.stderr)\n"
            "cli.console_main()")
# The library entry point in an interpreter where pandas sees pyarrow.
_LIBRARY = "import sys, pyarrow\nfrom traceview.cli import main\nmain(sys.argv[1:])"


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, env=_ENV,
                          timeout=300)


def _first(traces: list[Path]) -> Path:
    if not traces:
        pytest.skip("no sample trace of this format")
    return traces[0]


@pytest.mark.parametrize("fmt", ["terminal", "md", "json", "html"])
def test_reports_are_the_same_bytes_without_pyarrow(tmp_path: Path, fmt: str) -> None:
    kineto, xplane = _first(sample_kineto_traces()), _first(sample_xplane_traces())
    for command in (["diagnose", str(kineto)], ["diagnose", str(xplane)], ["compare", str(kineto), str(xplane)]):
        lean, usual = tmp_path / "lean", tmp_path / "usual"
        console = _run(_CONSOLE, *command, "-f", fmt, "-o", str(lean))
        library = _run(_LIBRARY, *command, "-f", fmt, "-o", str(usual))
        assert console.returncode == 0 and library.returncode == 0, (console.stderr, library.stderr)
        assert console.stderr.strip().endswith("False"), console.stderr  # pyarrow never loaded
        assert lean.read_bytes() == usual.read_bytes(), command


def test_worker_processes_import_pandas_as_the_command_line_did(tmp_path: Path) -> None:
    # A folder of captures is read by worker processes (pool.py), whose results this process's
    # pandas unpickles: a column a pyarrow-seeing worker backed with pyarrow would not come back.
    folder = _first(sample_kineto_traces()).parent.parent
    lean, usual = tmp_path / "lean", tmp_path / "usual"
    console = _run(_CONSOLE, "diagnose", str(folder), "-j", "2", "-f", "json", "-o", str(lean))
    library = _run(_LIBRARY, "diagnose", str(folder), "-j", "2", "-f", "json", "-o", str(usual))
    assert console.returncode == 0 and library.returncode == 0, (console.stderr, library.stderr)
    assert lean.read_bytes() == usual.read_bytes()


def test_parquet_output_works_after_pandas_was_imported_without_pyarrow(tmp_path: Path) -> None:
    trace = _first(sample_kineto_traces())
    code = ("import sys\nfrom traceview.pandas_import import import_pandas_without_pyarrow\n"
            "assert import_pandas_without_pyarrow() and not import_pandas_without_pyarrow()\n"
            "assert 'pyarrow' not in sys.modules\n"
            "from traceview.cli import main\nmain(sys.argv[1:])")
    lean, usual = tmp_path / "lean", tmp_path / "usual"
    for script, out in ((code, lean), (_LIBRARY, usual)):
        result = _run(script, "normalize", str(trace), "-o", str(out))
        assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in lean.glob("*.parquet"))
    assert names and names == sorted(p.name for p in usual.glob("*.parquet"))
    import pyarrow.parquet as pq

    for name in names:
        assert pq.read_table(lean / name).equals(pq.read_table(usual / name)), name


# The console script with pandas unimportable: any import of it fails the command.
_NO_PANDAS = ("import sys\n"
              "class NoPandas:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name.partition('.')[0] == 'pandas':\n"
              "            raise ImportError('pandas was imported')\n"
              "sys.meta_path.insert(0, NoPandas())\n"
              "import traceview.cli as cli\n"
              "cli.console_main()")


@pytest.mark.parametrize("fmt", ["terminal", "md", "json", "html"])
def test_a_diagnosis_of_one_trace_imports_no_pandas(tmp_path: Path, fmt: str) -> None:
    # pandas' import is a third of a diagnosis of a 54 MB trace and a tenth of one of a 104 MB
    # XPlane (benchmarks/README.md): the readers, analyses and reports read numpy columns
    # (traceview/table.py), and give the same bytes. (Only an XPlane's memory records bring
    # pandas in: readers/xplane_memory.py; the first sample XPlanes, a JAX and a TF one, have none.)
    for trace in sample_kineto_traces()[:3] + sample_xplane_traces()[:2]:
        lean, usual = tmp_path / "lean", tmp_path / "usual"
        console = _run(_NO_PANDAS, "diagnose", str(trace), "-f", fmt, "-o", str(lean))
        library = _run(_LIBRARY, "diagnose", str(trace), "-f", fmt, "-o", str(usual))
        assert console.returncode == 0 and library.returncode == 0, (console.stderr, library.stderr)
        assert lean.read_bytes() == usual.read_bytes(), trace
