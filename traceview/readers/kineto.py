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
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import orjson
import pandas as pd

from traceview import categories as cat
from traceview.arrays import joined
from traceview.errors import FormatError
from traceview.kinds import KINETO_RULES, apply_kind_rules
from traceview.readers._io import read_bytes
from traceview.readers._json_stream import Declined, EventArrayReader
from traceview.readers import kineto_scan
from traceview.readers.kineto_scan import EventScanner, ScannedBlock
from traceview.builder import RawTrace, build
from traceview.schema import (KIND_VALUES, MEMORY_SAMPLE_REASON, Device, Kind, Timeline, TraceMeta,
                              categorical_from_codes, first_rows, leveled, memory_frame)

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
# Timestamps and durations, in µs, that fit in int64 ns with room for sums (2**62 ns ≈ 146 years).
_MAX_US = float(2**62) / 1000.0
_MAX_TIME_NS = 2**62
_INT64_MAX = 2**63 - 1


def sniff(head: bytes) -> bool:
    """True when the first bytes look like a Chrome-trace JSON document."""
    text = head.lstrip()
    if text[:1] == b"[":
        return b'"ph"' in text or text[1:].lstrip()[:1] in (b"{", b"]")
    return text[:1] == b"{" and (b'"traceEvents"' in text or b'"schemaVersion"' in text or b'"ph"' in text)


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
    (and when the extension is not built)."""
    scanner = EventScanner(path)
    fields = _Fields()
    block = None
    for block in scanner.blocks():
        fields.add_scanned(block)
    del block  # (its views hold the scanner's buffers)
    ts_exact = fields.exact_timestamps() if fields.needs_exact_ts else None
    return _timeline(path, fields, scanner.top, scanner.events_seen, ts_exact)


def read_fast(path: Path) -> Timeline:
    """Typed block-by-block decoding; raises :class:`Declined` for documents it does not take.

    Timestamps are decoded as doubles; when one turns out to be a fractional epoch µs value (whose
    ns digits a double cannot hold) the file is decoded again with each ``ts`` kept as its text."""
    for decoder in (_FAST_DECODER, _EXACT_TS_DECODER):
        reader = EventArrayReader(path, decoder)
        fields = _Fields()
        for batch in reader.batches():
            fields.add_structs(batch)
            if fields.needs_exact_ts and decoder is _FAST_DECODER:
                break
        else:
            ts_exact = joined(fields.ts_exact, np.int64) if fields.ts_exact else None
            return _timeline(path, fields, reader.top, reader.events_seen, ts_exact)
    raise AssertionError("unreachable: the exact decoder never asks for itself")


def read_reference(path: Path) -> Timeline:
    """Whole-document orjson decoding with per-event type checks (the reference the fast path matches)."""
    raw = read_bytes(path)
    if not raw or raw.isspace():  # (no strip(): that would copy the whole document)
        raise FormatError(f"{path}: file is empty; re-export the trace")
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
    fields = _Fields()
    fields.add_dicts(events)
    ts_exact = _exact_timestamps(raw, events)
    del raw
    timeline = _timeline(path, fields, top, len(events), ts_exact)
    if ts_exact is None and _needs_exact(events):
        timeline.meta.notes.append("timestamps re-read as parsed doubles: sub-µs precision may be off by up to 0.25 µs")
    return timeline


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
# Decoding: the fields the schema needs, as typed structs (fast path) or from dicts (reference)
# ---------------------------------------------------------------------------------------------


class _Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` keys the schema reads; every other key is skipped unparsed."""

    device: int | str | None = None
    stream: int | str | None = None
    correlation: int | str | None = None
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    bytes: int | str | None = None
    name: Any = None  # metadata events: the process / thread name
    # profile_memory=True: "[memory]" instant events (allocations > 0, frees < 0).
    memory_bytes: Any = msgspec.field(default=None, name="Bytes")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=None, name="Total Reserved")
    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")


_NO_ARGS = _Args()
# Memory sample fields: struct attribute -> the args key torch writes.
_MEMORY_ARGS = {"memory_bytes": "Bytes", "total_allocated": "Total Allocated", "total_reserved": "Total Reserved",
                "device_type": "Device Type", "device_id": "Device Id"}
MEMORY_EVENT_NAME = "[memory]"  # torch.profiler(profile_memory=True): ph "i", cat cpu_instant_event


class _Event(msgspec.Struct, gc=False):
    """One trace event as the fast path decodes it. Types are the ones Kineto writes; anything
    else (a string ts, an args list …) makes the decoder refuse, and the reference path drops
    that event with a reason."""

    ph: str | None = None
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str = 0
    ts: int | float = math.nan  # NaN: no ts key
    dur: int | float | None = 0
    args: _Args = _NO_ARGS


class _EventExactTs(_Event, gc=False):
    """The same event with ``ts`` kept as its JSON text (empty when absent)."""

    ts: msgspec.Raw = msgspec.Raw(b"")  # type: ignore[assignment]


_FAST_DECODER = msgspec.json.Decoder(list[_Event])
_EXACT_TS_DECODER = msgspec.json.Decoder(list[_EventExactTs])
# The compiled scanner's raw tokens get their values from decoders of the struct fields' own types.
_ARGS_LIST_DECODER = msgspec.json.Decoder(list[_Args])
_PH_TOKEN = msgspec.json.Decoder(str | None)
_TEXT_TOKEN = msgspec.json.Decoder(str)
_PID_TOKEN = msgspec.json.Decoder(int | str | None)
_TID_TOKEN = msgspec.json.Decoder(int | str)


def _token_value(decoder: msgspec.json.Decoder[Any], token: bytes) -> Any:
    """A raw token's value under its field's type; a type the struct refuses declines the document."""
    try:
        return decoder.decode(token)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError) as err:
        raise Declined(str(err)) from None


def _decode_args_of(block: ScannedBlock, rows: np.ndarray) -> list[_Args]:
    """The args structs of a scanned block's ``rows``, decoded in one call."""
    if not len(rows):
        return []
    text, has = block.args_array(rows)
    decoded = iter(_token_value(_ARGS_LIST_DECODER, text))
    return [next(decoded) if present else _NO_ARGS for present in has.tolist()]


def _int_value(value: Any) -> int:
    """One id-like value as int64, the way :func:`_int_column` converts a column (None: -1)."""
    return -1 if value is None else _as_int(value)


class _Sentinel:
    """A marker value that no JSON document can hold."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label


_NOT_AN_OBJECT = _Sentinel("<not an object>")  # ph of an array element that is not a JSON object
_BAD_TID = _Sentinel("<bad tid>")  # tid of a type that cannot be an id


class _Interner:
    """Distinct values of one field across batches, and each event's code into them."""

    def __init__(self, ids: bool = False) -> None:
        self.ids = ids  # values may all be ints (pid, tid, device, stream): then hashed as int64
        self.index: dict[Any, int] = {}
        self.values: list[Any] = []
        self.codes: list[np.ndarray] = []
        self._all: np.ndarray | None = None

    def add(self, values: list[Any]) -> None:
        self._all = None
        if self.ids and set(map(type, values)) == {int}:
            try:
                codes, uniques = pd.factorize(np.array(values, dtype=np.int64))
            except OverflowError:  # an id beyond int64: as objects below
                codes, uniques = self._factorize_objects(values)
            else:
                uniques = uniques.tolist()
        else:
            codes, uniques = self._factorize_objects(values)
        self.add_coded(uniques, codes)

    def add_coded(self, uniques: Any, codes: np.ndarray) -> None:
        """A batch given as its distinct values and each event's index into them."""
        self._all = None
        table = np.empty(len(uniques), dtype=np.int64)
        for i, value in enumerate(uniques):
            key = (type(value), value)  # 1, 1.0, True and "1" stay apart
            code = self.index.get(key)
            if code is None:
                code = self.index[key] = len(self.values)
                self.values.append(value)
            table[i] = code
        self.codes.append(table[codes] if len(codes) else np.zeros(0, dtype=np.int64))

    @staticmethod
    def _factorize_objects(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
        try:
            codes, uniques = pd.factorize(np.array(values, dtype=object), use_na_sentinel=False)
        except (TypeError, ValueError):  # a list or an object among the values: no id
            codes, uniques = pd.factorize(_object_array(values), use_na_sentinel=False)
        # pandas hands an absent value (None) back as NaN, which would make a missing pid look
        # present; JSON has no NaN, so a NaN here is always None.
        return codes, [None if isinstance(u, float) and u != u else u for u in uniques]

    def code_of(self, value: Any) -> int:
        """The code of a value (-2, matching no event, when the value has not been seen)."""
        return self.index.get((type(value), value), -2)

    def all_codes(self) -> np.ndarray:
        """Every event's code, in file order (concatenated once)."""
        if self._all is None:
            self._all = np.concatenate(self.codes) if self.codes else np.zeros(0, dtype=np.int64)
            self.codes = [self._all]
        return self._all


class _Fields:
    """The schema's fields of every array element, in file order, as columns."""

    def __init__(self) -> None:
        self.ph, self.cat, self.name = _Interner(), _Interner(), _Interner()
        self.pid, self.tid, self.device, self.stream = (_Interner(ids=True) for _ in range(4))
        self.ts: list[np.ndarray] = []  # µs as doubles (NaN: no ts; inf: not a number)
        self.ts_exact: list[np.ndarray] = []  # exact ns, when decoded from the text
        self.dur: list[np.ndarray] = []
        self.correlation: list[np.ndarray] = []
        self.nbytes: list[np.ndarray] = []
        self.elements: list[np.ndarray] = []
        self.args_bad: list[np.ndarray] = []
        self.meta_names: dict[int, Any] = {}  # event position -> args.name, metadata events only
        # "[memory]" events: their positions, and each _MEMORY_ARGS field as int64 (-1: absent)
        self.memory_rows: list[np.ndarray] = []
        self.memory_columns: dict[str, list[np.ndarray]] = {field: [] for field in _MEMORY_ARGS}
        self.count = 0
        self.needs_exact_ts = False
        # Compiled scanner: each ts's exact ns and flags, for when the doubles turn out not to do.
        self.scan_ts_ns: list[np.ndarray] = []
        self.device_ids: list[np.ndarray] = []  # args.device / args.stream as int64 (-1: none)
        self.stream_ids: list[np.ndarray] = []
        self.scan_ts_flags: list[np.ndarray] = []

    def add_scanned(self, block: ScannedBlock) -> None:
        """A block from the compiled scanner: columns already, plus the distinct raw tokens of
        the interned fields, each given its value by the typed decoding of that field."""
        n = block.count
        ints = block.ints
        for interner, row, decoder, absent in (
                (self.ph, kineto_scan.ROW_PH, _PH_TOKEN, None), (self.cat, kineto_scan.ROW_CAT, _TEXT_TOKEN, ""),
                (self.name, kineto_scan.ROW_NAME, _TEXT_TOKEN, ""), (self.pid, kineto_scan.ROW_PID, _PID_TOKEN, None),
                (self.tid, kineto_scan.ROW_TID, _TID_TOKEN, 0)):
            tokens = block.tokens[row]
            values = [_token_value(decoder, token) for token in tokens] + [absent]
            codes = ints[row]
            interner.add_coded(values, np.where(codes < 0, len(tokens), codes))
        ts = block.doubles[kineto_scan.ROW_TS].copy()
        big = np.abs(ts) > _EXACT_FLOAT_LIMIT_US
        if big.any() and not self.needs_exact_ts:
            self.needs_exact_ts = bool((ts[big] != np.floor(ts[big])).any())
        self.ts.append(ts)
        self.scan_ts_ns.append(ints[kineto_scan.ROW_TS_NS].copy())
        self.scan_ts_flags.append(block.flags.copy())
        self.dur.append(block.doubles[kineto_scan.ROW_DUR].copy())
        # Integer args as the scanner read them; where one has another type (a string "7", a
        # float …) that row's args are decoded the typed way, which refuses what the struct does
        # not allow, and converted as the other decodings convert them.
        key_of = {"device": "device", "stream": "stream", "correlation": "correlation", "bytes": "bytes",
                  **_MEMORY_ARGS}
        other = np.flatnonzero(block.flags & kineto_scan.FLAG_ARGS_OTHER)
        other_args = dict(zip(other.tolist(), _decode_args_of(block, other)))

        def integer_arg(field: str, rows: np.ndarray | None = None) -> np.ndarray:
            """The field for every event of the block (or of ``rows``)."""
            source = ints[kineto_scan.INTEGER_ARG_ROW[key_of[field]]]
            column = source.copy() if rows is None else source[rows]
            rows = np.arange(n) if rows is None else rows
            if other_args:
                for at in np.flatnonzero(np.isin(rows, other)).tolist():
                    column[at] = _int_value(getattr(other_args[int(rows[at])], field))
            return column

        self.device_ids.append(integer_arg("device"))
        self.stream_ids.append(integer_arg("stream"))
        self.correlation.append(integer_arg("correlation"))
        self.nbytes.append(integer_arg("bytes"))
        self.elements.append(ints[kineto_scan.ROW_ELEMENTS].copy())
        self.args_bad.append(np.zeros(n, dtype=bool))
        self._add_special_rows(lambda rows: [args.name for args in _decode_args_of(block, rows)],
                               lambda rows: {field: integer_arg(field, rows) for field in _MEMORY_ARGS})
        self.count += n

    def _add_special_rows(self, metadata_names: Callable[[np.ndarray], list[Any]],
                          memory_columns: Callable[[np.ndarray], dict[str, np.ndarray]]) -> None:
        """Metadata names and memory samples of the batch just added: rows found by their phase
        and name codes, whose args are read then."""
        ph_codes, name_codes = self.ph.codes[-1], self.name.codes[-1]
        metadata = np.flatnonzero(ph_codes == self.ph.code_of("M"))
        for i, name in zip(metadata.tolist(), metadata_names(metadata)):
            self.meta_names[self.count + i] = "" if name is None else name
        memory = np.flatnonzero((ph_codes == self.ph.code_of("i"))
                                & (name_codes == self.name.code_of(MEMORY_EVENT_NAME)))
        if len(memory):
            self.memory_rows.append(self.count + memory)
            for field, column in memory_columns(memory).items():
                self.memory_columns[field].append(column)

    def ids(self, field: str) -> np.ndarray:
        """args.device or args.stream of every event as int64 (-1: none)."""
        scanned = self.device_ids if field == "device" else self.stream_ids
        return joined(scanned, np.int64) if scanned else _ids(getattr(self, field))

    def exact_timestamps(self) -> np.ndarray:
        """Exact ns of every ts from the compiled scanner's digits (the reading of
        :func:`_ns_from_text`); the µs doubles in :attr:`ts` become that reading's too."""
        ns = joined(self.scan_ts_ns, np.int64)
        flags = joined(self.scan_ts_flags, np.uint8)
        doubles = joined(self.ts, np.float64)
        us = ns / 1000.0
        us[(flags & kineto_scan.FLAG_TS_BEYOND) != 0] = math.inf
        us[(flags & kineto_scan.FLAG_TS) == 0] = math.nan
        other = np.flatnonzero(((flags & kineto_scan.FLAG_TS) != 0) & ((flags & kineto_scan.FLAG_TS_PLAIN) == 0))
        for i in other.tolist():  # digits beyond what the exact reading takes: as a double
            us[i], ns[i] = _read_as_double(float(doubles[i]), int(ns[i]))
        self.ts[:] = [us]
        return ns

    def add_structs(self, events: list[_Event]) -> None:
        """A batch from the typed decoder (types already checked by msgspec)."""
        args = [e.args for e in events]
        if events and isinstance(events[0], _EventExactTs):
            exact, ts = _ns_from_text([bytes(e.ts) for e in events])
            self.ts_exact.append(exact)
        else:
            ts = np.array([e.ts for e in events], dtype=np.float64)
            big = np.abs(ts) > _EXACT_FLOAT_LIMIT_US
            if big.any() and not self.needs_exact_ts:
                self.needs_exact_ts = bool((ts[big] != np.floor(ts[big])).any())
        self._add(
            ph=[e.ph for e in events], cats=[e.cat for e in events], names=[e.name for e in events],
            pids=[e.pid for e in events], tids=[e.tid for e in events], ts=ts,
            dur=np.array([0 if e.dur is None else e.dur for e in events], dtype=np.float64),
            device=[a.device for a in args], stream=[a.stream for a in args],
            correlation=[a.correlation for a in args], nbytes=[a.bytes for a in args],
            dims=[a.input_dims for a in args], args=args, arg=getattr, args_bad=None)

    def add_dicts(self, events: list[Any]) -> None:
        """The whole array from orjson, with the type checks the typed decoder would have made:
        a value of the wrong type becomes one the range checks reject with the same reason."""
        ph: list[Any] = []
        cats: list[Any] = []
        names: list[Any] = []
        pids: list[Any] = []
        tids: list[Any] = []
        ts: list[float] = []
        dur: list[float] = []
        args: list[dict[str, Any]] = []
        args_bad: list[bool] = []
        for ev in events:
            if not isinstance(ev, dict):
                ev = {"ph": _NOT_AN_OBJECT}
            phase = ev.get("ph")
            ph.append(phase if type(phase) is str or phase is _NOT_AN_OBJECT else None)
            raw_cat = ev.get("cat", "")
            cats.append(raw_cat if type(raw_cat) is str else str(raw_cat))
            name = ev.get("name", "")
            names.append(name if type(name) is str else str(name))
            pid = ev.get("pid")
            pids.append(pid if isinstance(pid, (int, str)) else None)
            tid = ev.get("tid", 0)
            tids.append(tid if isinstance(tid, (int, str)) else _BAD_TID)
            if "ts" not in ev:
                ts.append(math.nan)
            else:
                value = ev["ts"]
                ts.append(value if type(value) in (int, float) and abs(value) < _MAX_US else math.inf)
            d = ev.get("dur", 0)
            dur.append(0.0 if d is None else (d if type(d) in (int, float) and abs(d) < _MAX_US else -1.0))
            a = ev.get("args")
            args_bad.append(a is not None and not isinstance(a, dict))
            a = a if isinstance(a, dict) else {}
            args.append(a)
        self._add(
            ph=ph, cats=cats, names=names, pids=pids, tids=tids, ts=np.array(ts, dtype=np.float64),
            dur=np.array(dur, dtype=np.float64), device=[a.get("device") for a in args],
            stream=[a.get("stream") for a in args], correlation=[a.get("correlation") for a in args],
            nbytes=[a.get("bytes") for a in args], dims=[a.get("Input Dims") for a in args],
            args=args, arg=_dict_arg, args_bad=np.array(args_bad, dtype=bool))

    def _add(self, *, ph: list[Any], cats: list[Any], names: list[Any], pids: list[Any], tids: list[Any],
             ts: np.ndarray, dur: np.ndarray, device: list[Any], stream: list[Any], correlation: list[Any],
             nbytes: list[Any], dims: list[Any], args: list[Any], arg: Callable[[Any, str], Any],
             args_bad: np.ndarray | None) -> None:
        n = len(ph)
        for interner, values in ((self.ph, ph), (self.cat, cats), (self.name, names), (self.pid, pids),
                                 (self.tid, tids), (self.device, device), (self.stream, stream)):
            interner.add(values)
        self._add_special_rows(
            lambda rows: [arg(args[i], "name") for i in rows.tolist()],
            lambda rows: {field: _int_column([arg(args[i], field) for i in rows.tolist()]) for field in _MEMORY_ARGS})
        self.correlation.append(_int_column(correlation))
        self.nbytes.append(_int_column(nbytes))
        elements = np.full(n, -1, dtype=np.int64)
        for i in itertools.compress(range(n), [d is not None for d in dims]):
            elements[i] = _largest_input(dims[i])
        self.elements.append(elements)
        self.ts.append(ts)
        self.dur.append(dur)
        self.args_bad.append(args_bad if args_bad is not None else np.zeros(n, dtype=bool))
        self.count += n


# ---------------------------------------------------------------------------------------------
# Columns: every check and classification runs once per distinct value or as an array operation
# ---------------------------------------------------------------------------------------------

_METADATA_REASON = "metadata record (names used for track labels)"


def _dict_arg(args: dict[str, Any], field: str) -> Any:
    """An args value by the struct attribute's name (the reference path's args are dicts)."""
    return args.get(_MEMORY_ARGS.get(field, field))


def _phase_reason(phase: Any) -> str | None:
    """Why an element with this ``ph`` is not a complete event (None for ``X``)."""
    if phase is _NOT_AN_OBJECT:
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


def _timeline(path: Path, fields: _Fields, top: dict[str, Any], input_events: int,
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
    memory_valid = np.abs(ts[memory_rows]) < _MAX_US  # NaN / out of range: an instant event
    memory_rows = memory_rows[memory_valid]
    if len(memory_rows):
        in_memory_table = np.zeros(n, dtype=bool)
        in_memory_table[memory_rows] = True
        reasons.mark(in_memory_table, MEMORY_SAMPLE_REASON)
    reasons.mark_by_value(ph_code, everything, [_phase_reason(v) for v in fields.ph.values])
    complete = reasons.code < 0
    phase_rows = ~complete
    category = [_category(v) for v in fields.cat.values]
    reasons.mark_by_value(cat_code, complete, [reason for _, reason in category])

    pid_values = fields.pid.values
    pid_ids = np.array([_as_int(v) if v is not None else -1 for v in pid_values], dtype=np.int64)
    pid_missing = np.array([v is None for v in pid_values], dtype=bool)
    pid_out_of_range = np.array([type(v) is int and not -_INT64_MAX <= v <= _INT64_MAX for v in pid_values],
                                dtype=bool)
    tid_values = fields.tid.values
    tid_ids = np.array([_as_int(v) if v is not _BAD_TID else -1 for v in tid_values], dtype=np.int64)
    tid_bad = np.array([v is _BAD_TID or (type(v) is int and not -_INT64_MAX <= v <= _INT64_MAX)
                        for v in tid_values], dtype=bool)
    empty = np.zeros(0, dtype=np.int64)
    reasons.mark(complete & (np.isnan(ts) | pid_missing[pid_code] if n else complete),
                 "complete event without ts or pid")
    reasons.mark(complete & ~(np.abs(ts) < _MAX_US), "ts is not a number in range")
    reasons.mark(complete & ~((dur >= 0) & (dur < _MAX_US)), "dur is not a non-negative number in range")
    reasons.mark(complete & (pid_out_of_range[pid_code] if n else complete), "pid out of range")
    reasons.mark(complete & (tid_bad[tid_code] if n else complete), "tid is not an id")
    reasons.mark(complete & args_bad, "args is not an object")
    reasons.count_into(meta, [phase_rows, complete])

    process_names, thread_names = _track_names(fields)
    memory_ts_ns = _ns_of(ts, ts_exact, memory_rows)
    keep = reasons.code < 0
    rows = np.flatnonzero(keep)
    del reasons

    # Kind: the category's kind, refined by name once per distinct (category kind, name).
    cat_kind = np.array([kind or "" for kind, _ in category], dtype=object)
    class_of = cat_kind[cat_code[rows]] if len(rows) else np.zeros(0, dtype=object)
    combo, first = _distinct_pairs(cat_code[rows], name_code[rows])
    names_first = np.array(fields.name.values, dtype=object)[name_code[rows][first]] if len(first) else \
        np.zeros(0, dtype=object)
    kinds = leveled("kind", apply_kind_rules(KINETO_RULES, class_of[first], names_first, class_of[first]), combo)
    kind_code = kinds.codes

    ts_ns = _ns_of(ts, ts_exact, rows)
    dur_ns = np.round(dur[rows] * 1000.0).astype(np.int64)

    is_device = np.isin(kind_code, [KIND_VALUES.index(k.value) for k in _DEVICE_KINDS])
    pid = pid_ids[pid_code[rows]] if len(rows) else empty
    tid = tid_ids[tid_code[rows]] if len(rows) else empty
    device = np.where(is_device, fields.ids("device")[rows], -1)  # args.device of host events is not theirs
    stream = np.where(is_device, fields.ids("stream")[rows], -1)
    device = np.where(is_device & (device < 0), pid, device)
    stream = np.where(is_device & (stream < 0), tid, stream)
    correlation = joined(fields.correlation, np.int64)[rows]
    nbytes = joined(fields.nbytes, np.int64)[rows]
    elements = joined(fields.elements, np.int64)[rows]
    names = categorical_from_codes(name_code[rows], fields.name.values)

    # Copy kind: "" by default, from the name for memcpys (once per distinct name), "memset" for memsets.
    copy_values = ["", "memset"]
    copy_code = np.zeros(len(rows), dtype=np.int64)
    copy_code[kind_code == KIND_VALUES.index(Kind.MEMSET.value)] = 1
    memcpy_mask = kind_code == KIND_VALUES.index(Kind.MEMCPY.value)
    if memcpy_mask.any():
        inverse, uniq = pd.factorize(names.codes[memcpy_mask])
        copy_code[memcpy_mask] = len(copy_values) + inverse
        copy_values += [cat.copy_kind_from_kineto_name(names.categories[u]) for u in uniq.tolist()]
    copy_kind = leveled("copy_kind", copy_values, copy_code)

    track = _tracks(is_device, device, stream, pid, tid, process_names, thread_names)
    origin_raw = int(ts_ns.min()) if len(ts_ns) else 0
    memory = _memory_table(fields, memory_rows, memory_valid, memory_ts_ns - origin_raw, pid_ids, tid_ids,
                           process_names, thread_names)
    meta.origin_ns = int(base_ns) + origin_raw if base_ns is not None else origin_raw
    meta.devices = _devices(top, device[is_device])
    meta.extra["extra_columns"] = ["elements"]
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
        # Extra column (record_shapes): elements of the op's largest input, -1 when not recorded.
        extra={"elements": elements},
        memory=memory,
    )
    # The builder takes the columns over and lets each go once sorted; nothing here may keep them.
    del ts_ns, dur_ns, kinds, names, track, pid, tid, device, stream, correlation, nbytes, copy_kind, elements
    del fields, ts, dur, ph_code, cat_code, name_code, pid_code, tid_code, rows, memory, memory_ts_ns
    del args_bad, everything, complete, phase_rows, keep, class_of, combo, kind_code, is_device, copy_code
    return build(raw)


def _ns_of(ts: np.ndarray, ts_exact: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    """int64 ns of the chosen rows: the exact re-read where there is one, else the doubles split
    into whole and fractional µs before scaling (``ts * 1000.0`` loses ns digits at epoch scale)."""
    if ts_exact is not None and len(ts_exact) == len(ts):
        return ts_exact[rows]
    us = ts[rows]
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.round((us - whole) * 1000.0).astype(np.int64)


def _memory_table(fields: _Fields, rows: np.ndarray, valid: np.ndarray, ts_ns: np.ndarray, pid_ids: np.ndarray,
                  tid_ids: np.ndarray, process_names: dict[Any, str],
                  thread_names: dict[tuple[Any, Any], str]) -> pd.DataFrame | None:
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
    key = a.astype(np.int64) * (int(b.max()) + 1) + b
    codes, _ = pd.factorize(key)
    return codes, first_rows(codes)


def _ids(values: _Interner) -> np.ndarray:
    """An id field (device, stream) as int64 per event: each distinct value converted once."""
    table = np.array([_int_value(v) for v in values.values], dtype=np.int64)
    codes = values.all_codes()
    return table[codes] if len(table) else np.full(len(codes), -1, dtype=np.int64)


def _track_names(fields: _Fields) -> tuple[dict[Any, str], dict[tuple[Any, Any], str]]:
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
            process_names: dict[Any, str], thread_names: dict[tuple[Any, Any], str]) -> pd.Categorical:
    """Track labels, built once per distinct (pid, tid) / (device, stream)."""
    key_a = np.where(is_device, device, pid)
    key_b = np.where(is_device, stream, tid)
    codes_a, uniq_a = pd.factorize(key_a)
    codes_b, uniq_b = pd.factorize(key_b)
    combined = (codes_a.astype(np.int64) * max(len(uniq_b), 1) + codes_b) * 2 + is_device
    codes, uniques = pd.factorize(combined)
    labels = []
    for key in uniques.tolist():
        dev, rest = key % 2, key // 2
        a, b = int(uniq_a[rest // len(uniq_b)]), int(uniq_b[rest % len(uniq_b)])
        labels.append(f"GPU {a} stream {b}" if dev else _host_label(a, b, process_names, thread_names))
    return categorical_from_codes(codes, labels)



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


_NUMBER_TEXT_WIDTH = 40  # longer "numbers" are not timestamps in range


def _ns_from_text(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Exact int64 ns, and the value in µs as a double, of JSON number texts in µs.

    ``"<whole>.<fraction>"`` is read digit by digit as whole × 1000 + the first three fraction
    digits (the reference re-read's rule); the double is NaN for an empty text (no ``ts``) and
    inf for text that is not a number (a string, null). Other number spellings (exponents) are
    read as doubles.
    """
    n = len(texts)
    if not n:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    width = min(max(map(len, texts)), _NUMBER_TEXT_WIDTH) or 1
    text = np.array([t if len(t) <= width else b"x" for t in texts], dtype=f"S{width}")
    m = text.view(np.uint8).reshape(n, width)
    length = (m != 0).sum(axis=1)
    negative = m[:, 0] == ord("-")
    digit = (m >= ord("0")) & (m <= ord("9"))
    dot = m == ord(".")
    dot_at = np.where(dot.any(axis=1), dot.argmax(axis=1), length)
    cols = np.arange(width)
    inside = cols < length[:, None]
    whole = (cols >= negative[:, None]) & (cols < dot_at[:, None])
    fraction = (cols > dot_at[:, None]) & inside
    whole_digits = whole.sum(axis=1)
    plain = ((digit | ~inside | (cols == dot_at[:, None]) | ((cols == 0) & negative[:, None])).all(axis=1)
             & (whole_digits >= 1) & (whole_digits <= 16) & ((dot_at == length) | (fraction.sum(axis=1) >= 1)))
    power = np.where(whole, 10 ** np.clip(dot_at[:, None] - 1 - cols, 0, 18), 0)
    whole_us = (np.where(digit, m - ord("0"), 0).astype(np.int64) * power).sum(axis=1)  # < 10**16: no overflow
    beyond = whole_us >= _MAX_US
    ns = np.where(beyond, 0, whole_us) * 1000
    rows = np.arange(n)
    for k, scale in ((1, 100), (2, 10), (3, 1)):
        col = np.minimum(dot_at + k, width - 1)
        take = (dot_at + k < length) & digit[rows, col]
        ns += np.where(take, (m[rows, col].astype(np.int64) - ord("0")) * scale, 0)
    ns = np.where(negative, -ns, ns)
    us = ns / 1000.0
    us[beyond] = math.inf
    us[length == 0] = np.nan
    for i in np.flatnonzero(~plain & (length > 0)).tolist():  # exponents, strings, null …
        try:
            value = float(texts[i])
        except ValueError:
            value = math.inf
        us[i], ns[i] = _read_as_double(value, int(ns[i]))
    return ns, us


def _read_as_double(value: float, ns: int) -> tuple[float, int]:
    """(µs, ns) of a timestamp the digit rule does not take, read as a double: inf when out of
    range (``ns`` then stays as it was), else ns split into whole and fractional µs."""
    if not abs(value) < _MAX_US:
        return math.inf, ns
    whole_us = math.floor(value)
    return value, int(whole_us) * 1000 + round((value - whole_us) * 1000.0)


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
    if len(found) != len(with_ts) or any(type(e["ts"]) not in (int, float) for e in with_ts):
        return None
    # The fast path's reading of a number's text (whole µs × 1000 + the first three fraction digits).
    exact, us = _ns_from_text([whole + b"." + frac if frac else whole for whole, frac in found])
    if not np.isfinite(us).all() or (np.abs(exact) >= _MAX_TIME_NS).any():
        return None  # a time beyond int64 ns: the doubles (range-checked per event) decide
    approx = np.array([float(e["ts"]) for e in with_ts], dtype=np.float64)
    if len(approx) and np.abs(exact / 1000.0 - approx).max() > 1.0:
        return None
    out = np.zeros(len(events), dtype=np.int64)
    out[np.array(has_ts, dtype=bool)] = exact
    return out


def _object_array(values: list[Any]) -> np.ndarray:
    """Values as a 1-d object array for hashing; a list or an object (an id written as ``[0]`` or
    ``{"id": 1}``: not an id) becomes None."""
    out = np.empty(len(values), dtype=object)
    out[:] = [None if isinstance(v, (list, dict)) else v for v in values]
    return out


def _int_column(values: list[Any]) -> np.ndarray:
    """int64 array of id-like values (absent: -1); plain ints go straight to numpy, anything
    else via ``_as_int``, once per distinct value."""
    types = set(map(type, values))
    if not types - {int, type(None)}:
        try:
            if type(None) in types:
                return np.array([-1 if v is None else v for v in values], dtype=np.int64)
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass  # an id beyond int64: by distinct value
    codes, uniques = _Interner._factorize_objects(values)
    table = np.array([-1 if v is None else _as_int(v) for v in uniques], dtype=np.int64)
    return table[codes] if len(codes) else np.zeros(0, dtype=np.int64)


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
    listed = top.get("deviceProperties")
    props = {d["id"]: d for d in listed if isinstance(d, dict) and type(d.get("id")) is int} \
        if isinstance(listed, list) else {}
    out = []
    for idx in sorted(set(int(x) for x in np.unique(device_ids))):
        prop = props.get(idx, {})
        name = str(prop.get("name", ""))
        vendor = "amd" if "AMD" in name or "Instinct" in name or "gfx" in name else ("nvidia" if name else "")
        out.append(Device(index=idx, name=name, vendor=vendor))
    return out
