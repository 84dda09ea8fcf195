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
from typing import Any

import numpy as np
import pandas as pd

from traceview.arrays import is_one_value, one_value, one_values_shared, order_by_start_then_longest

# 1.1: role column; XPlane fn_call, Kineto elements. 1.2: role device_communication (collective kernels
# were device_kernel before: a filter on device_kernel no longer sees them). 1.3: memory table columns
# op and allocator; XPlane allocator samples (MemoryAllocation / MemoryDeallocation) fill the memory table.
# 1.4: Kineto input_dtypes.
SCHEMA_VERSION = "1.4"


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


@dataclass
class Timeline:
    """A normalized trace: the event table plus its metadata."""

    events: pd.DataFrame
    meta: TraceMeta
    memory: pd.DataFrame | None = None  # allocator samples (MEMORY_COLUMNS) when the profiler recorded them

    @property
    def has_device(self) -> bool:
        device = self.events["device"].to_numpy()
        if is_one_value(device):  # (a host-only trace's -1 on every row, held once: no pass over it)
            return bool(device[0] >= 0)
        return bool((device >= 0).any())

    def of_kind(self, *kinds: Kind) -> pd.DataFrame:
        mask = self.events["kind"].isin([k.value for k in kinds])
        return self.events[mask]


def memory_frame(**columns: Any) -> pd.DataFrame:
    """The memory table from its columns (:data:`MEMORY_COLUMNS`; ``nbytes`` for ``bytes``; those of
    :data:`MEMORY_DEFAULTS` optional), sorted by ts (stably: samples at one ts keep the reader's order)."""
    columns["bytes"] = columns.pop("nbytes")
    n = len(columns["ts"])
    for name, default in MEMORY_DEFAULTS.items():
        if name not in columns:
            columns[name] = np.full(n, default, dtype=object)
    data = {name: (columns[name] if dtype == "category" and isinstance(columns[name], pd.Categorical)
                   else np.asarray(columns[name], dtype=object if dtype == "category" else dtype))
            for name, dtype in MEMORY_COLUMNS.items()}
    for name, dtype in MEMORY_COLUMNS.items():
        if dtype == "category" and not isinstance(data[name], pd.Categorical):
            data[name] = categorical(data[name])
    order = np.argsort(data["ts"], kind="stable")
    return pd.DataFrame({name: value[order] for name, value in data.items()})


def empty_events() -> pd.DataFrame:
    """A zero-row event table with the schema's columns and dtypes."""
    return build_events({})


# Integer columns that often hold one value on every row (a host-only trace's device, stream,
# correlation and bytes; one thread's pid and tid): held once (arrays.one_value).
_OFTEN_ONE_VALUE = frozenset({"pid", "tid", "device", "stream", "correlation", "bytes"})


def build_events(columns: dict[str, Any], extra: dict[str, Any] | None = None) -> pd.DataFrame:
    """Assemble an event table from column arrays; missing columns get their default.

    Readers call this once with whole columns (numpy arrays, lists, or ``pd.Categorical`` for
    category columns; the ``columns`` dict is emptied, its arrays taken over); it applies dtypes, sorts rows by (ts, -dur) — stably, so ties keep the
    reader's order — and resets the index so row position == index. ``extra`` columns (reader
    specific, same length) are appended after the schema's, in the same row order.
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
            value = np.full(n, default, dtype=object) if dtype == "category" else one_value(default, n, dtype)
        if dtype == "category":
            levels = CATEGORY_LEVELS.get(col)
            if isinstance(value, pd.Categorical) and (levels is None or value.dtype == level_dtype(col)):
                data[col] = value
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
        data[col] = value if isinstance(value, pd.Categorical) else np.asarray(value)
    columns.clear()  # the caller's references go: each column below is held once, then sorted
    order = order_by_start_then_longest(data["ts"], data["dur"])
    if order is not None:
        for col in list(data):  # one column at a time, each unsorted one let go when replaced
            if not is_one_value(data[col]):  # (one value is the same in any order)
                data[col] = data[col][order]
    # copy=False: the columns stay separate arrays; consolidating them into one 2-D block copies
    # every integer column (a second or more on a gigabyte trace) for nothing.
    return pd.DataFrame(data, copy=False)


def categorical(values: Any, categories: Any = None) -> pd.Categorical:
    """A category column whose categories are plain Python strings (object dtype), sorted.

    pandas ≥ 3 would infer its own string dtype for the categories, backed by pyarrow when that is
    installed; every ``to_numpy()`` of the column would then convert millions of values. Object
    categories keep the conversion a take from an object array whatever is installed.
    ``categories`` fixes the levels (values outside them become NaN, as with ``pd.Categorical``).
    """
    if categories is None:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
        return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(pd.Index(uniques, dtype=object)))
    # Codes through a hash of the values, not pd.Categorical(values, ...): that would first convert
    # the values to pandas' string dtype.
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return _on_levels(list(categories), uniques, codes)


def level_dtype(column: str) -> pd.CategoricalDtype:
    """The dtype of a column with fixed levels (``kind``, ``copy_kind``): its levels, in order."""
    return pd.CategoricalDtype(pd.Index(CATEGORY_LEVELS[column], dtype=object))


def leveled(column: str, values_first: Any, codes: np.ndarray) -> pd.Categorical:
    """A fixed-level column from the values of distinct keys (``values_first``) and each row's key
    code: the levels are looked up once per key, not once per row."""
    return _on_levels(CATEGORY_LEVELS[column], values_first, codes)


def _on_levels(levels: Any, values_first: Any, codes: np.ndarray) -> pd.Categorical:
    """Rows given as codes into ``values_first`` (-1: missing), as a categorical on ``levels``;
    a value outside the levels becomes missing."""
    position = {level: i for i, level in enumerate(levels)}
    table = np.array([position.get(v, -1) for v in values_first] + [-1], dtype=np.int64)
    return pd.Categorical.from_codes(table[codes] if len(codes) else np.asarray(codes, dtype=np.int64),
                                     dtype=pd.CategoricalDtype(pd.Index(list(levels), dtype=object)))


def categorical_from_codes(codes: np.ndarray, values: Any) -> pd.Categorical:
    """``categorical(values[codes])`` without building the per-row array of values: categories are
    the used values, deduplicated and sorted."""
    values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    lowest = int(codes.min()) if len(codes) else 0
    if lowest < 0:
        raise ValueError("categorical_from_codes: a negative code")
    if len(codes) and lowest == int(codes.max()):
        # One value on every row (a CPU trace's launchers and call stats): no table, no gather.
        small = categorical(values[[lowest]])
        return pd.Categorical.from_codes(np.full(len(codes), small.codes[0], dtype=_code_type(1)), dtype=small.dtype)
    # Which values the rows use: a table marked through the codes (a third of np.bincount's time,
    # which first widens the codes to int64 and counts).
    seen = np.zeros(len(values), dtype=bool)
    seen[codes] = True
    used = np.flatnonzero(seen)
    small = categorical(values[used])
    # The per-row codes are gathered straight into the narrowest type that holds them, the one
    # pandas keeps a categorical's codes in (from_codes then takes the array as it is, no copy).
    lookup = np.full(len(values), -1, dtype=_code_type(len(small.categories)))
    lookup[used] = small.codes
    return pd.Categorical.from_codes(lookup[codes] if len(codes) else codes.astype(np.int64), dtype=small.dtype)


def _code_type(n_categories: int) -> type:
    """The integer type pandas holds codes of this many categories in (its coerce_indexer_dtype)."""
    for kind in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(kind).max:
            return kind
    return np.int64


def validate(timeline: Timeline) -> list[str]:
    """Return the invariant violations found (empty when the timeline is sound)."""
    ev = timeline.events
    problems: list[str] = []
    missing = [c for c in COLUMNS if c not in ev.columns]
    if missing:
        return [f"missing columns: {', '.join(missing)}"]
    if (ev["dur"].to_numpy() < 0).any():
        problems.append("negative durations")
    ts = ev["ts"].to_numpy()
    if len(ts) and (np.diff(ts) < 0).any():
        problems.append("rows not sorted by ts")
    if ev["kind"].isna().any():
        problems.append("unknown kind values")
    dev = ev["device"].to_numpy()
    host_mask = ev["kind"].isin([k.value for k in HOST_KINDS]).to_numpy()
    if (dev[host_mask] != -1).any():
        problems.append("host events with a device index")
    if (dev[~host_mask] < 0).any():
        problems.append("device events without a device index")
    parent = ev["parent"].to_numpy()
    has_parent = parent >= 0
    if has_parent.any():
        idx = np.nonzero(has_parent)[0]
        p = parent[idx]
        end = ts + ev["dur"].to_numpy()
        if (p >= idx).any() or (ts[p] > ts[idx]).any() or (end[p] < end[idx]).any():
            problems.append("parent does not enclose child")
    kept_total = sum(timeline.meta.kept.values())
    if kept_total != len(ev):
        problems.append(f"kept counts ({kept_total}) differ from rows ({len(ev)})")
    if timeline.meta.input_events and kept_total + sum(timeline.meta.dropped.values()) != timeline.meta.input_events:
        problems.append("kept + dropped differs from input events")
    return problems
