"""Golden dump of the normalized timeline of every sample trace: per distinct (kind, role,
parent's role, name), how many events, and how many fall inside steps. A rule change in a
reader, in the role table or in the nesting shows here as exactly the events that changed
meaning. Regenerate after an intended change with

    TRACEVIEW_UPDATE_GOLDENS=1 python -m pytest tests/test_timeline_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES
from traceview.loader import load_with_steps, trace_paths

GOLDEN = Path(__file__).parent / "golden" / "timeline"
UPDATE = os.environ.get("TRACEVIEW_UPDATE_GOLDENS") == "1"
CAPTURES = sorted(p for p in SAMPLES.glob("*/*") if p.is_dir()) if SAMPLES.is_dir() else []


def timeline_dump(folder: Path) -> str:
    timeline, _ = load_with_steps(trace_paths(folder)[0])
    ev = timeline.events
    parent = ev["parent"].to_numpy()
    role = ev["role"].astype(str).to_numpy()
    frame = pd.DataFrame({
        "kind": ev["kind"].astype(str).to_numpy(),
        "role": role,
        "parent_role": np.where(parent >= 0, role[np.maximum(parent, 0)], "-"),
        "name": ev["name"].astype(str).str.slice(0, 160).to_numpy(),
        "in_step": ev["step"].to_numpy() >= 0,
    })
    counts = frame.groupby(["kind", "role", "parent_role", "name"], sort=True)["in_step"].agg(["size", "sum"])
    lines = ["kind\trole\tparent_role\tname\tevents\tin_steps"]
    lines += [f"{k}\t{r}\t{p}\t{n}\t{int(size)}\t{int(total)}" for (k, r, p, n), (size, total) in counts.iterrows()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("folder", CAPTURES, ids=[f"{p.parent.name}/{p.name}" for p in CAPTURES])
def test_timeline_matches_golden(folder: Path):
    golden = GOLDEN / f"{folder.parent.name}__{folder.name}.tsv"
    out = timeline_dump(folder)
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert golden.exists(), f"no golden {golden.name}: run with TRACEVIEW_UPDATE_GOLDENS=1"
    assert out == golden.read_text(encoding="utf-8"), f"{golden.name} differs: rerun with TRACEVIEW_UPDATE_GOLDENS=1 if intended"
