"""Columns with one value on every row are held once (arrays.one_value) in the command line's
processes: the same values, no memory of their own, and no analysis writes into them (a read-only
view would refuse it). A program using traceview as a library gets writable columns."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import sample_xplane_traces
from traceview import arrays
from traceview.arrays import is_one_value, one_value, per_group, reordered
from traceview.schema import build_events


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """One-value columns held once, as the command line has them (arrays.share_one_values)."""
    monkeypatch.setattr(arrays, "_ONE_VALUES_SHARED", [True])


def test_per_group_is_np_repeat_and_one_value_when_every_group_agrees(shared: None) -> None:
    same = per_group(np.array([-1, -1, -1], dtype=np.int64), [2, 0, 3])
    assert is_one_value(same) and same.tolist() == [-1] * 5 and not same.flags.writeable
    mixed = per_group(np.array([4, 5], dtype=np.int64), [2, 1])
    assert not is_one_value(mixed) and mixed.tolist() == [4, 4, 5]
    assert per_group(np.array([], dtype=np.int64), []).tolist() == []


def test_the_event_table_holds_one_value_columns_once_and_sorts_the_others(shared: None) -> None:
    n = 5
    frame = build_events({"ts": np.array([40, 10, 30, 20, 0]), "dur": np.full(n, 5), "pid": np.full(n, 7),
                          "tid": np.array([1, 2, 1, 2, 1]), "device": per_group(np.array([-1]), [n]),
                          "name": ["e", "b", "d", "c", "a"]})
    assert frame["name"].astype(str).tolist() == ["a", "b", "c", "d", "e"]  # sorted by ts
    assert frame["tid"].tolist() == [1, 2, 2, 1, 1]
    for column, value in (("pid", 7), ("device", -1), ("stream", -1), ("correlation", -1), ("bytes", -1)):
        held = frame[column].to_numpy()
        assert is_one_value(held) and held.tolist() == [value] * n, column
    assert frame["device"].dtype == np.int32 and frame["pid"].dtype == np.int64
    assert not is_one_value(frame["tid"].to_numpy())
    with pytest.raises(ValueError):  # what an in-place write would meet
        frame["pid"].to_numpy()[0] = 1
    assert one_value(3, 0, np.int64).tolist() == []


def test_a_host_only_xplane_holds_its_constant_columns_once(shared: None) -> None:
    from traceview.loader import diagnose

    traces = sample_xplane_traces()
    if not traces:
        pytest.skip("no sample XPlane")
    diagnosis = diagnose(traces[0])  # every analysis runs on the table: none writes into a held column
    events = diagnosis.timeline.events
    assert is_one_value(events["device"].to_numpy()) and (events["device"] == -1).all()
    assert len(diagnosis.steps.table) > 0


def test_a_one_value_column_stays_one_when_reordered(shared: None) -> None:
    held = one_value(-1, 5, np.int64)
    taken = reordered(held, np.array([4, 0, 2]))
    assert is_one_value(taken) and taken.tolist() == [-1] * 3 and taken.dtype == np.int64
    assert reordered(np.array([5, 6, 7]), np.array([2, 0])).tolist() == [7, 5]


def test_a_host_only_xplane_reader_makes_its_absent_stats_one_value(shared: None) -> None:
    # Built once, not filled per row and then found constant: a CPU trace's correlation ids and
    # bytes (-1), and its launchers, function-call and HLO-op codes ("").
    from traceview.readers import xplane

    traces = [t for t in sample_xplane_traces() if "tf-eager" in str(t)]  # (no tf.function, no XLA)
    if not traces:
        pytest.skip("no sample TensorFlow eager XPlane")
    seen: dict[str, object] = {}
    original = xplane.build

    def capture(raw: object) -> object:
        seen.update(raw.columns, **raw.extra)  # type: ignore[attr-defined]
        return original(raw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(xplane, "build", capture)
        xplane.read(traces[0])
    for column in ("correlation", "bytes"):
        assert is_one_value(seen[column]), column
    for column in ("launcher", "fn_call", "hlo_op"):
        assert list(seen[column].categories) == [""] and not seen[column].codes.any(), column


def test_a_library_caller_gets_columns_it_can_write() -> None:
    import traceview

    traces = sample_xplane_traces()
    if not traces:
        pytest.skip("no sample XPlane")
    events = traceview.load(traces[0]).events
    assert not is_one_value(events["device"].to_numpy())
    events.loc[events.index[:2], "device"] = 5  # as pandas users do
    assert events["device"].tolist()[:3] == [5, 5, -1]
