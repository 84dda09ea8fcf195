"""The XPlane wire decoding of events changes no number: every sample and shared XPlane reads to
the same timeline as through the protobuf runtime, column by column."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_fast_path import assert_same_timeline
from traceview.readers import xplane, xplane_events

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"
XPLANES = sorted((ROOT / "sample_traces").rglob("*.xplane.pb*")) + sorted((ROOT / "tests" / "data").rglob("*.xplane.pb*"))
if SHARED.is_dir():
    XPLANES += sorted(SHARED.rglob("*.xplane.pb*"))


@pytest.mark.parametrize("path", XPLANES, ids=lambda p: str(p.relative_to(p.parents[3])))
def test_wire_decoding_equals_runtime(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    declined: list[int] = []
    real = xplane_events.decode_line

    def counting(line, line_class):  # noqa: ANN001, ANN202
        result = real(line, line_class)
        if result is None and len(line.events):
            declined.append(len(line.events))
        return result

    monkeypatch.setattr(xplane, "decode_line", counting)
    fast = xplane.read(path)
    assert not declined, f"wire decoding declined lines of a real trace ({declined})"
    monkeypatch.setattr(xplane, "decode_line", lambda line, line_class: None)
    assert_same_timeline(fast, xplane.read(path))
