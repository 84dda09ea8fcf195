"""Shared fixtures: where the real traces live, and a CLI runner that pins the terminal."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"
SHARED_TRACES = REPO.parent / "shared" / "traces"

TORCH_GPU_TRACES = sorted((SHARED_TRACES / "torch_gpu").glob("*.json.gz")) if SHARED_TRACES.is_dir() else []
XPLANE_GPU_TRACES = sorted((SHARED_TRACES / "xplane_gpu").glob("*.xplane.pb")) if SHARED_TRACES.is_dir() else []


def shared_trace(relative: str) -> Path:
    """A trace from ../shared/traces, or a clean skip when that folder is not beside the repo."""
    path = SHARED_TRACES / relative
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/traces is only beside the development checkout)")
    return path


def sample_kineto_traces() -> list[Path]:
    return sorted(SAMPLES.rglob("*.pt.trace.json.gz")) + sorted(SAMPLES.rglob("*.pt.trace.json"))


def sample_xplane_traces() -> list[Path]:
    return sorted(SAMPLES.rglob("*.xplane.pb"))


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports rendered in tests are uncoloured and of fixed width."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("TRACEVIEW_DEBUG", raising=False)
    os.environ.pop("FORCE_COLOR", None)


@lru_cache(maxsize=None)
def cached_diagnosis(path: Path):  # noqa: ANN201 - Diagnosis; read-only use in tests
    """One diagnosis per trace for the whole session (the large traces take seconds to read)."""
    from traceview.loader import diagnose

    return diagnose(path)


def gen_docs():  # noqa: ANN201 - the scripts/gen_docs.py module
    """scripts/gen_docs.py as a module: its blocks and ``render`` check that the docs are current."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
