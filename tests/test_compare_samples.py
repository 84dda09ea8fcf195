"""torch vs TensorFlow on the committed sample workloads: the gap is explained by named causes."""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES, cached_diagnosis
from traceview.analyzers.compare import compare
from traceview.loader import trace_paths
from traceview.renderers.terminal import BUCKET_LABEL, render_comparison

PAIRS = [("torch-eager", "tf-eager"), ("torch-eager", "tf-function"), ("torch-compile", "tf-xla")]
CASES = [
    (workload.name, a, b)
    for workload in sorted(p for p in SAMPLES.iterdir() if p.is_dir())
    for a, b in PAIRS
    if (workload / a).is_dir() and (workload / b).is_dir()
]


@pytest.mark.skipif(not CASES, reason="no sample traces")
@pytest.mark.parametrize(("workload", "baseline", "candidate"), CASES, ids=lambda x: x)
def test_named_causes_explain_the_gap_and_the_largest_is_named_first(workload, baseline, candidate):
    a = cached_diagnosis(trace_paths(SAMPLES / workload / baseline)[0])
    b = cached_diagnosis(trace_paths(SAMPLES / workload / candidate)[0])
    cmp = compare(a, b)
    assert cmp.explained_share >= 0.90, (workload, baseline, candidate, cmp.explained_share)
    text = render_comparison(cmp, width=100)
    largest = cmp.ranked()[0]
    sentence = text.split("Where the gap comes from:", 1)[1]
    first_named = min((sentence.find(label), bucket) for bucket, label in BUCKET_LABEL.items() if label in sentence)
    assert first_named[1] == largest.bucket


def test_tf_eager_is_slower_than_torch_eager_because_of_dispatch():
    """The forum question: a 2-layer MLP is several times slower in TF eager, and dispatch is why."""
    torch_eager = cached_diagnosis(trace_paths(SAMPLES / "mlp2" / "torch-eager")[0])
    tf_eager = cached_diagnosis(trace_paths(SAMPLES / "mlp2" / "tf-eager")[0])
    cmp = compare(torch_eager, tf_eager)
    assert cmp.ratio > 2.0
    assert cmp.ranked()[0].bucket == "launch_overhead"
    fam = cmp.families
    assert fam.loc["matmul", "baseline_ops_per_step"] > 0 and fam.loc["matmul", "candidate_ops_per_step"] > 0
