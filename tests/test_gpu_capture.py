"""The dry run of benchmarks/gpu/capture.py on the CPU: the one script a GPU run depends on must not fail
there on a bug that a CPU run would have shown (GPU time is short and each rerun costs it)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import traceview

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("torch")


def test_the_dry_run_captures_measures_and_packs_within_the_device_limits(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.gpu.capture", "--device", "cpu", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert not summary["errors"]
    # (torch's cases in one process, JAX's in another: each profiler has CUPTI to itself)
    assert [row["case"] for row in summary["cases"]] == ["gpu-item-sync", "gpu-tiny-ops", "gpu-jax-sync"]
    assert all("cost_ms" in row for row in summary["cases"])
    assert [c["returncode"] for c in summary["collect"]] == [0]
    # What a leased GPU machine hands back: at most 8 files of at most 16 MiB, none in a subfolder.
    files = sorted(out.iterdir())
    assert len(files) <= 8 and all(f.is_file() and f.stat().st_size <= 16 * 2**20 for f in files)
    data = b"".join(p.read_bytes() for p in sorted(out.glob("capture.tar.gz.part*")))
    unpacked = tmp_path / "unpacked"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(unpacked, filter="data")
    for case in ("gpu-item-sync", "gpu-tiny-ops", "gpu-jax-sync"):
        folder = unpacked / "gpu_capture" / "cases" / case
        truth = json.loads((folder / "ground_truth.json").read_text())
        assert truth["case"]["expected_finding"] and set(truth["traces"]) == {"clean", "injected"}
        for trace in truth["traces"].values():
            diag = traceview.diagnose(folder / trace)
            assert len(diag.steps.table) == 2  # the two profiled steps, each under its ProfilerStep marker
    collected = list((unpacked / "gpu_capture" / "collect" / "mlp2").glob("*/manifest.json"))
    assert collected, "the collector's captures are in the archive"
    # adopt.py turns the capture into the scorer's case folders, which the scorer reads.
    from benchmarks.gpu import adopt
    from benchmarks.truth import score

    cases = tmp_path / "cases"
    monkeypatch.setattr(adopt, "CASES_DIR", cases)
    summary_facts = json.loads((unpacked / "gpu_capture" / "summary.json").read_text())["machine"]
    for case in ("gpu-tiny-ops", "gpu-jax-sync"):
        doc = adopt.adopt_case(unpacked / "gpu_capture" / "cases" / case, summary_facts, 4 * 2**20, 3)
        assert doc["profiled_sync"] == "once, after the last profiled step"
        assert doc["score"]["against"] in ("unprofiled", "in_trace")
        scored = score.score_case(cases / case)
        assert not scored.error, scored.error
