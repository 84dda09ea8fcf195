"""The normalized timeline: one columnar table of events that every reader produces.

Every reader (Kineto JSON, XPlane) returns a :class:`Timeline`; every analyzer takes one.
The table is a pandas DataFrame with the columns in :data:`COLUMNS` and nothing per event
lives outside it. The full description, with the invariants, is in ``docs/schema.md``;
bump :data:`SCHEMA_VERSION` whenever a column or a kind changes meaning.

Invariants (checked by :func:`validate`):
- ``ts`` and ``dur`` are integer nanoseconds on one clock per trace; ``dur >= 0``.
- ``ts`` is relative to ``TraceMeta.origin_ns`` (the earliest kept event starts at 0 or later).
- host events have ``device == -1`` and ``stream == -1``; device events have ``device >= 0``.
- ``parent`` is a row position in the same table (or -1) and the parent encloses the child.
- rows are sorted by (``ts``, ``-dur``) so a parent comes before its children.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from traceview.arrays import (as_labels, factorize, is_one_value, membership, one_value, one_values_shared,
                              order_by_start_then_longest)
from traceview.table import Labels, Table, code_type

if TYPE_CHECKING:
    import pandas as pd

# 1.1: role column; XPlane fn_call, Kineto elements. 1.2: role device_communication (collective kernels
# were device_kernel before: a filter on device_kernel no longer sees them). 1.3: memory table columns
# op and allocator; XPlane allocator samples (MemoryAllocation / MemoryDeallocation) fill the memory table.
# 1.4: Kineto input_dtypes. 1.5: roles copy_pageable (a launch call copying from or to pageable
# memory; was launch), launch_blocked (a launch call that waited for room in the device's queue;
# was launch) and device_compile (a kernel, copy or memset launched from inside graph
# building or compilation; was device_kernel, device_memcpy, device_memset).
SCHEMA_VERSION = "1.5"


def has_device_rows(events: Table) -> bool:
    """Whether any row of the event table is a device's."""
    device = events["device"]
    if is_one_value(device):  # (a host-only trace's -1 on every row, held once: no pass over it)
        return bool(device[0] >= 0)
    return bool((device >= 0).any())


class Kind(str, Enum):
    """What an event is, independent of the framework that recorded it."""

    # Host side.
    HOST_OP = "host_op"  # a framework op on the host: aten::addmm, EagerLocalExecute: MatMul, MatMul op kernel
    PYTHON = "python"  # a Python function frame recorded by the profiler's Python tracer
    ANNOTATION = "annotation"  # a user or framework range that is not an op (record_function, Optimizer.step#…)
    LAUNCH = "launch"  # a runtime/driver API that enqueues device work (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync)
    RUNTIME = "runtime"  # any other runtime/driver API call (cudaGetDevice, cudaEventRecord …)
    SYNC = "sync"  # host blocked on the device (cudaDeviceSynchronize, cudaStreamSynchronize, blocking memcpy)
    STEP = "step"  # a training-step marker (ProfilerStep#N, Trace('train', step_num=N))
    GRAPH_BUILD = "graph_build"  # tracing / graph construction (tf.function tracing, dynamo frame conversion)
    COMPILE = "compile"  # backend compilation (XLA passes, inductor codegen)
    INPUT = "input"  # input pipeline work (DataLoader next, IteratorGetNext, tf.data)
    # Device side.
    KERNEL = "kernel"  # a compute kernel on a device stream
    MEMCPY = "memcpy"  # a copy engine transfer on a device stream
    MEMSET = "memset"  # a device memset
    DEVICE_SYNC = "device_sync"  # a synchronization record on a device stream (Kineto cuda_sync)
    DEVICE_ANNOTATION = "device_annotation"  # a range mirrored onto a device stream (gpu_user_annotation)


HOST_KINDS = frozenset(
    {
        Kind.HOST_OP,
        Kind.PYTHON,
        Kind.ANNOTATION,
        Kind.LAUNCH,
        Kind.RUNTIME,
        Kind.SYNC,
        Kind.STEP,
        Kind.GRAPH_BUILD,
        Kind.COMPILE,
        Kind.INPUT,
    }
)
DEVICE_KINDS = frozenset({Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.DEVICE_SYNC, Kind.DEVICE_ANNOTATION})
KIND_VALUES: tuple[str, ...] = tuple(k.value for k in Kind)


class CopyKind(str, Enum):
    """Direction of a memory operation; empty string for events that are not copies."""

    NONE = ""
    H2D = "H2D"
    D2H = "D2H"
    D2D = "D2D"
    H2H = "H2H"
    P2P = "P2P"
    MEMSET = "memset"
    OTHER = "other"


COPY_KIND_VALUES: tuple[str, ...] = tuple(c.value for c in CopyKind)

# Column name -> numpy dtype ("category" for dictionary-encoded strings).
COLUMNS: dict[str, str] = {
    "ts": "int64",  # start, ns relative to TraceMeta.origin_ns
    "dur": "int64",  # duration, ns
    "kind": "category",  # Kind value
    "name": "category",  # event name as the profiler wrote it
    "track": "category",  # readable track label: "host 123/456 (python)" or "GPU 0 stream 7"
    "pid": "int64",  # host process id (device events: the device's pid in the source file)
    "tid": "int64",  # host thread id; for device events the stream id
    "device": "int32",  # -1 for host events, device index otherwise
    "stream": "int64",  # -1 for host events, stream id otherwise
    "correlation": "int64",  # links a launch to its device activity; -1 when none
    "launcher": "category",  # device events: the framework op whose launch queued it; "" otherwise
    "step": "int32",  # index into the steps table; -1 outside every step
    "depth": "int16",  # nesting depth on a host track (0 = top level); -1 for device events
    "parent": "int64",  # row position of the enclosing event on the same host track; -1 if none
    "bytes": "int64",  # bytes moved or set by memcpy/memset; -1 when unknown
    "copy_kind": "category",  # CopyKind value
}

CATEGORY_LEVELS: dict[str, tuple[str, ...]] = {"kind": KIND_VALUES, "copy_kind": COPY_KIND_VALUES}

# The memory table: one row per allocator sample (torch profile_memory "[memory]" events,
# TensorFlow MemoryAllocation / MemoryDeallocation), sorted by ts.
MEMORY_COLUMNS: dict[str, str] = {
    "ts": "int64",  # ns, on the event table's clock (relative to TraceMeta.origin_ns)
    "bytes": "int64",  # bytes this sample allocated (> 0) or freed (< 0)
    "total_allocated": "int64",  # bytes allocated on that device after the sample; -1 when not recorded
    "total_reserved": "int64",  # bytes the caching allocator holds after the sample; -1 when not recorded
    "device": "int32",  # -1 for host memory, else the device index
    "pid": "int64",  # the host thread that allocated
    "tid": "int64",
    "track": "category",  # that thread's host track label (as in the event table)
    "op": "category",  # the op the allocator says the bytes are for (TF stat tf_op); "" when not recorded
    "allocator": "category",  # the allocator that recorded the sample (TF allocator_name); "" when not recorded
}
# Columns a reader may leave out of memory_frame, and their value then.
MEMORY_DEFAULTS: dict[str, Any] = {"op": "", "allocator": ""}

# The drop reason of allocator samples: they are not events with a duration, and every one is a row
# of the memory table instead.
MEMORY_SAMPLE_REASON = "memory sample (in the memory table)"


@dataclass
class Device:
    """A device (GPU/accelerator) that has events in the trace."""

    index: int
    name: str = ""
    vendor: str = ""  # "nvidia", "amd", "" when unknown


# meta.extra["overlaps"]: the host events nesting found overlapping an enclosing event without
# nesting inside it (treated as siblings; traceview/normalize.py counts them). The trace-quality
# check and the reports' note read the count.
OVERLAPS_KEY = "overlaps"


@dataclass
class TraceMeta:
    """Trace-level facts that do not belong to any single event."""

    source: str
    format: str  # "kineto-json" or "xplane"
    framework: str  # "torch", "tensorflow", "jax" or "unknown"
    origin_ns: int = 0  # epoch ns of ts == 0 when the trace says, else the raw clock value of ts == 0
    devices: list[Device] = field(default_factory=list)
    host_name: str = ""
    input_events: int = 0  # events in the file that a reader looked at
    kept: dict[str, int] = field(default_factory=dict)  # kind -> count kept
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> count dropped
    notes: list[str] = field(default_factory=list)  # reader remarks worth showing (format quirks found)
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific facts (versions, profile options)
    schema_version: str = SCHEMA_VERSION

    def drop(self, reason: str, count: int = 1) -> None:
        """Count events that are not kept, under a stable reason string."""
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(count)


@dataclass(init=False, eq=False)
class Timeline:
    """A normalized trace: the event table plus its metadata.

    The table (:attr:`table`, column arrays: traceview/table.py) is what every analysis reads;
    :attr:`events` is the same table as a pandas DataFrame, built when first asked for (and again
    after the table changes), sharing the table's arrays. Changing a column goes through the
    table: the DataFrame is a view of it for reading."""

    table: Table
    meta: TraceMeta
    memory: Table | None

    def __init__(self, events: Table | pd.DataFrame | None = None, meta: TraceMeta | None = None,
                 memory: Table | None = None, *, table: Table | None = None) -> None:
        """``events`` (or ``table``): the event table, a Table or a pandas DataFrame of its columns."""
        events = table if table is not None else events
        if events is None or meta is None:
            raise TypeError("Timeline needs an event table and its TraceMeta")
        self.table = events if isinstance(events, Table) else event_table(events)
        self.meta = meta
        self.memory = memory  # allocator samples (MEMORY_COLUMNS) when the profiler recorded them
        self._frame: tuple[int, pd.DataFrame] | None = None  # (the table's version it shows, the frame)

    @property
    def events(self) -> pd.DataFrame:
        """The event table as a pandas DataFrame (columns :data:`COLUMNS` and the reader's own)."""
        frame = getattr(self, "_frame", None)  # (a subclass's generated __init__ sets none)
        if frame is None or frame[0] != self.table.version:
            self._frame = (self.table.version, self.table.to_pandas())
        return self._frame[1]

    @property
    def has_device(self) -> bool:
        return has_device_rows(self.table)

    def of_kind(self, *kinds: Kind) -> pd.DataFrame:
        """The rows of these kinds, as a pandas DataFrame."""
        rows = np.flatnonzero(self.kind_mask(*kinds))
        return self.events.iloc[rows]

    def kind_mask(self, *kinds: Kind) -> np.ndarray:
        """Per row: whether its kind is one of ``kinds``."""
        return membership(self.table["kind"])([k.value for k in kinds])

    def __repr__(self) -> str:
        return f"Timeline({self.meta.source!r}, {len(self.table)} events)"


def event_table(frame: pd.DataFrame) -> Table:
    """A DataFrame of event columns as the event table: its string columns of the schema (and
    ``role``) as Labels, whether or not the frame held them as categoricals."""
    table = Table.from_pandas(frame)
    for name in (*(c for c, dtype in COLUMNS.items() if dtype == "category"), "role"):
        if name in table and not isinstance(table[name], Labels):
            table[name] = categorical(table[name], CATEGORY_LEVELS.get(name))
    return table


def memory_frame(**columns: Any) -> Table:
    """The memory table from its columns (:data:`MEMORY_COLUMNS`; ``nbytes`` for ``bytes``; those of
    :data:`MEMORY_DEFAULTS` optional), sorted by ts (stably: samples at one ts keep the reader's order)."""
    columns["bytes"] = columns.pop("nbytes")
    n = len(columns["ts"])
    for name, default in MEMORY_DEFAULTS.items():
        if name not in columns:
            columns[name] = np.full(n, default, dtype=object)
    data: dict[str, Any] = {}
    for name, dtype in MEMORY_COLUMNS.items():
        if dtype == "category":
            labels = as_labels(columns[name])
            data[name] = labels if labels is not None else categorical(np.asarray(columns[name], dtype=object))
        else:
            data[name] = np.asarray(columns[name], dtype=dtype)
    order = np.argsort(data["ts"], kind="stable")
    return Table({name: value.take(order) if isinstance(value, Labels) else value[order]
                  for name, value in data.items()}, len(order))


def empty_events() -> pd.DataFrame:
    """A zero-row event table with the schema's columns and dtypes."""
    return build_events({})


def empty_table() -> Table:
    """A zero-row event table with the schema's columns and dtypes."""
    return build_table({})


# Integer columns that often hold one value on every row (a host-only trace's device, stream,
# correlation and bytes; one thread's pid and tid): held once (arrays.one_value).
_OFTEN_ONE_VALUE = frozenset({"pid", "tid", "device", "stream", "correlation", "bytes"})


def build_table(columns: dict[str, Any], extra: dict[str, Any] | None = None) -> Table:
    """Assemble an event table from column arrays; missing columns get their default.

    Readers call this once with whole columns (numpy arrays, lists, or :class:`Labels` for
    category columns; the ``columns`` dict is emptied, its arrays taken over); it applies dtypes,
    sorts rows by (ts, -dur) — stably, so ties keep the reader's order — so that a parent comes
    before its children. ``extra`` columns (reader specific, same length) are appended after the
    schema's, in the same row order.
    """
    n = 0
    for value in columns.values():
        n = len(value)
        break
    defaults: dict[str, Any] = {
        "kind": KIND_VALUES[0],
        "name": "",
        "track": "",
        "launcher": "",
        "copy_kind": "",
        "pid": 0,
        "tid": 0,
        "device": -1,
        "stream": -1,
        "correlation": -1,
        "step": -1,
        "depth": -1,
        "parent": -1,
        "bytes": -1,
        "ts": 0,
        "dur": 0,
    }
    data: dict[str, Any] = {}
    for col, dtype in COLUMNS.items():
        value = columns.get(col)
        if value is None:
            default = defaults[col]
            value = Labels(np.zeros(n, dtype=np.int8), [default]) if dtype == "category" \
                else one_value(default, n, dtype)
        if dtype == "category":
            levels = CATEGORY_LEVELS.get(col)
            labels = as_labels(value)
            if labels is not None and (levels is None or tuple(labels.categories.tolist()) == levels):
                data[col] = labels
            elif labels is not None:
                data[col] = _on_levels(levels, labels.categories, labels.codes)
            else:
                data[col] = categorical(value, levels)
        elif is_one_value(value):
            data[col] = one_value(value[0], n, dtype)  # (np.asarray to another dtype would fill every row)
        else:
            data[col] = np.asarray(value, dtype=dtype)
            if (col in _OFTEN_ONE_VALUE and one_values_shared() and len(data[col]) > 1
                    and data[col].min() == data[col].max()):
                data[col] = one_value(data[col][0], n, dtype)  # (the full array is let go)
    for col, value in (extra or {}).items():
        labels = as_labels(value)
        data[col] = labels if labels is not None else np.asarray(value)
    columns.clear()  # the caller's references go: each column below is held once, then sorted
    order = order_by_start_then_longest(data["ts"], data["dur"])
    if order is not None:
        for col in list(data):  # one column at a time, each unsorted one let go when replaced
            value = data[col]
            if isinstance(value, Labels):
                data[col] = value.take(order)
            elif not is_one_value(value):  # (one value is the same in any order)
                data[col] = value[order]
    return Table(data, n)


def build_events(columns: dict[str, Any], extra: dict[str, Any] | None = None) -> pd.DataFrame:
    """:func:`build_table` as a pandas DataFrame (for programs and tests that build a table by hand)."""
    return build_table(columns, extra).to_pandas()


def categorical(values: Any, categories: Any = None) -> Labels:
    """A category column whose categories are plain Python strings (object dtype), sorted, or
    ``categories`` in their order (values outside them become missing)."""
    codes, uniques = factorize(np.asarray(values, dtype=object) if not isinstance(values, np.ndarray)
                               else values.astype(object, copy=False))
    return _on_levels(sorted(uniques.tolist()) if categories is None else list(categories), uniques, codes)


def leveled(column: str, values_first: Any, codes: np.ndarray) -> Labels:
    """A fixed-level column from the values of distinct keys (``values_first``) and each row's key
    code: the levels are looked up once per key, not once per row."""
    return _on_levels(CATEGORY_LEVELS[column], values_first, codes)


def _on_levels(levels: Any, values_first: Any, codes: np.ndarray) -> Labels:
    """Rows given as codes into ``values_first`` (-1: missing), as labels on ``levels``; a value
    outside the levels becomes missing."""
    levels = list(levels)
    position = dict(zip(levels, range(len(levels))))
    table = np.fromiter(chain(map(position.get, values_first, repeat(-1)), (-1,)), dtype=code_type(len(levels)),
                        count=len(values_first) + 1)
    return Labels(table[codes] if len(codes) else np.zeros(0, dtype=code_type(len(levels))), levels)


def categorical_from_codes(codes: np.ndarray, values: Any) -> Labels:
    """``categorical(values[codes])`` without building the per-row array of values: categories are
    the used values, deduplicated and sorted."""
    values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    lowest = int(codes.min()) if len(codes) else 0
    if lowest < 0:
        raise ValueError("categorical_from_codes: a negative code")
    if len(codes) and lowest == int(codes.max()):
        # One value on every row (a CPU trace's launchers and call stats): no table, no gather.
        small = categorical(values[[lowest]])
        return Labels(np.full(len(codes), small.codes[0], dtype=code_type(1)), small.categories)
    # Which values the rows use: a table marked through the codes (a third of np.bincount's time,
    # which first widens the codes to int64 and counts).
    seen = np.zeros(len(values), dtype=bool)
    seen[codes] = True
    used = np.flatnonzero(seen)
    small = categorical(values[used])
    # The per-row codes are gathered straight into the narrowest type that holds them, the one
    # pandas keeps a categorical's codes in (so that its categorical shares them).
    lookup = np.full(len(values), -1, dtype=code_type(len(small.categories)))
    lookup[used] = small.codes
    return Labels(lookup[codes] if len(codes) else np.zeros(0, dtype=np.int8), small.categories)


def validate(timeline: Timeline) -> list[str]:
    """Return the invariant violations found (empty when the timeline is sound)."""
    ev = timeline.table
    problems: list[str] = []
    missing = [c for c in COLUMNS if c not in ev]
    if missing:
        return [f"missing columns: {', '.join(missing)}"]
    if (ev["dur"] < 0).any():
        problems.append("negative durations")
    ts = ev["ts"]
    if len(ts) and (np.diff(ts) < 0).any():
        problems.append("rows not sorted by ts")
    if (ev["kind"].codes < 0).any():
        problems.append("unknown kind values")
    dev = ev["device"]
    host_mask = timeline.kind_mask(*HOST_KINDS)
    if (dev[host_mask] != -1).any():
        problems.append("host events with a device index")
    if (dev[~host_mask] < 0).any():
        problems.append("device events without a device index")
    parent = ev["parent"]
    has_parent = parent >= 0
    if has_parent.any():
        idx = np.nonzero(has_parent)[0]
        p = parent[idx]
        end = ts + ev["dur"]
        if (p >= idx).any() or (ts[p] > ts[idx]).any() or (end[p] < end[idx]).any():
            problems.append("parent does not enclose child")
    kept_total = sum(timeline.meta.kept.values())
    if kept_total != len(ev):
        problems.append(f"kept counts ({kept_total}) differ from rows ({len(ev)})")
    if timeline.meta.input_events and kept_total + sum(timeline.meta.dropped.values()) != timeline.meta.input_events:
        problems.append("kept + dropped differs from input events")
    return problems
