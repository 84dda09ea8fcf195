"""What the command line imports before it reads a trace: the parser and the analyses, not
libraries it does not use (pyproject.toml pins typer below the release that imports pydantic)."""

from __future__ import annotations

import subprocess
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
