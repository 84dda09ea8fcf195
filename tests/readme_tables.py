"""The tables benchmarks/truth/README.md holds between ``<!-- name -->`` markers, each the output
of one benchmark module's ``--markdown`` run: what the module prints now, and whether the README
still holds it."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRUTH_README = ROOT / "benchmarks" / "truth" / "README.md"


def markdown_of(module: str) -> str:
    """What ``python -m benchmarks.<module> --markdown`` prints."""
    runner = importlib.import_module(f"benchmarks.{module}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", [module, "--markdown"])
        runner.main()
    return out.getvalue()


def assert_readme_holds(marker: str, module: str, printed: str) -> None:
    """The truth README's ``<!-- marker -->`` block is ``printed`` (``benchmarks.<module>``'s)."""
    block = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", TRUTH_README.read_text(), re.S)
    assert block, f"benchmarks/truth/README.md lost its {marker} block"
    assert block.group(1).strip() == printed.strip(), \
        f"regenerate the block with: python -m benchmarks.{module} --markdown"
