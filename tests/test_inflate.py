"""Gzipped traces inflate through ISA-L where it is installed (readers/_io.py) and through zlib
where it is not: both give the same bytes, and damage is the same one-line error."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest

from traceview.errors import FormatError
from traceview.readers import _io, _prefetch

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_traces").rglob("*.json.gz"))[:3]


@pytest.fixture(params=["isal", "zlib"])
def inflating(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "zlib":
        monkeypatch.setattr(_io, "_gzip", gzip)
        monkeypatch.setattr(_io, "_zlib", zlib)
    else:
        pytest.importorskip("isal")
        assert _io._gzip.__name__ == "isal.igzip"
    return request.param


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_every_path_inflates_the_same_bytes(sample: Path, inflating: str) -> None:
    raw = sample.read_bytes()
    expected = gzip.decompress(raw)
    assert _io.read_bytes(sample) == expected
    assert _prefetch._inflate(sample, len(expected)) == expected
    with sample.open("rb") as handle, _io.gzip_reader(handle) as stream:
        assert stream.read() == expected
    assert _io.head_bytes(sample, 100) == expected[:100]


def test_two_members_inflate_as_one_text(tmp_path: Path, inflating: str) -> None:
    path = tmp_path / "two.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [') + gzip.compress(b"]}"))
    assert _io.read_bytes(path) == b'{"traceEvents": []}'
    assert _prefetch._inflate(path, 19) == b'{"traceEvents": []}'


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_damage_is_one_error_naming_the_file(tmp_path: Path, inflating: str, damage: str) -> None:
    raw = SAMPLES[0].read_bytes()
    data = raw[: len(raw) // 2] if damage == "truncated" else raw[:40] + bytes(200) + raw[240:]
    path = tmp_path / "damaged.json.gz"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=r"damaged\.json\.gz: gzip data is truncated or corrupt"):
        _io.read_bytes(path)
    assert _prefetch._inflate(path, len(gzip.decompress(raw))) is None
