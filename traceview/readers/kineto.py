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
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from traceview import categories as cat
from traceview.arrays import combination_codes, factorize, joined, unique_sorted
from traceview.errors import FormatError
from traceview.kinds import KINETO_RULES, apply_kind_rules
from traceview.readers._io import UTF8_BOM, InflatedText, is_chrome_trace, read_bytes
from traceview.readers._json_stream import Declined, EventArrayReader, Utf8Check
from traceview.readers import _prefetch
from traceview.readers.kineto_fields import (BAD_TID, EXACT_FLOAT_LIMIT_US, EXACT_TS_DECODER, FAST_DECODER,
                                             INT64_MAX, MAX_US, NOT_AN_OBJECT, Fields, as_int, ns_from_text,
                                             scan_fields)
from traceview.readers.kineto_names import in_a_name, repair_names
from traceview.builder import RawTrace, build
from traceview.table import Labels, Table
from traceview.schema import (KIND_VALUES, MEMORY_SAMPLE_REASON, Device, Kind, Timeline, TraceMeta,
                              categorical_from_codes, leveled, memory_frame)

if TYPE_CHECKING:
    import pandas as pd

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
_MAX_TIME_NS = 2**62


def sniff(head: bytes) -> bool:
    """True when the first bytes look like a Chrome-trace JSON document (the rule is stated in
    readers/_json_stream.py, where the command line's read-ahead asks it too)."""
    return is_chrome_trace(head)


def read(path: Path) -> Timeline:
    """Read one Kineto trace file into the normalized timeline (not yet step-annotated).

    Three decodings give the same timeline (tests/test_fast_path.py): the compiled scanner
    (columns straight from the text), then the typed msgspec decoding (block by block), then
    orjson event by event, which names each problem. Each hands a document it does not take to
    the next."""
    with _gc_paused():
        for decoding in (read_scanned, read_fast):
            try:
                return decoding(path)
            except Declined:
                continue
        return read_reference(path)


def read_scanned(path: Path) -> Timeline:
    """The compiled scanner's decoding; raises :class:`Declined` for documents it does not take
    (and when the extension is not built). The command line may have scanned the file already,
    while the analyses were being imported (readers/_prefetch.py)."""
    ahead = _prefetch.take(path)
    if ahead is not None and ahead.declined is not None:
        raise Declined(ahead.declined)
    scanned = ahead.scanned if ahead is not None else None
    if scanned is None:
        scanned = scan_fields(path)
    return _timeline(path, scanned.fields, scanned.top, scanned.events_seen, scanned.ts_exact)


def read_fast(path: Path) -> Timeline:
    """Typed block-by-block decoding; raises :class:`Declined` for documents it does not take.

    Timestamps are decoded as doubles; when one turns out to be a fractional epoch µs value (whose
    ns digits a double cannot hold) the file is decoded again with each ``ts`` kept as its text."""
    for decoder in (FAST_DECODER, EXACT_TS_DECODER):
        reader = EventArrayReader(path, decoder)
        fields = Fields()
        for batch in reader.batches():
            fields.add_structs(batch)
            if fields.needs_exact_ts and decoder is FAST_DECODER:
                break
        else:
            ts_exact = joined(fields.ts_exact, np.int64) if fields.ts_exact else None
            return _timeline(path, fields, reader.top, reader.events_seen, ts_exact)
    raise AssertionError("unreachable: the exact decoder never asks for itself")


def first_invalid_utf8(raw: bytes, chunk: int = 1 << 20) -> int | None:
    """The offset of the first byte that is not UTF-8 (a lone surrogate's encoding included), or
    None; checked a chunk at a time, so that no text of the whole document is made."""
    check = Utf8Check()
    for start in range(0, len(raw), chunk):
        if not check.feed(raw[start:start + chunk]):
            return check.bad_at
    return None if check.feed(b"", final=True) else check.bad_at


def read_reference(path: Path) -> Timeline:
    """Whole-document orjson decoding with per-event type checks (the reference the fast path matches)."""
    raw = read_bytes(path)
    if not raw or raw.isspace():  # (no strip(): that would copy the whole document)
        raise FormatError(f"{path}: file is empty; re-export the trace")
    skipped = len(UTF8_BOM) if raw.startswith(UTF8_BOM) else 0
    repaired = 0
    try:
        doc = orjson.loads(memoryview(raw)[skipped:])
    except orjson.JSONDecodeError as err:
        # torch.profiler writes some event names unescaped (readers/kineto_names.py): with them
        # escaped, the rest of the document may be valid.
        bad_byte = first_invalid_utf8(raw) if "UTF-8" in err.msg else None
        at = bad_byte if bad_byte is not None else (err.pos + skipped if err.pos is not None else None)
        fixed, repaired = repair_names(memoryview(raw)[skipped:]) if at is not None and in_a_name(raw, at) \
            else (b"", 0)
        scanned = _scanned_text(path, fixed) if repaired else None
        if scanned is not None:
            scanned.meta.notes.append(_repaired_note(repaired))
            return scanned
        try:
            doc = orjson.loads(fixed) if repaired else None
        except orjson.JSONDecodeError:
            repaired = 0
        if not repaired:
            raise _invalid_json(path, raw, skipped, err, bad_byte) from None
        raw, skipped = fixed, 0
        del fixed
    if isinstance(doc, list):
        events, top = doc, {}
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events, top = doc["traceEvents"], doc
    else:
        raise FormatError(f"{path}: JSON has no 'traceEvents' list; not a Chrome/Kineto trace")
    fields = Fields()
    fields.add_dicts(events)
    ts_exact = _exact_timestamps(raw, events)
    del raw
    timeline = _timeline(path, fields, top, len(events), ts_exact)
    if ts_exact is None and _needs_exact(events):
        timeline.meta.notes.append("timestamps re-read as parsed doubles: sub-µs precision may be off by up to 0.25 µs")
    if repaired:
        timeline.meta.notes.append(_repaired_note(repaired))
    return timeline


def _scanned_text(path: Path, text: bytes) -> Timeline | None:
    """``path``'s document given as ``text`` (its names repaired), read by the compiled scanner —
    columns straight from the text, not a decoded document of every event (a 715 MB capture: 27 s
    and 7.4 GB that way) —; None where the scanner declines it or is not built."""
    try:
        scanned = scan_fields(path, InflatedText(text))
    except Declined:
        return None
    return _timeline(path, scanned.fields, scanned.top, scanned.events_seen, scanned.ts_exact)


def _repaired_note(repaired: int) -> str:
    return (f"{repaired} event name(s) were not valid JSON (quotes, backslashes or control characters left "
            "unescaped, or bytes that are not UTF-8: torch.profiler writes Python frames' names as they are, "
            "with_stack=True) and were read with them escaped")


def _invalid_json(path: Path, raw: bytes, skipped: int, err: orjson.JSONDecodeError,
                  bad_byte: int | None) -> FormatError:
    """The one line that says where ``raw`` (``skipped``: a byte-order mark's length) is not JSON;
    ``bad_byte``: where it is not UTF-8, if that is why."""
    if bad_byte is not None:  # (orjson then says "byte 0" and may speak of surrogates)
        return FormatError(f"{path}: text that is not UTF-8 at byte {bad_byte}; JSON must be UTF-8: "
                           "re-export the trace or check the copy")
    where = f"at byte {err.pos + skipped}" if getattr(err, "pos", None) is not None else ""
    truncated = " (file looks truncated)" if err.pos is not None and err.pos >= len(raw) - 2 else ""
    return FormatError(f"{path}: invalid JSON {where}{truncated}: {err.msg}; re-export the trace or check the copy")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a document is decoded and turned into columns.

    A decoded trace is hundreds of thousands of objects without reference cycles; while they are
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


# ---------------------------------------------------------------------------------------------
# Columns: every check and classification runs once per distinct value or as an array operation
# ---------------------------------------------------------------------------------------------

_METADATA_REASON = "metadata record (names used for track labels)"


def _phase_reason(phase: Any) -> str | None:
    """Why an element with this ``ph`` is not a complete event (None for ``X``)."""
    if phase is NOT_AN_OBJECT:
        return "not a JSON object"
    if type(phase) is not str:
        return "phase is not a string"
    if phase == "X":
        return None
    if phase == "M":
        return _METADATA_REASON
    if phase in _FLOW_PHASES:
        return "flow arrow (link kept as correlation id)"
    if phase in ("i", "I", "n"):
        return "instant event (no duration)"
    if phase == "C":
        return "counter sample"
    return f"unsupported phase {phase!r}"


def _category(raw: str) -> tuple[str | None, str | None]:
    """(kind value, drop reason) of a complete event's category."""
    lowered = raw.lower()
    kind = _CATEGORY_KIND.get(lowered)
    if kind is not None:
        return kind.value, None
    return None, "profiler span (cat Trace)" if lowered == "trace" else f"unknown category {lowered!r}"


class _Reasons:
    """Drop reasons as small integer codes, one per event (-1: kept)."""

    def __init__(self, n: int) -> None:
        self.code = np.full(n, -1, dtype=np.int64)
        self.text: list[str] = []

    def mark(self, rows: np.ndarray, reason: str) -> None:
        """Give ``reason`` to the rows of the boolean mask that have none yet."""
        rows = rows & (self.code < 0)
        if rows.any():
            self.code[rows] = len(self.text)
            self.text.append(reason)

    def mark_by_value(self, codes: np.ndarray, rows: np.ndarray, reason_of: list[str | None]) -> None:
        """Per-event reason looked up by a value code (one reason per distinct value)."""
        table = np.full(len(reason_of), -1, dtype=np.int64)
        for value_index, reason in enumerate(reason_of):
            if reason is not None:
                if reason not in self.text:
                    self.text.append(reason)
                table[value_index] = self.text.index(reason)
        looked_up = table[codes] if len(codes) else codes
        take = rows & (self.code < 0) & (looked_up >= 0)
        self.code[take] = looked_up[take]

    def count_into(self, meta: TraceMeta, groups: list[np.ndarray]) -> None:
        """Count each reason, reasons of earlier groups first, in order of first occurrence within a group."""
        for rows in groups:
            codes = self.code[rows]
            codes = codes[codes >= 0]
            counts = np.bincount(codes, minlength=len(self.text))
            present = np.flatnonzero(counts)
            first = [int(np.argmax(codes == code)) for code in present.tolist()]  # a handful of reasons
            for code in present[np.argsort(first, kind="stable")].tolist():
                meta.drop(self.text[code], int(counts[code]))


def _timeline(path: Path, fields: Fields, top: dict[str, Any], input_events: int,
              ts_exact: np.ndarray | None) -> Timeline:
    # traceview's numpy baseline writes step spans in this format and says so in traceName.
    framework = "numpy" if str(top.get("traceName", "")).startswith("numpy") else "torch"
    meta = TraceMeta(source=str(path), format=FORMAT_NAME, framework=framework)
    meta.input_events = input_events
    meta.host_name = str(top.get("host_name", ""))
    meta.extra = {k: top[k] for k in ("schemaVersion", "displayTimeUnit", "traceName") if k in top}
    distributed = top.get("distributedInfo")
    if isinstance(distributed, dict):  # torch.distributed runs: {"backend": "nccl", "rank": 1, "world_size": 2}
        meta.extra["distributed"] = {k: v for k, v in distributed.items()
                                     if k in ("backend", "rank", "world_size") and type(v) in (int, str)}
    base_ns = top.get("baseTimeNanoseconds")
    if base_ns is not None and (type(base_ns) is not int or not 0 <= base_ns < 2**62):
        meta.notes.append(f"baseTimeNanoseconds {str(base_ns)[:40]!r} is not a time in ns; ignored")
        base_ns = None

    # The reader's fields are let go of one by one as the timeline takes what it needs of them:
    # held to the end, they doubled what a large trace holds (a 1 GB trace's fields are 0.6 GB, and
    # every MB a process touches for the first time costs it ~2 ms here: benchmarks/README.md).
    n = fields.count
    ph_code = fields.ph.all_codes()
    cat_code = fields.cat.all_codes()
    name_code = fields.name.all_codes()
    pid_code = fields.pid.all_codes()
    tid_code = fields.tid.all_codes()
    ts = joined(fields.ts, np.float64)
    dur = joined(fields.dur, np.float64)
    args_bad = joined(fields.args_bad, bool)

    reasons = _Reasons(n)
    everything = np.ones(n, dtype=bool)
    memory_rows = joined(fields.memory_rows, np.int64)
    memory_valid = np.abs(ts[memory_rows]) < MAX_US  # NaN / out of range: an instant event
    memory_rows = memory_rows[memory_valid]
    if len(memory_rows):
        in_memory_table = np.zeros(n, dtype=bool)
        in_memory_table[memory_rows] = True
        reasons.mark(in_memory_table, MEMORY_SAMPLE_REASON)
        del in_memory_table
    reasons.mark_by_value(ph_code, everything, [_phase_reason(v) for v in fields.ph.values])
    del ph_code, everything
    fields.release("ph")
    complete = reasons.code < 0
    phase_rows = ~complete
    category = [_category(v) for v in fields.cat.values]
    reasons.mark_by_value(cat_code, complete, [reason for _, reason in category])

    pid_values = fields.pid.values
    pid_ids = np.array([as_int(v) if v is not None else -1 for v in pid_values], dtype=np.int64)
    pid_missing = np.array([v is None for v in pid_values], dtype=bool)
    # (A float left by the decodings is not a whole number: whole ones are integers already.)
    pid_fraction = np.array([type(v) is float for v in pid_values], dtype=bool)
    pid_out_of_range = np.array([type(v) is int and not -INT64_MAX <= v <= INT64_MAX for v in pid_values],
                                dtype=bool)
    tid_values = fields.tid.values
    tid_ids = np.array([as_int(v) if v is not BAD_TID else -1 for v in tid_values], dtype=np.int64)
    tid_bad = np.array([v is BAD_TID or type(v) is float or (type(v) is int and not -INT64_MAX <= v <= INT64_MAX)
                        for v in tid_values], dtype=bool)
    empty = np.zeros(0, dtype=np.int64)
    reasons.mark(complete & (np.isnan(ts) | pid_missing[pid_code] if n else complete),
                 "complete event without ts or pid")
    reasons.mark(complete & ~(np.abs(ts) < MAX_US), "ts is not a number in range")
    reasons.mark(complete & ~((dur >= 0) & (dur < MAX_US)), "dur is not a non-negative number in range")
    reasons.mark(complete & (pid_out_of_range[pid_code] if n else complete), "pid out of range")
    reasons.mark(complete & (pid_fraction[pid_code] if n else complete), "pid is not a whole number")
    reasons.mark(complete & (tid_bad[tid_code] if n else complete), "tid is not an id")
    reasons.mark(complete & args_bad, "args is not an object")
    reasons.count_into(meta, [phase_rows, complete])
    del args_bad, complete, phase_rows
    fields.release("args_bad")

    process_names, thread_names = _track_names(fields)
    rows = np.flatnonzero(reasons.code < 0)
    del reasons
    ts_ns = _ns_of(ts, ts_exact, rows)
    origin_raw = int(ts_ns.min()) if len(ts_ns) else 0
    memory = _memory_table(fields, memory_rows, memory_valid, _ns_of(ts, ts_exact, memory_rows) - origin_raw,
                           pid_ids, tid_ids, process_names, thread_names)
    del ts, ts_exact, memory_rows, memory_valid
    dur_ns = np.round(dur[rows] * 1000.0).astype(np.int64)
    del dur
    fields.release("ts", "ts_exact", "dur", "memory_rows", "memory_columns")

    # Kind: the category's kind, refined by name once per distinct (category kind, name).
    cat_kind = np.array([kind or "" for kind, _ in category], dtype=object)
    class_of = cat_kind[cat_code[rows]] if len(rows) else np.zeros(0, dtype=object)
    combo, first = _distinct_pairs(cat_code[rows], name_code[rows])
    del cat_code
    fields.release("cat")
    names_first = np.array(fields.name.values, dtype=object)[name_code[rows][first]] if len(first) else \
        np.zeros(0, dtype=object)
    kinds = leveled("kind", apply_kind_rules(KINETO_RULES, class_of[first], names_first, class_of[first]), combo)
    kind_code = kinds.codes
    del class_of, combo

    is_device = np.isin(kind_code, [KIND_VALUES.index(k.value) for k in _DEVICE_KINDS])
    pid = pid_ids[pid_code[rows]] if len(rows) else empty
    tid = tid_ids[tid_code[rows]] if len(rows) else empty
    del pid_code, tid_code
    fields.release("pid", "tid")
    # args.device of a host event is not its own. (The scanner's fields hold ids and counts in the
    # smallest type that holds them: widened here.)
    device = np.where(is_device, fields.ids("device")[rows].astype(np.int64, copy=False), -1)
    stream = np.where(is_device, fields.ids("stream")[rows].astype(np.int64, copy=False), -1)
    fields.release("device", "stream", "device_ids", "stream_ids")
    device = np.where(is_device & (device < 0), pid, device)
    stream = np.where(is_device & (stream < 0), tid, stream)
    correlation = joined(fields.correlation, np.int64)[rows].astype(np.int64, copy=False)
    nbytes = joined(fields.nbytes, np.int64)[rows].astype(np.int64, copy=False)
    elements = joined(fields.elements, np.int64)[rows].astype(np.int64, copy=False)
    input_dtypes = categorical_from_codes(fields.input_dtypes.all_codes()[rows], fields.input_dtypes.values)
    fields.release("correlation", "nbytes", "elements", "input_dtypes")
    names = categorical_from_codes(name_code[rows], fields.name.values)
    del name_code
    fields.release("name")

    # Copy kind: "" by default, from the name for memcpys (once per distinct name), "memset" for memsets.
    copy_values = ["", "memset"]
    copy_code = np.zeros(len(rows), dtype=np.int64)
    copy_code[kind_code == KIND_VALUES.index(Kind.MEMSET.value)] = 1
    memcpy_mask = kind_code == KIND_VALUES.index(Kind.MEMCPY.value)
    if memcpy_mask.any():
        inverse, uniq = factorize(names.codes[memcpy_mask])
        copy_code[memcpy_mask] = len(copy_values) + inverse
        copy_values += [cat.copy_kind_from_kineto_name(names.categories[u]) for u in uniq.tolist()]
    copy_kind = leveled("copy_kind", copy_values, copy_code)

    track = _tracks(is_device, device, stream, pid, tid, process_names, thread_names)
    meta.origin_ns = int(base_ns) + origin_raw if base_ns is not None else origin_raw
    meta.devices = _devices(top, device[is_device])
    meta.extra["extra_columns"] = ["elements", "input_dtypes"]
    raw = RawTrace(
        columns={
            "ts": ts_ns - origin_raw,
            "dur": dur_ns,
            "kind": kinds,
            "name": names,
            "track": track,
            "pid": pid,
            "tid": tid,
            "device": device,
            "stream": stream,
            "correlation": correlation,
            "bytes": nbytes,
            "copy_kind": copy_kind,
        },
        meta=meta,
        # Extra columns (record_shapes): elements of the op's largest input, -1 when not recorded;
        # the dtypes of its tensor inputs (kineto_fields.input_dtypes_label), "" when not recorded.
        extra={"elements": elements, "input_dtypes": input_dtypes},
        memory=memory,
    )
    # The builder takes the columns over and lets each go once sorted; nothing here may keep them.
    del ts_ns, dur_ns, kinds, names, track, pid, tid, device, stream, correlation, nbytes, copy_kind, elements
    del input_dtypes
    del fields, rows, memory, kind_code, is_device, copy_code
    return build(raw)


def _ns_of(ts: np.ndarray, ts_exact: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    """int64 ns of the chosen rows: the exact re-read where there is one, else the doubles split
    into whole and fractional µs before scaling (``ts * 1000.0`` loses ns digits at epoch scale)."""
    if ts_exact is not None and len(ts_exact) == len(ts):
        return ts_exact[rows]
    us = ts[rows]
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.round((us - whole) * 1000.0).astype(np.int64)


def _memory_table(fields: Fields, rows: np.ndarray, valid: np.ndarray, ts_ns: np.ndarray, pid_ids: np.ndarray,
                  tid_ids: np.ndarray, process_names: dict[Any, str],
                  thread_names: dict[tuple[Any, Any], str]) -> Table | None:
    """The ``[memory]`` samples (torch ``profile_memory=True``) with a usable ts (``valid`` of all
    of them) as the timeline's memory table."""
    if not len(rows):
        return None
    columns = {field: joined(parts, np.int64)[valid] for field, parts in fields.memory_columns.items()}
    pid = pid_ids[fields.pid.all_codes()[rows]]
    tid = tid_ids[fields.tid.all_codes()[rows]]
    # Device Type 0 is the CPU allocator; 1 CUDA (and other accelerators after it): Device Id is the index.
    device = np.where(columns["device_type"] > 0, np.maximum(columns["device_id"], 0), -1)
    track = _tracks(np.zeros(len(rows), dtype=bool), device, device, pid, tid, process_names, thread_names)
    return memory_frame(ts=ts_ns, nbytes=columns["memory_bytes"], total_allocated=columns["total_allocated"],
                        total_reserved=columns["total_reserved"], device=device, pid=pid, tid=tid, track=track)


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row's (a, b) pair, the first row of each pair) for two int code arrays."""
    if not len(a):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return combination_codes(a.astype(np.int64) * (int(b.max()) + 1) + b)


def _track_names(fields: Fields) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
    """Process and thread names from the metadata events (``ph: M``)."""
    process_names: dict[Any, str] = {}
    thread_names: dict[tuple[Any, Any], str] = {}
    if not fields.meta_names:
        return process_names, thread_names
    name_code = fields.name.all_codes()
    pid_code = fields.pid.all_codes()
    tid_code = fields.tid.all_codes()
    for row, value in sorted(fields.meta_names.items()):
        kind = fields.name.values[name_code[row]]
        pid = fields.pid.values[pid_code[row]]
        if kind == "process_name":
            process_names[pid] = str(value)
        elif kind == "thread_name":
            thread_names[(pid, fields.tid.values[tid_code[row]])] = str(value)
    return process_names, thread_names


def _tracks(is_device: np.ndarray, device: np.ndarray, stream: np.ndarray, pid: np.ndarray, tid: np.ndarray,
            process_names: dict[Any, str], thread_names: dict[tuple[Any, Any], str]) -> Labels:
    """Track labels, built once per distinct (pid, tid) / (device, stream)."""
    key_a = np.where(is_device, device, pid)
    key_b = np.where(is_device, stream, tid)
    codes_a, uniq_a = factorize(key_a)
    codes_b, uniq_b = factorize(key_b)
    combined = (codes_a * max(len(uniq_b), 1) + codes_b) * 2 + is_device
    codes, uniques = factorize(combined)
    labels = []
    for key in uniques.tolist():
        dev, rest = key % 2, key // 2
        a, b = int(uniq_a[rest // len(uniq_b)]), int(uniq_b[rest % len(uniq_b)])
        labels.append(f"GPU {a} stream {b}" if dev else _host_label(a, b, process_names, thread_names))
    return categorical_from_codes(codes, labels)



def _needs_exact(events: list[Any]) -> bool:
    """True when some timestamp is a large float whose ns digits a double cannot hold."""
    for ev in events[:: max(1, len(events) // 2000)] or []:
        ts = ev.get("ts") if isinstance(ev, dict) else None
        if isinstance(ts, float) and abs(ts) > EXACT_FLOAT_LIMIT_US and ts != int(ts):
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
    if len(found) != len(with_ts) or any(type(e["ts"]) not in (int, float) for e in with_ts):
        return None
    # The fast path's reading of a number's text (whole µs × 1000 + the first three fraction digits).
    exact, us = ns_from_text([whole + b"." + frac if frac else whole for whole, frac in found])
    if not np.isfinite(us).all() or (np.abs(exact) >= _MAX_TIME_NS).any():
        return None  # a time beyond int64 ns: the doubles (range-checked per event) decide
    approx = np.array([float(e["ts"]) for e in with_ts], dtype=np.float64)
    if len(approx) and np.abs(exact / 1000.0 - approx).max() > 1.0:
        return None
    out = np.zeros(len(events), dtype=np.int64)
    out[np.array(has_ts, dtype=bool)] = exact
    return out


def _host_label(p: int, t: int, process_names: dict[Any, str], thread_names: dict[tuple[Any, Any], str]) -> str:
    """"host <pid>/<tid> (<thread name>)", falling back to the process name."""
    thread = thread_names.get((p, t)) or thread_names.get((str(p), str(t))) or ""
    thread = re.sub(r"^thread \d+ \((.*)\)$", r"\1", thread)  # Kineto writes "thread 123 (name)"
    name = thread or process_names.get(p) or process_names.get(str(p)) or ""
    return f"host {p}/{t} ({name})" if name else f"host {p}/{t}"


def _devices(top: dict[str, Any], device_ids: np.ndarray) -> list[Device]:
    listed = top.get("deviceProperties")
    props = {d["id"]: d for d in listed if isinstance(d, dict) and type(d.get("id")) is int} \
        if isinstance(listed, list) else {}
    out = []
    for idx in unique_sorted(device_ids).tolist():  # (by a sort: numpy's hashed unique is slower on ints)
        prop = props.get(idx, {})
        name = str(prop.get("name", ""))
        vendor = "amd" if "AMD" in name or "Instinct" in name or "gfx" in name else ("nvidia" if name else "")
        out.append(Device(index=idx, name=name, vendor=vendor))
    return out
