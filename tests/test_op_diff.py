"""The per-op diff of ``traceview compare``: ops and kernels of two real captures aligned by exact
name, in every output format; names cut only in the terminal, and never so that two read the same."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import orjson
import pandas as pd
import pytest

import traceview
from tests.conftest import SAMPLES
from traceview.analyzers.compare import OP_DIFF_SOURCES
from traceview.renderers.report import op_diff_grid, shortened
from traceview.text import distinct_shortened

MLP2 = SAMPLES / "mlp2"
pytestmark = pytest.mark.skipif(not MLP2.is_dir(), reason="no sample traces")


@pytest.fixture(scope="module")
def torch_pair():
    """Two torch captures of one workload (eager, TorchScript): many op names in common."""
    return traceview.compare(MLP2 / "torch-eager", MLP2 / "torch-torchscript", top="all")


@pytest.fixture(scope="module")
def cross_pair():
    """torch eager vs TensorFlow eager: the same math under different names."""
    return traceview.compare(MLP2 / "torch-eager", MLP2 / "tf-eager", top="all")


def _tables(diag, kind):
    table = dict(OP_DIFF_SOURCES)[kind]
    return table(diag.timeline, diag.steps, None).to_pandas().set_index("name")


@pytest.mark.parametrize("pair", ["torch_pair", "cross_pair"])
def test_every_name_of_either_trace_is_one_row_with_each_sides_own_numbers(pair, request):
    cmp = request.getfixturevalue(pair)
    diff = cmp.op_diff
    for kind, _ in OP_DIFF_SOURCES:
        rows = diff[diff["kind"] == kind].set_index("name")
        base, cand = _tables(cmp.baseline, kind), _tables(cmp.candidate, kind)
        assert rows.index.is_unique
        assert set(rows.index) == set(base.index) | set(cand.index)
        for side, table in (("baseline", base), ("candidate", cand)):
            present = rows.index.isin(table.index)
            # A side without the name is empty, never filled from a similar name.
            assert rows.loc[~present, f"{side}_time_per_step_ns"].isna().all()
            assert rows.loc[~present, f"{side}_count_per_step"].isna().all()
            names = rows.index[present]
            assert np.allclose(rows.loc[names, f"{side}_time_per_step_ns"], table.loc[names, "time_per_step_ns"])
            assert np.allclose(rows.loc[names, f"{side}_count_per_step"], table.loc[names, "count_per_step"])
    expected = diff["candidate_time_per_step_ns"].fillna(0) - diff["baseline_time_per_step_ns"].fillna(0)
    assert np.allclose(diff["delta_ns"], expected)
    sizes = diff["delta_ns"].abs().to_numpy()
    assert (np.diff(sizes) <= 1e-9).all(), "not sorted by the absolute difference"


def test_names_match_exactly_or_not_at_all(torch_pair, cross_pair):
    mm = torch_pair.op_diff.set_index(["kind", "name"]).loc[("kernel", "aten::mm")]
    assert mm["baseline_count_per_step"] == 2 and mm["candidate_count_per_step"] == 2
    cross = cross_pair.op_diff.set_index(["kind", "name"])
    # The five matrix products: aten::mm / aten::addmm in torch, MatMul in TensorFlow — not paired.
    assert math.isnan(cross.loc[("kernel", "aten::mm"), "candidate_time_per_step_ns"])
    assert math.isnan(cross.loc[("kernel", "MatMul"), "baseline_time_per_step_ns"])
    assert cross.loc[("kernel", "MatMul"), "candidate_count_per_step"] == 5


def test_top_keeps_the_largest_differences(torch_pair):
    three = traceview.compare(MLP2 / "torch-eager", MLP2 / "torch-torchscript", top=3)
    pd.testing.assert_frame_equal(three.op_diff, torch_pair.op_diff.head(3))
    default = traceview.compare(MLP2 / "torch-eager", MLP2 / "torch-torchscript")
    assert len(default.op_diff) == 10 < len(torch_pair.op_diff)


def test_every_format_shows_it_and_only_the_terminal_cuts_names(cross_pair):
    longest = max(cross_pair.op_diff["name"], key=len)
    assert len(longest) > 30
    terminal = traceview.render(cross_pair, "terminal", width=80)
    markdown = traceview.render(cross_pair, "md")
    html = traceview.render(cross_pair, "html")
    document = orjson.loads(traceview.render(cross_pair, "json"))
    assert "Ops and kernels per steady step" in terminal and "Ops and kernels per steady step" in markdown
    assert "Ops and kernels per steady step" in html
    assert longest not in terminal and longest.replace("_", "\\_") in markdown and longest in html
    rows = document["comparison"]["op_diff"]
    assert [r["name"] for r in rows] == list(cross_pair.op_diff["name"])
    assert all(r["baseline_count_per_step"] is None for r in rows if r["name"] == "MatMul")
    for label in shortened([row[0] for row in op_diff_grid(cross_pair).rows], 24):
        assert label in terminal  # cut by traceview, not folded or clipped by the table
    assert max(len(line) for line in terminal.splitlines()) <= 80


def test_terminal_names_never_read_the_same(cross_pair):
    names = ["autograd::engine::evaluate_function: AddmmBackward0",
             "autograd::engine::evaluate_function: ReluBackward0",
             "void at::native::kernel<float, 128>(float*, int) [clone .A]",
             "void at::native::kernel<float, 128>(float*, int) [clone .B]",
             "void at::native::kernel<float, 256>(float*, int) [clone .A]",
             "name\x1b[31m", "name", "two  spaces", "two spaces", "MatMul"]
    labels = distinct_shortened(names, 24)
    assert len(set(labels)) == len(set(names))
    assert all(len(label) <= 24 for label in labels[:2])
    assert labels[0].endswith("AddmmBackward0") and labels[1].endswith("ReluBackward0")
    assert distinct_shortened(["same", "same", "other"], 24) == ["same", "same", "other"]

    frame = pd.DataFrame({"name": names, "kind": "op", "baseline_count_per_step": 1.0, "candidate_count_per_step": np.nan,
                          "baseline_time_per_step_ns": 1000.0, "candidate_time_per_step_ns": np.nan,
                          "delta_ns": -1000.0})
    hostile = dataclasses.replace(cross_pair, op_diff=frame)
    text = traceview.render(hostile, "terminal", width=80)
    assert "\x1b" not in text
    for label in distinct_shortened(names, 24):
        assert label in text
