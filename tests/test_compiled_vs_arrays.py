"""The compiled extensions against the array paths they stand in for, all three at once, on every
input the tests have: the bundled traces (sample_traces/, tests/data), the hostile corpus
(tests/hostile_corpus.py) and a fixed-seed stream of fuzz inputs (tests/fuzz.py).

Compiled: the Kineto scanner (readers/_kineto_scan.c), the XPlane decoder (readers/_xplane_wire.c)
and the nesting / own-time / replay passes (_passes.c). Array paths: the typed msgspec decoding,
the protobuf runtime with array passes over the wire bytes, and numpy. Each input is diagnosed both
ways and must give the same refusal, or the same timelines (every column, the readers' metadata)
and the same JSON report byte for byte.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.fuzz import diagnose_path, kineto_seeds, make_input, render_diagnosed, xplane_seeds
from tests.hostile_corpus import CASES, base_bytes, by_name
from tests.test_fast_path import assert_same_timeline
from traceview import compiled
from traceview.errors import TraceviewError
from traceview.readers import format_of, kineto_scan, xplane_events

FUZZ_SEED = 37
FUZZ_INPUTS = 400

pytestmark = pytest.mark.skipif(
    compiled.passes is None or not kineto_scan.available() or xplane_events._xplane_wire is None,
    reason="the compiled extensions are not built (a C compiler at install time builds them)")

# Where the protobuf runtime found a corrupt XPlane: the compiled decoder cuts the file into planes
# and lines first and parses the piece that is broken ("in a line of 2067 bytes"), the array path
# parses the whole file ("in the file of 3763 bytes"). The refusal and its advice are the same.
_PARSE_LOCATION = re.compile(r"truncated or corrupt \(.*, in [^()]* of \d+ bytes\)")


def bundled_traces() -> list[Path]:
    """Every trace file under sample_traces/ and tests/data, in a fixed order."""
    found = []
    for root in (REPO / "sample_traces", REPO / "tests" / "data"):
        found += [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix not in (".py", ".md")
                  and p.name != "manifest.json" and format_of(p) is not None]
    return found


@dataclass
class Diagnosed:
    """What ``traceview diagnose PATH --format json`` makes of a path, refusal included."""

    refusal: str | None = None
    timelines: list[Any] = field(default_factory=list)
    report: str = ""


def diagnosed(path: Path) -> Diagnosed:
    try:
        diagnoses, comparisons = diagnose_path(path)
    except TraceviewError as err:
        return Diagnosed(refusal=f"{type(err).__name__}: {_PARSE_LOCATION.sub('truncated or corrupt (…)', str(err))}")
    return Diagnosed(timelines=[d.timeline for d in diagnoses],
                     report=render_diagnosed(diagnoses, comparisons, ("json",))["json"])


def use_array_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every caller looks its extension up at call time: set to None, it takes its array path."""
    monkeypatch.setattr(compiled, "passes", None)
    monkeypatch.setattr(kineto_scan, "_kineto_scan", None)
    monkeypatch.setattr(xplane_events, "_xplane_wire", None)


def assert_same_either_way(path: Path) -> None:
    fast = diagnosed(path)
    with pytest.MonkeyPatch.context() as patch:
        use_array_paths(patch)
        reference = diagnosed(path)
    assert fast.refusal == reference.refusal
    assert len(fast.timelines) == len(reference.timelines)
    for mine, theirs in zip(fast.timelines, reference.timelines):
        assert_same_timeline(mine, theirs)
    assert fast.report == reference.report


@pytest.mark.parametrize("path", bundled_traces(), ids=lambda p: str(p.relative_to(REPO)))
def test_bundled_trace(path: Path) -> None:
    assert_same_either_way(path)


@pytest.mark.filterwarnings("ignore::traceview.errors.TraceviewWarning")  # (a folder's skipped files)
@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_hostile_input(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = by_name()[name]
    options = dict(zip(case.options[::2], case.options[1::2]))
    assert set(options) <= {"--max-bytes"}, f"{name}: an option this test does not set: {case.options}"
    monkeypatch.delenv("TRACEVIEW_MAX_BYTES", raising=False)
    if "--max-bytes" in options:
        monkeypatch.setenv("TRACEVIEW_MAX_BYTES", options["--max-bytes"])  # what the CLI option sets
    assert_same_either_way(case.build(tmp_path))


def test_fuzz_inputs(tmp_path: Path) -> None:
    """A fixed stream of mutated traces (the fuzz target's inputs): every one the same either way.
    All differences are collected, each named by its seed trace and mutations."""
    rng = random.Random(FUZZ_SEED)
    seeds = kineto_seeds() + xplane_seeds()
    differ: list[str] = []
    for number in range(FUZZ_INPUTS):
        data, suffix, done = make_input(seeds, rng)
        path = tmp_path / f"input-{number}{suffix}"
        path.write_bytes(data)
        try:
            assert_same_either_way(path)
        except AssertionError as err:
            differ.append(f"input {number} ({', '.join(done)}): {str(err).splitlines()[0][:300]}")
        path.unlink()
    assert not differ, f"{len(differ)} of {FUZZ_INPUTS} inputs differ:\n" + "\n".join(differ[:10])


def test_a_number_beyond_a_double_in_input_dims(tmp_path: Path) -> None:
    """1e400 where the scanner reads no value (an Input Dims entry): both paths refuse the
    document as orjson does, 'number is infinity when parsed as double' (the scanner declined
    only where it read the number's value, as in a ts, and let it pass elsewhere)."""
    text = base_bytes().replace(b'"Input Dims": [[64, 64]', b'"Input Dims": [[64, 1e400]', 1)
    assert b"1e400" in text
    path = tmp_path / "trace.json"
    path.write_bytes(text)
    assert_same_either_way(path)
