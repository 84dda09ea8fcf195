"""Golden outputs: the whole terminal (80 columns, no colour), markdown and JSON reports of
sample traces, compared byte for byte. Regenerate after an intended change with

    TRACEVIEW_UPDATE_GOLDENS=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TRACEVIEW_UPDATE_GOLDENS") == "1"

CASES = {
    "diagnose_mlp2_torch_eager": ["diagnose", "sample_traces/mlp2/torch-eager"],
    "diagnose_mlp2_tf_eager": ["diagnose", "sample_traces/mlp2/tf-eager"],
    "diagnose_mlp2_tf_function": ["diagnose", "sample_traces/mlp2/tf-function"],
    "compare_mlp2_torch_eager_tf_eager": ["compare", "sample_traces/mlp2/torch-eager", "sample_traces/mlp2/tf-eager"],
}
FORMATS = {"terminal": ".txt", "md": ".md", "json": ".json", "html": ".html"}


def _run(args: list[str], fmt: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "traceview", *args, "--format", fmt, "--width", "80"],
        capture_output=True, text=True, cwd=REPO, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_report_matches_golden(case, fmt):
    args = CASES[case]
    if not all((REPO / a).exists() for a in args[1:]):
        pytest.skip(f"sample traces for {case} not present in {SAMPLES}")
    out = _run(args, fmt)
    golden = GOLDEN / f"{case}{FORMATS[fmt]}"
    if UPDATE:
        golden.write_text(out, encoding="utf-8")
    assert golden.exists(), f"no golden {golden.name}: run with TRACEVIEW_UPDATE_GOLDENS=1"
    assert out == golden.read_text(encoding="utf-8"), f"{golden.name} differs: rerun with TRACEVIEW_UPDATE_GOLDENS=1 if intended"
    if fmt == "terminal":
        assert max(len(line) for line in out.splitlines()) <= 80
        assert "\x1b[" not in out
