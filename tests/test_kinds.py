"""One example per row of the kind tables (traceview.kinds): each row decides its example, and
no earlier row would have."""

from __future__ import annotations

import numpy as np
import pytest

from traceview.kinds import (
    DEVICE,
    HOST,
    HOST_API,
    HOST_COMPILE,
    HOST_INPUT,
    KINETO_RULES,
    XPLANE_DEFAULT_KIND,
    XPLANE_RULES,
    apply_kind_rules,
)

# (row, category kind, name)
KINETO_EXAMPLES = [
    (0, "annotation", "ProfilerStep#12"),
    (1, "annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
    (2, "host_op", "inductor_compile"),
    (3, "host_op", "dynamo"),
    (4, "runtime", "cudaDeviceSynchronize"),
    (5, "runtime", "cudaLaunchKernel"),
]
# (row, line class, name, stat)
XPLANE_EXAMPLES = [
    (0, HOST, "train", "step_num"),
    (1, HOST, "$contextlib.py:141 __exit__", None),
    (2, HOST_API, "cuStreamSynchronize", None),
    (3, HOST_API, "cuLaunchKernel", None),
    (4, HOST, "cudaGetDevice", None),
    (5, HOST, "BlockHostUntilReady", None),
    (6, HOST_INPUT, "PrefetchProduce", None),
    (7, HOST_COMPILE, "some codegen range", None),
    (8, HOST, "tf.function-graph_building", None),
    (9, HOST, "HLO passes after layout assignment", None),
    (10, HOST, "IteratorGetNext", None),
    (11, HOST, "EagerKernelExecute", "eager_op"),
    (12, HOST, "custom-call.1", "hlo_op"),
    (13, HOST, "_step", "tf_function_call"),
    (14, HOST, "dense/MatMul:MatMul", None),
    (15, HOST, "PjitFunction(train_step)", None),
    (16, DEVICE, "some fill", "memset_details"),
    (17, DEVICE, "Memset", None),
    (18, DEVICE, "some copy", "memcpy_details"),
    (19, DEVICE, "MemcpyH2D", None),
]


def test_every_row_has_an_example():
    assert sorted(e[0] for e in KINETO_EXAMPLES) == list(range(len(KINETO_RULES)))
    assert sorted(e[0] for e in XPLANE_EXAMPLES) == list(range(len(XPLANE_RULES)))


@pytest.mark.parametrize("row,base,name", KINETO_EXAMPLES, ids=[f"kineto-row{e[0]}" for e in KINETO_EXAMPLES])
def test_kineto_row_decides_its_example(row, base, name):
    base_arr = np.array([base], dtype=object)
    kind = apply_kind_rules(KINETO_RULES, base_arr, np.array([name], dtype=object), base_arr)[0]
    assert kind == KINETO_RULES[row].kind.value
    for earlier in KINETO_RULES[:row]:
        test = earlier.name.search if earlier.search else earlier.name.match
        assert not (base in earlier.classes and test(name)), earlier.source


@pytest.mark.parametrize("row,line,name,stat", XPLANE_EXAMPLES, ids=[f"xplane-row{e[0]}" for e in XPLANE_EXAMPLES])
def test_xplane_row_decides_its_example(row, line, name, stat):
    has = {s: np.array([s == stat]) for s in {r.stat for r in XPLANE_RULES if r.stat}}
    default = np.array([XPLANE_DEFAULT_KIND[line].value], dtype=object)
    kind = apply_kind_rules(XPLANE_RULES, np.array([line], dtype=object), np.array([name], dtype=object), default, has)
    assert kind[0] == XPLANE_RULES[row].kind.value
    for earlier in XPLANE_RULES[:row]:
        hit = line in earlier.classes and (earlier.name is None or bool(earlier.name.match(name)))
        hit = hit and (earlier.stat is None or earlier.stat == stat)
        assert not hit or earlier.kind == XPLANE_RULES[row].kind, earlier.source


def test_unmatched_events_keep_their_class_default():
    classes = np.array([HOST, HOST_API, DEVICE], dtype=object)
    default = np.array([XPLANE_DEFAULT_KIND[c].value for c in classes], dtype=object)
    kinds = apply_kind_rules(XPLANE_RULES, classes, np.array(["my range", "hsaFoo", "volta_sgemm"], dtype=object),
                             default, {})
    assert kinds.tolist() == ["annotation", "runtime", "kernel"]
