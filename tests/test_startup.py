"""What the command line imports before it reads a trace: the parser and the analyses, not
libraries it does not use (pyproject.toml pins typer below the release that imports pydantic)."""

from __future__ import annotations

import subprocess
from pathlib import Path
import sys

_PROBE = """
import sys
from traceview.cli import main
try:
    main(["diagnose", "--help"])
except SystemExit:
    pass
print("MODULES", " ".join(sorted(name for name in sys.modules if "." not in name)))
"""


def test_the_command_line_does_not_import_pydantic() -> None:
    loaded = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    top_level = loaded.splitlines()[-1].split()[1:]
    assert "typer" in top_level
    assert "pydantic" not in top_level


_DIAGNOSE_ONE = """
import sys
from traceview.cli import main
main(["diagnose", sys.argv[1], "--format", "json", "-o", sys.argv[2]])
print("MODULES", " ".join(sorted(sys.modules)))
"""


def test_a_lone_trace_s_diagnosis_imports_neither_the_pool_nor_the_comparison(tmp_path) -> None:
    """Both are a folder's (several traces: worker processes, framework comparisons); their
    imports (concurrent.futures, multiprocessing, the comparison's analyses) would be a tenth
    of a small trace's diagnosis."""
    trace = next((Path(__file__).parent.parent / "sample_traces" / "mlp2" / "torch-eager").glob("*.json.gz"))
    loaded = subprocess.run([sys.executable, "-c", _DIAGNOSE_ONE, str(trace), str(tmp_path / "report.json")],
                            capture_output=True, text=True, check=True).stdout.splitlines()[-1].split()[1:]
    assert "traceview.analyzers.diagnosis" in loaded
    assert "traceview.pool" not in loaded
    assert "traceview.analyzers.compare" not in loaded
    assert "concurrent.futures.process" not in loaded
