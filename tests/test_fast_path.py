"""The fast Kineto decoding changes no number: its timeline equals the reference decoding's
(orjson, event by event), column by column, on every sample and shared trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from traceview.readers import kineto, kineto_fields
from traceview.readers._io import head_bytes
from traceview.readers._json_stream import Declined
from traceview.table import Labels

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"


def _kineto_files() -> list[Path]:
    found = [p for p in sorted((ROOT / "sample_traces").rglob("*.json*")) if p.name != "manifest.json"]
    found += sorted((ROOT / "tests" / "data").rglob("*.pt.trace.json*"))
    if SHARED.is_dir():
        found += sorted(SHARED.rglob("*.json.gz"))
    return [p for p in found if kineto.sniff(head_bytes(p))]


def assert_same_timeline(fast, reference) -> None:
    for a, b in ((fast.table, reference.table), (fast.memory, reference.memory)):
        if a is None or b is None:
            assert a is None and b is None
            continue
        assert a.columns == b.columns
        for column in a.columns:
            left, right = a[column], b[column]
            if isinstance(left, Labels):
                assert isinstance(right, Labels), column
                assert left.categories.tolist() == right.categories.tolist(), column
                assert np.array_equal(left.codes, right.codes), column
            else:
                assert left.dtype == right.dtype, column
                assert np.array_equal(left, right), column
    for field in ("origin_ns", "input_events", "dropped", "notes", "extra", "host_name", "devices", "framework"):
        assert getattr(fast.meta, field) == getattr(reference.meta, field), field
    assert list(fast.meta.dropped) == list(reference.meta.dropped)  # same order too


@pytest.mark.parametrize("path", _kineto_files(), ids=lambda p: str(p.relative_to(p.parents[2])))
def test_fast_paths_equal_reference(path: Path) -> None:
    reference = kineto.read_reference(path)
    for decoding in (kineto.read_scanned, kineto.read_fast):
        try:
            fast = decoding(path)
        except Declined as why:
            pytest.fail(f"{decoding.__name__} declined a real trace: {why}")
        assert_same_timeline(fast, reference)


def test_the_compiled_scanner_is_built() -> None:
    """The install builds the extension (setup.py); without it every trace would silently take
    the slower typed decoding and the scanner's tests would test nothing."""
    from traceview.readers import kineto_scan

    assert kineto_scan.available(), "traceview/readers/_kineto_scan.c was not compiled: pip install -e . again"


def test_small_blocks_cut_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks far smaller than the trace force many cuts (some inside strings and nested args,
    which must be rejected and retried); the timeline is unchanged."""
    from traceview.readers import _json_stream

    path = next(p for p in _kineto_files() if "torch-eager" in str(p))
    whole = kineto.read_fast(path)
    monkeypatch.setattr(_json_stream, "BLOCK_BYTES", 4096)
    assert_same_timeline(kineto.read_fast(path), whole)
    # The scanner carries the unscanned end of each block into the next, and grows its buffer
    # for an element longer than a block.
    monkeypatch.setattr(_json_stream, "BLOCK_BYTES", 97)
    assert_same_timeline(kineto.read_scanned(path), whole)


def test_timestamp_text_is_read_exactly() -> None:
    texts = [b"1669783687464181.123", b"-12.5", b"7", b"", b'"7"', b"null", b"1e3", b"99999999999999999", b"0.0004"]
    ns, us = kineto_fields.ns_from_text(texts)
    assert ns[0] == 1669783687464181123  # a double would be off by tens of ns here
    assert ns[1] == -12500 and ns[2] == 7000 and ns[6] == 1_000_000 and ns[8] == 0
    assert np.isnan(us[3]) and np.isinf(us[4]) and np.isinf(us[5]) and np.isinf(us[7])


def test_whole_number_float_ids_are_the_integers(tmp_path: Path) -> None:
    """JSON has one number type: an exporter that writes every number as a double (pid 27927.0)
    gives the same timeline in every decoding; a pid or tid with a fraction is dropped, counted
    under its reason."""
    import gzip
    import json

    source = next(p for p in _kineto_files() if "torch-eager" in str(p))
    doc = json.loads(gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes())
    original = tmp_path / "ints.json"
    original.write_text(json.dumps(doc))
    complete = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    for event in doc["traceEvents"]:
        for key in ("pid", "tid"):
            if type(event.get(key)) is int:
                event[key] = float(event[key])
    complete[0]["pid"] = 0.5
    complete[1]["tid"] = 7.25
    floats = tmp_path / "floats.json"
    floats.write_text(json.dumps(doc))
    assert '"pid": 0.5' in floats.read_text() and ".0," in floats.read_text()

    expected = kineto.read_reference(original)
    for decoding in (kineto.read_reference, kineto.read_scanned, kineto.read_fast):
        timeline = decoding(floats)
        assert timeline.meta.dropped.get("pid is not a whole number") == 1, decoding.__name__
        assert timeline.meta.dropped.get("tid is not an id") == 1, decoding.__name__
        assert len(timeline.events) == len(expected.events) - 2
        assert set(timeline.events["pid"]) == set(expected.events["pid"])
        assert set(timeline.events["track"]) <= set(expected.events["track"])
