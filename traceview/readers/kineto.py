"""Reader for Kineto Chrome-trace JSON: torch.profiler ``export_chrome_trace`` and
``tensorboard_trace_handler`` output (``.json`` / ``.json.gz``).

Supported part of the Trace Event Format:
- complete events (``ph == "X"``) of the Kineto categories ``cpu_op``, ``user_annotation``,
  ``gpu_user_annotation``, ``python_function``, ``cuda_runtime``, ``cuda_driver``, ``kernel``,
  ``gpu_memcpy``, ``gpu_memset``, ``cuda_sync`` (and their 2021-era capitalised spellings
  ``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``);
- metadata events (``ph == "M"``) for process / thread names (used for track labels, then dropped);
- flows (``ac2g``, ``async_cpu_to_gpu``, ``fwdbwd``), instant events and the profiler's own
  ``Trace`` span are counted as dropped with a reason: the launch→kernel link they draw is
  carried by ``args.correlation`` instead.

Timestamps: ``ts``/``dur`` are µs, often floats with ns fractions. Absolute epoch µs do not fit
in a double with ns precision (1.7e15 µs has a 0.25 µs ulp), so when a trace has fractional
absolute timestamps the ``"ts"`` numbers are re-read from the raw text as exact decimals and
checked against the parsed values. Integer µs are converted to ns with integer arithmetic
(``ts * 1000.0`` in floating point would be off by up to 128 ns at epoch scale).
``baseTimeNanoseconds`` (newer Kineto) anchors relative ts.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from traceview import categories as cat
from traceview.kinds import KINETO_RULES, apply_kind_rules
from traceview.errors import FormatError
from traceview.readers._io import read_bytes
from traceview.schema import Device, Kind, Timeline, TraceMeta, build_events

FORMAT_NAME = "kineto-json"

# Kineto category (lower-cased) -> kind before name refinement.
_CATEGORY_KIND: dict[str, Kind] = {
    "cpu_op": Kind.HOST_OP,
    "operator": Kind.HOST_OP,
    "user_annotation": Kind.ANNOTATION,
    "python_function": Kind.PYTHON,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "cuda_sync": Kind.DEVICE_SYNC,
    "gpu_user_annotation": Kind.DEVICE_ANNOTATION,
}
_DEVICE_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.DEVICE_SYNC, Kind.DEVICE_ANNOTATION)
_FLOW_PHASES = {"s", "f", "t"}
_TS_NUMBER = re.compile(rb'"ts"\s*:\s*(-?\d+)(?:\.(\d+))?(?:[eE][-+]?\d+)?')
# Floats above this many µs cannot carry ns exactly in a double (2**53 ns / 1000).
_EXACT_FLOAT_LIMIT_US = float(2**53) / 1000.0


def sniff(head: bytes) -> bool:
    """True when the first bytes look like a Chrome-trace JSON document."""
    text = head.lstrip()
    if text[:1] == b"[":
        return b'"ph"' in text or text[1:].lstrip()[:1] in (b"{", b"]")
    return text[:1] == b"{" and (b'"traceEvents"' in text or b'"schemaVersion"' in text or b'"ph"' in text)


def read(path: Path) -> Timeline:
    """Read one Kineto trace file into the normalized timeline (not yet step-annotated)."""
    raw = read_bytes(path)
    if not raw or raw.isspace():  # (no strip(): that would copy the whole document)
        raise FormatError(f"{path}: file is empty; re-export the trace")
    with _gc_paused():
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            where = f"at byte {err.pos}" if getattr(err, "pos", None) is not None else ""
            truncated = " (file looks truncated)" if err.pos is not None and err.pos >= len(raw) - 2 else ""
            raise FormatError(
                f"{path}: invalid JSON {where}{truncated}: {err.msg}; re-export the trace or check the copy"
            ) from None
        if isinstance(doc, list):
            events, top = doc, {}
        elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
            events, top = doc["traceEvents"], doc
        else:
            raise FormatError(f"{path}: JSON has no 'traceEvents' list; not a Chrome/Kineto trace")
        return _build(path, raw, events, top)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a document is parsed and turned into columns.

    A parsed trace is hundreds of thousands of dicts without reference cycles; while they are
    created the collector rescans them again and again (a third of orjson's time on a 50 MB
    trace) and frees nothing. The previous state is restored on the way out.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build(path: Path, raw: bytes, events: list[Any], top: dict[str, Any]) -> Timeline:
    # traceview's numpy baseline writes step spans in this format and says so in traceName.
    framework = "numpy" if str(top.get("traceName", "")).startswith("numpy") else "torch"
    meta = TraceMeta(source=str(path), format=FORMAT_NAME, framework=framework)
    meta.input_events = len(events)
    meta.host_name = str(top.get("host_name", ""))
    meta.extra = {k: top[k] for k in ("schemaVersion", "displayTimeUnit", "traceName") if k in top}
    base_ns = top.get("baseTimeNanoseconds")
    if base_ns is not None and (type(base_ns) is not int or not 0 <= base_ns < 2**62):
        meta.notes.append(f"baseTimeNanoseconds {str(base_ns)[:40]!r} is not a time in ns; ignored")
        base_ns = None

    ts_exact = _exact_timestamps(raw, events)
    if ts_exact is None and _needs_exact(events):
        meta.notes.append("timestamps re-read as parsed doubles: sub-µs precision may be off by up to 0.25 µs")

    process_names: dict[Any, str] = {}
    thread_names: dict[tuple[Any, Any], str] = {}
    # One pass over the events: complete events are classified by category as they come; the
    # others are counted by drop reason (phase reasons first, then category reasons, as recorded).
    phase_drops: dict[str, int] = {}
    category_drops: dict[str, int] = {}
    category_cache: dict[str, tuple[str, str | None]] = {}  # cat as written -> (lower-cased, kind value)
    xs: list[dict[str, Any]] = []
    kind_values: list[str] = []
    rows_list: list[int] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            phase_drops["not a JSON object"] = phase_drops.get("not a JSON object", 0) + 1
            continue
        ph = ev.get("ph")
        if type(ph) is not str:
            phase_drops["phase is not a string"] = phase_drops.get("phase is not a string", 0) + 1
            continue
        if ph == "X":
            raw_cat = ev.get("cat", "")
            cached = category_cache.get(raw_cat) if type(raw_cat) is str else None
            if cached is None:
                lowered = str(raw_cat).lower()
                kind = _CATEGORY_KIND.get(lowered)
                cached = (lowered, kind.value if kind is not None else None)
                if type(raw_cat) is str:
                    category_cache[raw_cat] = cached
            c, k = cached
            if k is None:
                reason = "profiler span (cat Trace)" if c == "trace" else f"unknown category {c!r}"
            elif "ts" not in ev or not isinstance(ev.get("pid"), (int, str)):
                reason = "complete event without ts or pid"
            else:
                reason = _bad_fields(ev)
            if reason is None:
                xs.append(ev)
                kind_values.append(k)
                rows_list.append(i)
                continue
            category_drops[reason] = category_drops.get(reason, 0) + 1
            continue
        if ph == "M":
            args = ev.get("args") or {}
            if ev.get("name") == "process_name":
                process_names[ev.get("pid")] = str(args.get("name", ""))
            elif ev.get("name") == "thread_name":
                thread_names[(ev.get("pid"), ev.get("tid"))] = str(args.get("name", ""))
            reason = "metadata record (names used for track labels)"
        elif ph in _FLOW_PHASES:
            reason = "flow arrow (link kept as correlation id)"
        elif ph in ("i", "I", "n"):
            reason = "instant event (no duration)"
        elif ph in ("C",):
            reason = "counter sample"
        else:
            reason = f"unsupported phase {ph!r}"
        phase_drops[reason] = phase_drops.get(reason, 0) + 1
    for reason, count in (*phase_drops.items(), *category_drops.items()):
        meta.drop(reason, count)

    kinds = np.array(kind_values, dtype=object)
    rows = np.array(rows_list, dtype=np.int64)
    del kind_values, rows_list

    n = len(xs)
    names_list = [e.get("name", "") for e in xs]
    if set(map(type, names_list)) - {str}:
        names_list = [str(v) for v in names_list]
    names = np.array(names_list, dtype=object)
    dur_us = np.array([e.get("dur", 0) or 0 for e in xs], dtype=np.float64)
    ts_ns = ts_exact[rows] if ts_exact is not None else _ns_from_us([e["ts"] for e in xs])
    dur_ns = np.round(dur_us * 1000.0).astype(np.int64)
    negative = dur_ns < 0
    if negative.any():
        meta.drop("negative duration", int(negative.sum()))

    args = [e.get("args") or {} for e in xs]
    device_kinds = [k.value for k in _DEVICE_KINDS]
    is_device = np.isin(kinds, device_kinds)
    pid = _int_column([e["pid"] for e in xs])
    tid = _int_column([e.get("tid", 0) for e in xs])
    device_rows = np.flatnonzero(is_device)
    device = np.full(n, -1, dtype=np.int64)
    stream = np.full(n, -1, dtype=np.int64)
    if len(device_rows):
        device_args = [args[j] for j in device_rows.tolist()]
        device[device_rows] = _int_column([a.get("device", -1) for a in device_args])
        stream[device_rows] = _int_column([a.get("stream", -1) for a in device_args])
    device = np.where(is_device & (device < 0), pid, device)
    stream = np.where(is_device & (stream < 0), tid, stream)
    correlation = _int_column([a.get("correlation", -1) for a in args])
    elements = np.array([_largest_input(a.get("Input Dims")) for a in args], dtype=np.int64)
    nbytes = _int_column([a.get("bytes", -1) for a in args])

    kinds = apply_kind_rules(KINETO_RULES, kinds, names, kinds)  # category kind refined by name

    copy_kind = np.full(n, "", dtype=object)
    memcpy_mask = kinds == Kind.MEMCPY.value
    if memcpy_mask.any():
        inverse, uniq = pd.factorize(names[memcpy_mask])
        copy_kind[memcpy_mask] = np.array([cat.copy_kind_from_kineto_name(u) for u in uniq], dtype=object)[inverse]
    copy_kind[kinds == Kind.MEMSET.value] = "memset"

    # Track labels, built once per distinct (pid, tid) / (device, stream).
    key_a = np.where(is_device, device, pid)
    key_b = np.where(is_device, stream, tid)
    codes_a, uniq_a = pd.factorize(key_a)
    codes_b, uniq_b = pd.factorize(key_b)
    combined = (codes_a.astype(np.int64) * len(uniq_b) + codes_b) * 2 + is_device
    codes, uniques = pd.factorize(combined)
    labels = []
    for key in uniques.tolist():
        dev, rest = key % 2, key // 2
        a, b = int(uniq_a[rest // len(uniq_b)]), int(uniq_b[rest % len(uniq_b)])
        labels.append(f"GPU {a} stream {b}" if dev else _host_label(a, b, process_names, thread_names))
    track = np.array(labels, dtype=object)[codes]

    keep = ~negative
    if base_ns is not None:
        # Newer Kineto: ts relative to baseTimeNanoseconds.
        origin_raw = int(ts_ns[keep].min()) if keep.any() else 0
        meta.origin_ns = int(base_ns) + origin_raw
    else:
        origin_raw = int(ts_ns[keep].min()) if keep.any() else 0
        meta.origin_ns = origin_raw
    ts_rel = ts_ns - origin_raw

    meta.devices = _devices(top, device[is_device & keep])
    frame = build_events(
        {
            "ts": ts_rel[keep],
            "dur": dur_ns[keep],
            "kind": kinds[keep],
            "name": names[keep],
            "track": track[keep],
            "pid": pid[keep],
            "tid": tid[keep],
            "device": device[keep],
            "stream": stream[keep],
            "correlation": correlation[keep],
            "bytes": nbytes[keep],
            "copy_kind": copy_kind[keep],
        }
    )
    # Extra column (record_shapes): elements of the op's largest input, -1 when not recorded.
    frame["elements"] = _reorder_like(frame, ts_rel[keep], dur_ns[keep], elements[keep])
    meta.extra["extra_columns"] = ["elements"]
    return Timeline(events=frame, meta=meta)


_MAX_ELEMENTS = 2**62  # a product of recorded dims beyond this is clamped (hostile or corrupt shapes)


def _largest_input(dims: Any) -> int:
    """Elements of the largest input of an op from Kineto's ``Input Dims`` ([[1000, 10], [50], []])."""
    if not isinstance(dims, list):
        return -1
    largest = -1
    for shape in dims:
        if not isinstance(shape, list) or not shape:
            continue
        count = 1
        for d in shape:
            if type(d) is not int or d < 0:
                count = -1
                break
            count = min(count * d, _MAX_ELEMENTS)
        largest = max(largest, count)
    return largest


def _reorder_like(frame: pd.DataFrame, ts: np.ndarray, dur: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (in reader order) in the row order build_events gave ``frame`` (sorted by ts, -dur)."""
    order = np.lexsort((-dur, ts))
    return values[order]


def _needs_exact(events: list[Any]) -> bool:
    """True when some timestamp is a large float whose ns digits a double cannot hold."""
    for ev in events[:: max(1, len(events) // 2000)] or []:
        ts = ev.get("ts") if isinstance(ev, dict) else None
        if isinstance(ts, float) and abs(ts) > _EXACT_FLOAT_LIMIT_US and ts != int(ts):
            return True
    return False


def _exact_timestamps(raw: bytes, events: list[Any]) -> np.ndarray | None:
    """Per-event exact ts in ns (aligned with ``events``), re-read from the JSON text.

    Only done when the doubles would lose ns digits. Returns None when the text cannot be
    aligned with the parsed events (then the doubles are used and a note says so).
    """
    if not _needs_exact(events):
        return None
    has_ts = [isinstance(e, dict) and "ts" in e for e in events]
    with_ts = list(itertools.compress(events, has_ts))
    found = _TS_NUMBER.findall(raw)
    if len(found) != len(with_ts):
        return None
    # "<whole>" + first three fraction digits (zero padded) is the value in ns, sign included:
    # "-12" + "500" reads as -12500 = -12 µs - 500 ns.
    exact = np.array([int(whole + (frac + b"000")[:3]) for whole, frac in found], dtype=np.int64)
    approx = np.array([float(e["ts"]) for e in with_ts], dtype=np.float64)
    if len(approx) and np.abs(exact / 1000.0 - approx).max() > 1.0:
        return None
    out = np.zeros(len(events), dtype=np.int64)
    out[np.array(has_ts, dtype=bool)] = exact
    return out


# Timestamps and durations, in µs, that fit in int64 ns with room for sums (2**62 ns ≈ 146 years).
_MAX_US = float(2**62) / 1000.0
_INT64_MAX = 2**63 - 1


def _bad_fields(ev: dict[str, Any]) -> str | None:
    """Why a complete event's fields cannot be used (a drop reason), or None when they can."""
    ts = ev.get("ts")
    if type(ts) not in (int, float) or not (-_MAX_US < ts < _MAX_US):
        return "ts is not a number in range"
    dur = ev.get("dur", 0)
    if dur is not None and (type(dur) not in (int, float) or not (0 <= dur < _MAX_US)):
        return "dur is not a non-negative number in range"
    if isinstance(ev.get("pid"), int) and not -_INT64_MAX <= ev["pid"] <= _INT64_MAX:
        return "pid out of range"
    tid = ev.get("tid", 0)
    if not isinstance(tid, (int, str)) or (isinstance(tid, int) and not -_INT64_MAX <= tid <= _INT64_MAX):
        return "tid is not an id"
    args = ev.get("args")
    if args is not None and not isinstance(args, dict):
        return "args is not an object"
    return None


def _ns_from_us(values: list[Any]) -> np.ndarray:
    """Timestamps in µs (JSON numbers) to int64 ns, without losing digits to float rounding.

    Integer µs are multiplied exactly; for floats the whole and fractional µs are converted
    apart (``ts * 1000.0`` as a double is off by up to 128 ns at epoch scale, 1.7e18 ns).
    """
    if not set(map(type, values)) - {int}:
        return np.array(values, dtype=np.int64) * 1000
    us = np.array(values, dtype=np.float64)
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.round((us - whole) * 1000.0).astype(np.int64)


def _int_column(values: list[Any]) -> np.ndarray:
    """int64 array of id-like values; plain ints go straight to numpy, anything else via ``_as_int``."""
    if not set(map(type, values)) - {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass  # an id beyond int64: one by one
    return np.array([_as_int(v) for v in values], dtype=np.int64)


def _as_int(value: Any) -> int:
    """An id as int64: out-of-range or non-finite numbers are unknown (-1)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -_INT64_MAX <= value <= _INT64_MAX else -1
    if isinstance(value, float):
        return int(value) if abs(value) < 2**62 else -1
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            # Non-numeric ids ("Spans", "stream 7 …"): a stable small negative id per string.
            return -2 - (sum(value.encode()) % 1_000_000)
        return number if -_INT64_MAX <= number <= _INT64_MAX else -1
    return -1


def _host_label(p: int, t: int, process_names: dict[Any, str], thread_names: dict[tuple[Any, Any], str]) -> str:
    """"host <pid>/<tid> (<thread name>)", falling back to the process name."""
    thread = thread_names.get((p, t)) or thread_names.get((str(p), str(t))) or ""
    thread = re.sub(r"^thread \d+ \((.*)\)$", r"\1", thread)  # Kineto writes "thread 123 (name)"
    name = thread or process_names.get(p) or process_names.get(str(p)) or ""
    return f"host {p}/{t} ({name})" if name else f"host {p}/{t}"


def _devices(top: dict[str, Any], device_ids: np.ndarray) -> list[Device]:
    props = {int(d.get("id", -1)): d for d in top.get("deviceProperties") or [] if isinstance(d, dict)}
    out = []
    for idx in sorted(set(int(x) for x in np.unique(device_ids))):
        prop = props.get(idx, {})
        name = str(prop.get("name", ""))
        vendor = "amd" if "AMD" in name or "Instinct" in name or "gfx" in name else ("nvidia" if name else "")
        out.append(Device(index=idx, name=name, vendor=vendor))
    return out
