"""The schema's fields of every element of a Kineto trace's event array, as columns.

Three decodings fill the same :class:`Fields`: the compiled scanner's blocks
(:meth:`Fields.add_scanned`), the typed msgspec structs (:meth:`Fields.add_structs`) and
orjson's dicts (:meth:`Fields.add_dicts`); readers/kineto.py turns them into the timeline.
:func:`scan_fields` runs the scanner over a whole file. This module imports no pandas at load
time: the command line fills the scanner's fields on a thread while the main thread is still
importing the analyses (readers/_prefetch.py), and a diagnosis imports no pandas at all.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from traceview.arrays import joined
from traceview.categories import NON_TENSOR_INPUT_TYPES
from traceview.readers import kineto_scan
from traceview.readers._json_stream import Declined
from traceview.readers.kineto_scan import EventScanner, ScannedBlock
from traceview.table import code_type

# Floats above this many µs cannot carry ns exactly in a double (2**53 ns / 1000).
EXACT_FLOAT_LIMIT_US = float(2**53) / 1000.0
# Timestamps and durations, in µs, that fit in int64 ns with room for sums (2**62 ns ≈ 146 years).
MAX_US = float(2**62) / 1000.0
INT64_MAX = 2**63 - 1


class _Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` keys the schema reads; every other key is skipped unparsed."""

    device: int | str | None = None
    stream: int | str | None = None
    correlation: int | str | None = None
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_types: Any = msgspec.field(default=None, name="Input type")
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
MEMORY_ARGS = {"memory_bytes": "Bytes", "total_allocated": "Total Allocated", "total_reserved": "Total Reserved",
                "device_type": "Device Type", "device_id": "Device Id"}
MEMORY_EVENT_NAME = "[memory]"  # torch.profiler(profile_memory=True): ph "i", cat cpu_instant_event


class _Event(msgspec.Struct, gc=False):
    """One trace event as the fast path decodes it. Types are the ones Kineto writes; anything
    else (a string ts, an args list …) makes the decoder refuse, and the reference path drops
    that event with a reason."""

    ph: str | None = None
    cat: str = ""
    name: str = ""
    pid: int | float | str | None = None  # (a float: see _Interner.whole_floats)
    tid: int | float | str = 0
    ts: int | float = math.nan  # NaN: no ts key
    dur: int | float | None = 0
    args: _Args = _NO_ARGS


class _EventExactTs(_Event, gc=False):
    """The same event with ``ts`` kept as its JSON text (empty when absent)."""

    ts: msgspec.Raw = msgspec.Raw(b"")  # type: ignore[assignment]


FAST_DECODER = msgspec.json.Decoder(list[_Event])
EXACT_TS_DECODER = msgspec.json.Decoder(list[_EventExactTs])
# The compiled scanner's raw tokens get their values from decoders of the struct fields' own types.
_ARGS_LIST_DECODER = msgspec.json.Decoder(list[_Args])
_PH_TOKEN = msgspec.json.Decoder(str | None)
_TEXT_TOKEN = msgspec.json.Decoder(str)
_PID_TOKEN = msgspec.json.Decoder(int | float | str | None)
_TID_TOKEN = msgspec.json.Decoder(int | float | str)
_INPUT_TYPES_TOKEN = msgspec.json.Decoder(Any)  # (_Args.input_types' type)


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
    return -1 if value is None else as_int(value)


def _whole(value: Any) -> Any:
    """An id's value with a whole-number float as the integer (27927.0 → 27927); others as they are."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


class _Sentinel:
    """A marker value that no JSON document can hold."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return self.label


NOT_AN_OBJECT = _Sentinel("<not an object>")  # ph of an array element that is not a JSON object
BAD_TID = _Sentinel("<bad tid>")  # tid of a type that cannot be an id


def _factorize(values: np.ndarray, **options: Any) -> tuple[np.ndarray, Any]:
    """``pandas.factorize`` (codes in order of first appearance), pandas imported on first use:
    only the typed and reference decodings call it, on the main thread once pandas is loaded."""
    import pandas as pd

    return pd.factorize(values, **options)


_SIGNED_TYPES = (np.int8, np.int16, np.int32, np.int64)


def _narrowest(low: int, high: int) -> type[np.signedinteger[Any]]:
    """The smallest signed integer type that holds every value from ``low`` to ``high``."""
    return next((t for t in _SIGNED_TYPES if np.iinfo(t).min <= low and high <= np.iinfo(t).max), np.int64)


def _narrowed(column: np.ndarray) -> np.ndarray:
    """An int64 column as a new array of the smallest type that holds its values."""
    if not len(column):
        return column.copy()
    return column.astype(_narrowest(int(column.min()), int(column.max())))


class _Interner:
    """Distinct values of one field across batches, and each event's code into them."""

    def __init__(self, ids: bool = False, whole_floats: bool = False) -> None:
        self.ids = ids  # values may all be ints (pid, tid, device, stream): then hashed as int64
        # A float that is a whole number is that integer: JSON has one number type, and some
        # exporters write every number as a double (pid 27927.0); Kineto writes integers.
        self.whole_floats = whole_floats
        self.index: dict[Any, int] = {}
        self.values: list[Any] = []
        self.codes: list[np.ndarray] = []
        self._all: np.ndarray | None = None

    def add(self, values: list[Any]) -> None:
        self._all = None
        types = set(map(type, values)) if self.ids else set()
        if self.whole_floats and float in types:
            values = [_whole(v) for v in values]
            types = set(map(type, values))
        if types == {int}:
            try:
                codes, uniques = _factorize(np.array(values, dtype=np.int64))
            except OverflowError:  # an id beyond int64: as objects below
                codes, uniques = self._factorize_objects(values)
            else:
                uniques = uniques.tolist()
        else:
            codes, uniques = self._factorize_objects(values)
        self.add_coded(uniques, codes)

    def add_coded(self, uniques: Any, codes: np.ndarray) -> None:
        """A batch given as its distinct values and each event's index into them. The batch's
        codes are held in the smallest integer type that holds every code so far (a field of a
        few values, on millions of events: 2 bytes an event, not 8)."""
        self._all = None
        table = np.empty(len(uniques), dtype=np.int64)
        for i, value in enumerate(uniques):
            if self.whole_floats:
                value = _whole(value)
            key = (type(value), value)  # 1, True and "1" stay apart (1.0 is 1 in pid and tid: whole_floats)
            code = self.index.get(key)
            if code is None:
                code = self.index[key] = len(self.values)
                self.values.append(value)
            table[i] = code
        table = table.astype(code_type(len(self.values)))
        self.codes.append(table[codes] if len(codes) else np.zeros(0, dtype=table.dtype))

    @staticmethod
    def _factorize_objects(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
        try:
            codes, uniques = _factorize(np.array(values, dtype=object), use_na_sentinel=False)
        except (TypeError, ValueError):  # a list or an object among the values: no id
            codes, uniques = _factorize(_object_array(values), use_na_sentinel=False)
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

    def release(self) -> None:
        """Let go of the events' codes (the distinct values stay)."""
        self.codes, self._all = [], None


class Fields:
    """The schema's fields of every array element, in file order, as columns."""

    def __init__(self) -> None:
        self.ph, self.cat, self.name = _Interner(), _Interner(), _Interner()
        self.pid, self.tid = (_Interner(ids=True, whole_floats=True) for _ in range(2))
        self.device, self.stream = (_Interner(ids=True) for _ in range(2))
        self.ts: list[np.ndarray] = []  # µs as doubles (NaN: no ts; inf: not a number)
        self.ts_exact: list[np.ndarray] = []  # exact ns, when decoded from the text
        self.dur: list[np.ndarray] = []
        self.correlation: list[np.ndarray] = []
        self.nbytes: list[np.ndarray] = []
        self.elements: list[np.ndarray] = []
        self.input_dtypes = _Interner()  # each event's input_dtypes_label ("" where none is recorded)
        self.args_bad: list[np.ndarray] = []
        self.meta_names: dict[int, Any] = {}  # event position -> args.name, metadata events only
        # "[memory]" events: their positions, and each MEMORY_ARGS field as int64 (-1: absent)
        self.memory_rows: list[np.ndarray] = []
        self.memory_columns: dict[str, list[np.ndarray]] = {field: [] for field in MEMORY_ARGS}
        self.count = 0
        self.needs_exact_ts = False
        # Compiled scanner: each ts's exact ns and flags, for when the doubles turn out not to do.
        self.scan_ts_ns: list[np.ndarray] = []
        # args.device / args.stream (-1: none), each block in the smallest type that holds it
        self.device_ids: list[np.ndarray] = []
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
        big = np.abs(ts) > EXACT_FLOAT_LIMIT_US
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
                  **MEMORY_ARGS}
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

        # Held in the smallest type that holds the block's values (ids and counts: mostly -1 or
        # small); the timeline widens what it keeps.
        self.device_ids.append(_narrowed(integer_arg("device")))
        self.stream_ids.append(_narrowed(integer_arg("stream")))
        self.correlation.append(_narrowed(integer_arg("correlation")))
        self.nbytes.append(_narrowed(integer_arg("bytes")))
        self.elements.append(_narrowed(ints[kineto_scan.ROW_ELEMENTS]))
        type_tokens = block.tokens[kineto_scan.ROW_INPUT_TYPES]
        labels = [input_dtypes_label(_token_value(_INPUT_TYPES_TOKEN, token)) for token in type_tokens] + [""]
        type_codes = ints[kineto_scan.ROW_INPUT_TYPES]
        self.input_dtypes.add_coded(labels, np.where(type_codes < 0, len(type_tokens), type_codes))
        self.args_bad.append(np.zeros(n, dtype=bool))
        self._add_special_rows(lambda rows: [args.name for args in _decode_args_of(block, rows)],
                               lambda rows: {field: integer_arg(field, rows) for field in MEMORY_ARGS})
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

    def release(self, *names: str) -> None:
        """Let go of these fields' per-event arrays (interned fields keep their distinct values):
        the timeline takes what it needs of each field, and holding the reader's copy as well
        would double what a large trace holds (readers/kineto.py)."""
        for name in names:
            value = getattr(self, name)
            if isinstance(value, _Interner):
                value.release()
            elif isinstance(value, dict):
                for parts in value.values():
                    parts.clear()
            else:
                value.clear()

    def ids(self, field: str) -> np.ndarray:
        """args.device or args.stream of every event (-1: none); int64, or where the scanner read
        them the smallest integer type that holds them."""
        scanned = self.device_ids if field == "device" else self.stream_ids
        return joined(scanned, np.int64) if scanned else _ids(getattr(self, field))

    def exact_timestamps(self) -> np.ndarray:
        """Exact ns of every ts from the compiled scanner's digits (the reading of
        :func:`ns_from_text`); the µs doubles in :attr:`ts` become that reading's too."""
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
            exact, ts = ns_from_text([bytes(e.ts) for e in events])
            self.ts_exact.append(exact)
        else:
            ts = _float_column([e.ts for e in events])
            big = np.abs(ts) > EXACT_FLOAT_LIMIT_US
            if big.any() and not self.needs_exact_ts:
                self.needs_exact_ts = bool((ts[big] != np.floor(ts[big])).any())
        self._add(
            ph=[e.ph for e in events], cats=[e.cat for e in events], names=[e.name for e in events],
            pids=[e.pid for e in events], tids=[e.tid for e in events], ts=ts,
            dur=_float_column([0 if e.dur is None else e.dur for e in events]),
            device=[a.device for a in args], stream=[a.stream for a in args],
            correlation=[a.correlation for a in args], nbytes=[a.bytes for a in args],
            dims=[a.input_dims for a in args], types=[a.input_types for a in args], args=args, arg=getattr,
            args_bad=None)

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
                ev = {"ph": NOT_AN_OBJECT}
            phase = ev.get("ph")
            ph.append(phase if type(phase) is str or phase is NOT_AN_OBJECT else None)
            raw_cat = ev.get("cat", "")
            cats.append(raw_cat if type(raw_cat) is str else str(raw_cat))
            name = ev.get("name", "")
            names.append(name if type(name) is str else str(name))
            pid = ev.get("pid")
            pids.append(pid if isinstance(pid, (int, float, str)) else None)
            tid = ev.get("tid", 0)
            tids.append(tid if isinstance(tid, (int, float, str)) else BAD_TID)
            if "ts" not in ev:
                ts.append(math.nan)
            else:
                value = ev["ts"]
                ts.append(value if type(value) in (int, float) and abs(value) < MAX_US else math.inf)
            d = ev.get("dur", 0)
            dur.append(0.0 if d is None else (d if type(d) in (int, float) and abs(d) < MAX_US else -1.0))
            a = ev.get("args")
            args_bad.append(a is not None and not isinstance(a, dict))
            a = a if isinstance(a, dict) else {}
            args.append(a)
        self._add(
            ph=ph, cats=cats, names=names, pids=pids, tids=tids, ts=np.array(ts, dtype=np.float64),
            dur=np.array(dur, dtype=np.float64), device=[a.get("device") for a in args],
            stream=[a.get("stream") for a in args], correlation=[a.get("correlation") for a in args],
            nbytes=[a.get("bytes") for a in args], dims=[a.get("Input Dims") for a in args],
            types=[a.get("Input type") for a in args], args=args, arg=_dict_arg,
            args_bad=np.array(args_bad, dtype=bool))

    def _add(self, *, ph: list[Any], cats: list[Any], names: list[Any], pids: list[Any], tids: list[Any],
             ts: np.ndarray, dur: np.ndarray, device: list[Any], stream: list[Any], correlation: list[Any],
             nbytes: list[Any], dims: list[Any], types: list[Any], args: list[Any], arg: Callable[[Any, str], Any],
             args_bad: np.ndarray | None) -> None:
        n = len(ph)
        for interner, values in ((self.ph, ph), (self.cat, cats), (self.name, names), (self.pid, pids),
                                 (self.tid, tids), (self.device, device), (self.stream, stream)):
            interner.add(values)
        self._add_special_rows(
            lambda rows: [arg(args[i], "name") for i in rows.tolist()],
            lambda rows: {field: _int_column([arg(args[i], field) for i in rows.tolist()]) for field in MEMORY_ARGS})
        self.correlation.append(_int_column(correlation))
        self.nbytes.append(_int_column(nbytes))
        elements = np.full(n, -1, dtype=np.int64)
        for i in itertools.compress(range(n), [d is not None for d in dims]):
            elements[i] = _largest_input(dims[i])
        self.elements.append(elements)
        distinct = {"": 0}  # (the lists themselves are not hashable: their labels are)
        type_codes = np.zeros(n, dtype=np.int64)
        for i in itertools.compress(range(n), [t is not None for t in types]):
            type_codes[i] = distinct.setdefault(input_dtypes_label(types[i]), len(distinct))
        self.input_dtypes.add_coded(list(distinct), type_codes)
        self.ts.append(ts)
        self.dur.append(dur)
        self.args_bad.append(args_bad if args_bad is not None else np.zeros(n, dtype=bool))
        self.count += n



def _dict_arg(args: dict[str, Any], field: str) -> Any:
    """An args value by the struct attribute's name (the reference path's args are dicts)."""
    return args.get(MEMORY_ARGS.get(field, field))


def _ids(values: _Interner) -> np.ndarray:
    """An id field (device, stream) as int64 per event: each distinct value converted once."""
    table = np.array([_int_value(v) for v in values.values], dtype=np.int64)
    codes = values.all_codes()
    return table[codes] if len(table) else np.full(len(codes), -1, dtype=np.int64)


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


def input_dtypes_label(types: Any) -> str:
    """The dtypes of an op's tensor inputs from Kineto's ``Input type`` (["float", "Scalar", "",
    "long int"] → "float+long int"): the distinct tensor dtypes, sorted, joined by "+"; "" where
    none is recorded. Entries that name no dtype (categories.NON_TENSOR_INPUT_TYPES) are left out."""
    if not isinstance(types, list):
        return ""
    return "+".join(sorted({t for t in types if type(t) is str and t and t not in NON_TENSOR_INPUT_TYPES}))


_NUMBER_TEXT_WIDTH = 40  # longer "numbers" are not timestamps in range


def ns_from_text(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
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
    beyond = whole_us >= MAX_US
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
    if not abs(value) < MAX_US:
        return math.inf, ns
    whole_us = math.floor(value)
    return value, int(whole_us) * 1000 + round((value - whole_us) * 1000.0)


def _float_column(values: list[Any]) -> np.ndarray:
    """float64 array of JSON numbers; an integer beyond a double's range (a 400-digit ``ts``) is
    ±inf — a time out of range, dropped with that reason like any other — not an overflow."""
    try:
        return np.array(values, dtype=np.float64)
    except OverflowError:
        return np.array([v if -_DOUBLE_MAX < v < _DOUBLE_MAX else (math.inf if v > 0 else -math.inf) for v in values],
                        dtype=np.float64)


_DOUBLE_MAX = 1.7976931348623157e308


def _object_array(values: list[Any]) -> np.ndarray:
    """Values as a 1-d object array for hashing; a list or an object (an id written as ``[0]`` or
    ``{"id": 1}``: not an id) becomes None."""
    out = np.empty(len(values), dtype=object)
    out[:] = [None if isinstance(v, (list, dict)) else v for v in values]
    return out


def _int_column(values: list[Any]) -> np.ndarray:
    """int64 array of id-like values (absent: -1); plain ints go straight to numpy, anything
    else via ``as_int``, once per distinct value."""
    types = set(map(type, values))
    if not types - {int, type(None)}:
        try:
            if type(None) in types:
                return np.array([-1 if v is None else v for v in values], dtype=np.int64)
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass  # an id beyond int64: by distinct value
    codes, uniques = _Interner._factorize_objects(values)
    table = np.array([-1 if v is None else as_int(v) for v in uniques], dtype=np.int64)
    return table[codes] if len(codes) else np.zeros(0, dtype=np.int64)


def as_int(value: Any) -> int:
    """An id as int64: out-of-range or non-finite numbers are unknown (-1)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -INT64_MAX <= value <= INT64_MAX else -1
    if isinstance(value, float):
        return int(value) if abs(value) < 2**62 else -1
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            # Non-numeric ids ("Spans", "stream 7 …"): a stable small negative id per string.
            return -2 - (sum(value.encode()) % 1_000_000)
        return number if -INT64_MAX <= number <= INT64_MAX else -1
    return -1




@dataclass
class ScannedFields:
    """What the compiled scanner read of a whole file: its fields, the document's other
    top-level keys, the number of array elements, and exact timestamps where needed."""

    fields: Fields
    top: dict[str, Any]
    events_seen: int
    ts_exact: np.ndarray | None


def scan_fields(path: Path, stream: BinaryIO | None = None, halves: Callable[[], bool] = lambda: True) -> ScannedFields:
    """The compiled scanner's reading of ``path`` (or of ``stream``, its content already
    opened; long blocks in two halves on two threads while ``halves()`` says so); raises
    :class:`Declined` for a document it does not take."""
    scanner = EventScanner(path, stream, halves)
    fields = Fields()
    block = None
    for block in scanner.blocks():
        fields.add_scanned(block)
    del block  # (its views hold the scanner's buffers)
    ts_exact = fields.exact_timestamps() if fields.needs_exact_ts else None
    fields.release("scan_ts_ns", "scan_ts_flags")  # (read into ts_exact, or not needed)
    return ScannedFields(fields, scanner.top, scanner.events_seen, ts_exact)
