"""What each event *is* (its ``kind``), from ordered rule tables — one per format.

A reader first puts every event in a coarse class it can tell without names: Kineto by its
``cat`` (``_CATEGORY_KIND`` in ``readers/kineto.py``), XPlane by its line (host thread, GPU tracer
API thread, compile thread, tf.data thread, device stream). A table then decides the kind: the
first row whose class, name pattern and stat all match wins; an event no row matches keeps its
class's default kind. Each row says where the names come from; ``tests/test_kinds.py`` has an
example per row. Name patterns live in :mod:`traceview.categories`, stated once.

What an event's own time is *spent on* (its role) is decided afterwards from the kinds, by the
table in :mod:`traceview.roles`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview.arrays import as_labels, column_combinations, factorize, values_at
from traceview.schema import Kind


@dataclass(frozen=True)
class KindRule:
    """One row: events of a class in ``classes`` whose name matches and that carry ``stat`` are ``kind``."""

    kind: Kind
    classes: frozenset[str]  # Kineto: the category's kind value; XPlane: the line class
    source: str  # where the names come from
    name: re.Pattern[str] | None = None
    search: bool = False  # search the name instead of matching at its start
    stat: str | None = None  # XPlane: the event (or its metadata) carries this stat


_RUNTIME = frozenset({Kind.RUNTIME.value})
_OP_OR_RANGE = frozenset({Kind.HOST_OP.value, Kind.ANNOTATION.value})
_RANGE = frozenset({Kind.ANNOTATION.value})

# Kineto (torch.profiler): refines the category's kind by name.
KINETO_RULES: tuple[KindRule, ...] = (
    KindRule(Kind.STEP, _RANGE, "torch.profiler's schedule: user_annotation ProfilerStep#N", cat.TORCH_STEP),
    KindRule(Kind.INPUT, _OP_OR_RANGE, "DataLoader iteration: enumerate(DataLoader)#…__next__",
             cat.TORCH_INPUT, search=True),
    KindRule(Kind.COMPILE, _OP_OR_RANGE, "torch.compile backend phases (AOT autograd, inductor, compile_id ranges)",
             cat.TORCH_COMPILE),
    KindRule(Kind.GRAPH_BUILD, _OP_OR_RANGE, "dynamo's frame conversion, TorchScript scripting / tracing",
             cat.TORCH_GRAPH_BUILD),
    KindRule(Kind.SYNC, _RUNTIME, "cuda_runtime / cuda_driver calls that block the host (cudaDeviceSynchronize …)",
             cat.SYNC_API),
    KindRule(Kind.LAUNCH, _RUNTIME, "cuda_runtime / cuda_driver calls that enqueue device work (cudaLaunchKernel …)",
             cat.LAUNCH_API),
)

# XPlane line classes (readers/xplane.py decides them from the line name).
HOST, HOST_API, HOST_COMPILE, HOST_INPUT, DEVICE = "host", "host_api", "host_compile", "host_input", "device"
XPLANE_DEFAULT_KIND = {HOST: Kind.ANNOTATION, HOST_COMPILE: Kind.ANNOTATION, HOST_INPUT: Kind.ANNOTATION,
                       HOST_API: Kind.RUNTIME, DEVICE: Kind.KERNEL}
_HOST_LINES = frozenset({HOST, HOST_COMPILE, HOST_INPUT})
_API_LINES = frozenset({HOST_API})
_DEVICE_LINES = frozenset({DEVICE})
# CUDA runtime / driver and HIP API names (Host Threads lines, or a stray one on another line).
API_NAME = re.compile(r"^((cuda|cu|hip)[A-Z]\w*|hsa_\w+)$")

XPLANE_RULES: tuple[KindRule, ...] = (
    KindRule(Kind.STEP, _HOST_LINES, "Trace('train', step_num=N) / JAX StepTraceAnnotation: stat step_num",
             stat="step_num"),
    KindRule(Kind.PYTHON, _HOST_LINES, "Python tracer frames ('$file.py:12 f', JAX's default options)",
             cat.XPLANE_PYTHON_FRAME),
    KindRule(Kind.SYNC, _HOST_LINES | _API_LINES, "CUDA / HIP calls that block the host", cat.SYNC_API),
    KindRule(Kind.LAUNCH, _HOST_LINES | _API_LINES, "CUDA / HIP calls that enqueue device work", cat.LAUNCH_API),
    KindRule(Kind.RUNTIME, _HOST_LINES, "other CUDA / HIP / HSA API calls on a host thread", API_NAME),
    KindRule(Kind.SYNC, _HOST_LINES, "XLA: the host waits for work it enqueued (BlockUntilReady …)", cat.XLA_SYNC),
    KindRule(Kind.INPUT, frozenset({HOST_INPUT}), "tf.data threads (tf_data_*): map functions and iterator ranges"),
    KindRule(Kind.COMPILE, frozenset({HOST_COMPILE}), "threads that only compile (tf_xla-cpu-codegen …)"),
    KindRule(Kind.GRAPH_BUILD, _HOST_LINES, "tf.function / JAX tracing and lowering", cat.TF_GRAPH_BUILD),
    KindRule(Kind.COMPILE, _HOST_LINES, "XLA compilation: HLO passes, backend codegen", cat.TF_COMPILE),
    KindRule(Kind.INPUT, _HOST_LINES, "tf.data: IteratorGetNext, Iterator::* ranges", cat.TF_INPUT),
    KindRule(Kind.HOST_OP, _HOST_LINES, "TF eager ops: stat eager_op", stat="eager_op"),
    KindRule(Kind.HOST_OP, _HOST_LINES, "XLA CPU thunks: stat hlo_op", stat="hlo_op"),
    KindRule(Kind.HOST_OP, _HOST_LINES, "the call of a tf.function: stat tf_function_call", stat="tf_function_call"),
    KindRule(Kind.HOST_OP, _HOST_LINES, "TF op kernels named name:Type (executor threads)", cat.TF_OP_KERNEL),
    KindRule(Kind.HOST_OP, _HOST_LINES, "TF / JAX runtime ranges (EagerExecute, ExecutorState::Process, "
             "PjitFunction(f) …)", cat.TF_HOST_OP),
    KindRule(Kind.MEMSET, _DEVICE_LINES, "device memsets: stat memset_details", stat="memset_details"),
    KindRule(Kind.MEMSET, _DEVICE_LINES, "device memsets by name (Memset, ROCm __amd_rocclr_fill…)",
             cat.XPLANE_DEVICE_MEMSET),
    KindRule(Kind.MEMCPY, _DEVICE_LINES, "device copies: stat memcpy_details", stat="memcpy_details"),
    KindRule(Kind.MEMCPY, _DEVICE_LINES, "device copies by name (MemcpyH2D, ROCm __amd_rocclr_copy…)",
             cat.XPLANE_DEVICE_MEMCPY),
)


def apply_kind_rules(
    rules: tuple[KindRule, ...],
    classes: np.ndarray,
    names: np.ndarray,
    default: np.ndarray,
    has_stat: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """The kind of every event (see :func:`kind_rules_by_combination`), one string per row."""
    kinds, rows = kind_rules_by_combination(rules, classes, names, default, has_stat)
    return kinds[rows]


def kind_rules_by_combination(
    rules: tuple[KindRule, ...],
    classes: np.ndarray,
    names: np.ndarray,
    default: np.ndarray,
    has_stat: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The kind of every event: the first matching row of ``rules``, else ``default`` — as the kind
    of each distinct combination and each row's combination.

    ``classes`` and ``default`` are per-event arrays; ``has_stat`` maps a stat name to a per-event
    mask (XPlane). The rules run once per distinct (class, name, default, stats) combination —
    a trace of millions of events has a few thousand — and the answer is spread back.
    """
    n = len(names)
    if not n:
        return np.full(0, "", dtype=object), np.zeros(0, dtype=np.int64)
    stats = has_stat or {}
    stat_names = sorted({rule.stat for rule in rules if rule.stat is not None})
    # One integer key per row for the combination; its digits stay far below 2**62 together (a
    # few classes × the distinct names × the kinds × 2 per stat).
    digits: list[np.ndarray] = []
    shifts: list[int] = []
    sizes: list[int] = []
    for column in (classes, names, default):
        codes, shift, size = _codes(column)
        digits.append(codes)
        shifts.append(shift)
        sizes.append(size)
    for stat in stat_names:
        mask = stats.get(stat)
        digits.append(mask if mask is not None else np.zeros(n, dtype=bool))
        shifts.append(0)
        sizes.append(2)
    key_codes, first = column_combinations(digits, shifts, sizes)
    kinds = _apply_to_distinct(rules, _at(classes, first), _at(names, first), _at(default, first),
                               {s: stats[s][first] for s in stat_names if s in stats})
    return kinds, key_codes


def _codes(column: Any) -> tuple[np.ndarray, int, int]:
    """Each row's code, the shift that makes it ≥ 0, and how many codes there can be: a
    categorical's own codes (no hashing of its values; -1, missing, shifted to 0), else the
    values factorized."""
    labels = as_labels(column)
    if labels is not None:
        return labels.codes, 1, len(labels.categories) + 1
    codes, uniques = factorize(column)
    return codes, 1, len(uniques) + 1


def _at(column: Any, rows: np.ndarray) -> np.ndarray:
    """The values at ``rows``, as an object array."""
    return np.asarray(values_at(column, rows), dtype=object)


def _apply_to_distinct(rules: tuple[KindRule, ...], classes: np.ndarray, names: np.ndarray, default: np.ndarray,
                       stats: dict[str, np.ndarray]) -> np.ndarray:
    """The rule loop over one row per distinct combination."""
    n = len(names)
    kinds = np.full(n, "", dtype=object)
    names_text = [str(u) for u in names.tolist()]
    for rule in rules:
        open_rows = (kinds == "") & np.isin(classes, list(rule.classes))
        if not open_rows.any():
            continue
        match = open_rows
        if rule.name is not None:
            test = rule.name.search if rule.search else rule.name.match
            match = match & np.array([bool(test(u)) for u in names_text], dtype=bool)
        if rule.stat is not None:
            match = match & stats.get(rule.stat, np.zeros(n, dtype=bool))
        kinds[match] = rule.kind.value
    undecided = kinds == ""
    kinds[undecided] = default[undecided]
    return kinds


def kinds_markdown() -> str:
    """Both kind tables as markdown (docs/schema.md embeds them; a test checks it)."""
    lines: list[str] = []
    for title, rules in (("Kineto (class = the category's kind)", KINETO_RULES),
                         ("XPlane (class = the line)", XPLANE_RULES)):
        lines += [f"**{title}**", "", "| row | kind | classes | name | stat | where the names come from |",
                  "|---|---|---|---|---|---|"]
        for i, rule in enumerate(rules, 1):
            name = f"`{rule.name.pattern[:60]}{'…' if len(rule.name.pattern) > 60 else ''}`" if rule.name else "—"
            name = name.replace("|", "\\|")
            lines.append(f"| {i} | `{rule.kind.value}` | {', '.join(sorted(rule.classes))} | {name} | "
                         f"{rule.stat or '—'} | {rule.source} |")
        lines.append("")
    return "\n".join(lines)
