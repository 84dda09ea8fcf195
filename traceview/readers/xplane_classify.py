"""How XPlane events are classified: the kind of each event, its copy direction and size, its
framework op, and the rules that use nesting. Array operations over a plane walk's columns;
name patterns come from :mod:`traceview.categories`, kind rows from :mod:`traceview.kinds`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview import kinds as kind_rules
from traceview.arrays import Nesting, factorize, first_match, first_of_each, one_value, unique_sorted
from traceview.readers.xplane_stats import StatColumn
from traceview.schema import CATEGORY_LEVELS, Kind, categorical_from_codes, leveled
from traceview.table import Labels

# A stat's integer written as text: ASCII digits, one optional minus sign (str.isdigit() also
# takes "²", which int() refuses).
_INTEGER_TEXT = re.compile(r"-?[0-9]+")

# Line classes: how the reader tells a line's threads apart (an index into LINE_CLASS).
LINE_HOST, LINE_HOST_API, LINE_HOST_COMPILE, LINE_HOST_INPUT, LINE_DEVICE = 0, 1, 2, 3, 4


_INHERITING = frozenset({Kind.COMPILE.value, Kind.GRAPH_BUILD.value, Kind.INPUT.value})


_INHERITABLE = frozenset({Kind.ANNOTATION.value, Kind.HOST_OP.value, Kind.PYTHON.value})


def match_names(names: Labels, predicate: Any) -> np.ndarray:
    """Apply a name predicate once per distinct name."""
    if not len(names):
        return np.zeros(0, dtype=bool)
    return _name_table(names, predicate)[names.codes]


def int_stat(column: StatColumn, n: int) -> np.ndarray:
    """An integer stat per row (-1 where absent or not an int64 integer)."""
    if not len(column):
        return one_value(-1, n, np.int64)
    out = np.full(n, -1, dtype=np.int64)
    try:
        out[column.rows] = np.fromiter(column.values, dtype=np.int64, count=len(column))
        return out
    except (TypeError, ValueError, OverflowError):
        pass  # mixed value types: decode one by one
    out[column.rows] = [_id_value(value) for value in column.values.tolist()]
    return out


_INT64_LIMIT = 2**63


def _id_value(value: Any) -> int:
    """An integer stat as int64: a number out of range or not finite (a NaN step_num, a uint64
    2**64 - 1) is unknown, -1."""
    if isinstance(value, bool):
        return -1
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and abs(value) < _INT64_LIMIT else -1
    if isinstance(value, str):
        value = int(value) if _INTEGER_TEXT.fullmatch(value) else -1
    if isinstance(value, int):
        return value if -_INT64_LIMIT < value < _INT64_LIMIT else -1
    return -1


def str_stat(column: StatColumn, n: int) -> np.ndarray:
    """A string stat per row ("" when absent or not a string), as Python strings."""
    strings = StringCodes()
    codes = str_stat_codes(column, n, strings)
    return np.array(strings.values, dtype=object)[codes]


def has_any_stat(stats: dict[str, StatColumn], n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    for column in stats.values():
        out[column.rows] = True
    return out


class StringCodes:
    """Strings of a column as codes into ``values`` (code 0 is "", no value): rules test codes, and
    the column becomes a categorical without a per-row string ever being made."""

    def __init__(self) -> None:
        self.values: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def code(self, value: str) -> int:
        found = self._index.get(value)
        if found is None:
            found = self._index[value] = len(self.values)
            self.values.append(value)
        return found

    def categorical(self, codes: np.ndarray) -> Labels:
        return categorical_from_codes(codes, self.values)


def str_stat_codes(column: StatColumn, n: int, strings: StringCodes) -> np.ndarray:
    """A string stat per row as codes into ``strings`` (0, "", when absent or not a string)."""
    if not len(column):
        return one_value(0, n, np.int32)
    out = np.zeros(n, dtype=np.int32)
    codes, uniq = factorize(column.values)
    table = np.array([strings.code(u) if isinstance(u, str) else 0 for u in uniq] + [0], dtype=np.int64)
    out[column.rows] = table[codes]
    return out


def fw_op_codes(stats: dict[str, StatColumn], n: int, strings: StringCodes) -> np.ndarray:
    """The framework op of each event from its stats (see the module docstring), as codes into
    ``strings``; 0 ("") when none."""
    out = np.zeros(n, dtype=np.int32)
    filled = np.zeros(n, dtype=bool)
    with_hlo = stats["hlo_op"].mask(n)
    sources = (
        ("tf_op", lambda v: not v.endswith(":") and not v.startswith("XlaModule:")),
        ("annotation", None),
        ("eager_op", None),
        ("name", None),  # the JAX op path; only on events that also carry hlo_op
        ("hlo_op", None),
    )
    for stat, accept in sources:
        column = stats[stat]
        if not len(column):
            continue
        rows = column.rows
        codes, uniq = factorize(column.values)
        good = [isinstance(u, str) and u != "" and (accept is None or accept(u)) for u in uniq]
        table = np.array([strings.code(u) if ok else 0 for u, ok in zip(uniq, good)] + [0], dtype=np.int64)
        ok = np.append(np.array(good, dtype=bool), False)[codes] & ~filled[rows]  # code -1 (missing): False
        if stat == "name":
            ok &= with_hlo[rows]
        out[rows[ok]] = table[codes[ok]]
        filled[rows[ok]] = True
    return out


# Line classes (ints in the reader) → the class names the kind table uses.
_LINE_CLASS = np.array([kind_rules.HOST, kind_rules.HOST_API, kind_rules.HOST_COMPILE, kind_rules.HOST_INPUT,
                        kind_rules.DEVICE], dtype=object)


_KIND_STATS = tuple(sorted({rule.stat for rule in kind_rules.XPLANE_RULES if rule.stat}))


def base_kinds(names: Labels, line_cls: np.ndarray, stats: dict[str, StatColumn], n: int) -> Labels:
    """Kind of each event from its line class, name and stats: the table ``kinds.XPLANE_RULES``."""
    # Class and default kind as categoricals on the line class codes: no per-row strings to hash.
    classes = Labels(line_cls, _LINE_CLASS)
    defaults = [kind_rules.XPLANE_DEFAULT_KIND[c].value for c in _LINE_CLASS]
    levels = sorted(set(defaults))
    default_code = np.array([levels.index(d) for d in defaults], dtype=np.int64)
    default = Labels(default_code[line_cls] if n else line_cls, levels)
    has_stat = {stat: stats[stat].mask(n) for stat in _KIND_STATS}
    return leveled("kind", *kind_rules.kind_rules_by_combination(kind_rules.XPLANE_RULES, classes, names, default,
                                                                 has_stat))


def copies_and_bytes(
    kinds: Labels,
    names: Labels,
    stats: dict[str, StatColumn],
    correlation: np.ndarray,
    is_device: np.ndarray,
    n: int,
) -> tuple[Labels, np.ndarray]:
    """copy_kind of device copies/fills and bytes of every event with memcpy/memset details."""
    level = {value: i for i, value in enumerate(CATEGORY_LEVELS["copy_kind"])}
    copy_kind = np.full(n, level[""], dtype=np.int8)
    details: dict[int, dict[str, str]] = {}
    for stat in ("memset_details", "memcpy_details"):
        for row, value in stats[stat].items():
            if isinstance(value, str):
                details[row] = _parse_details(value)
    copies = np.flatnonzero(kinds.isin([Kind.MEMCPY.value]))
    # (No copy and no details: no event carries a size, -1 on every row, held once.)
    nbytes = np.full(n, -1, dtype=np.int64) if details or len(copies) else one_value(-1, n, np.int64)
    for row, parsed in details.items():
        size = parsed.get("size", parsed.get("num_bytes", ""))
        if _INTEGER_TEXT.fullmatch(size) and 0 < int(size) < _INT64_LIMIT:  # (larger: no size, as unknown)
            nbytes[row] = int(size)
    if len(copies):
        # The launching API call (same correlation id) may name the direction (hipMemcpyHtoDAsync)
        # and carry the size when the device event does not.
        api_direction, api_bytes = _api_copy_facts(names, correlation, nbytes, is_device)
        for row in copies.tolist():
            corr = int(correlation[row])
            direction = _detail_direction(details.get(row))
            if direction == "other":
                direction = cat.XPLANE_COPY_NAME_DIRECTION.get(str(names.at([row])[0]), "other")
            if direction == "other":
                direction = api_direction.get(corr, "other")
            copy_kind[row] = level[direction]
            if nbytes[row] < 0 and corr in api_bytes:
                nbytes[row] = api_bytes[corr]
    copy_kind[kinds.isin([Kind.MEMSET.value])] = level["memset"]
    return Labels(copy_kind, CATEGORY_LEVELS["copy_kind"]), nbytes


_API_DIRECTION = {"HtoD": "H2D", "DtoH": "D2H", "DtoD": "D2D", "HtoH": "H2H", "Peer": "P2P"}


def _api_copy_facts(names: Labels, correlation: np.ndarray, nbytes: np.ndarray, is_device: np.ndarray
                    ) -> tuple[dict[int, str], dict[int, int]]:
    """Per correlation id, the copy direction an API call's name gives and the bytes it carries:
    each from the first host call of that id that has it (a trace launches millions of calls, so
    a name is matched once per distinct name and an id is looked up once)."""
    api = np.flatnonzero(~is_device & (correlation >= 0))
    codes = np.asarray(names.codes, dtype=np.int64)[api]
    values = list(names.categories)
    direction_of: dict[int, str] = {}
    for code in unique_sorted(codes).tolist():
        m = cat.API_COPY_DIRECTION.search(str(values[code] if code >= 0 else np.nan))
        if m:
            direction_of[code] = _API_DIRECTION[m.group(1)]
    named = api[np.isin(codes, np.array(list(direction_of), dtype=np.int64))]
    named = named[first_of_each(correlation[named])]
    api_direction = {int(correlation[row]): direction_of[int(code)]
                     for row, code in zip(named.tolist(), np.asarray(names.codes)[named].tolist())}
    sized = api[nbytes[api] > 0]
    sized = sized[first_of_each(correlation[sized])]
    api_bytes = dict(zip(correlation[sized].tolist(), nbytes[sized].tolist()))
    return api_direction, api_bytes


def _parse_details(text: str) -> dict[str, str]:
    """``"kind_src:device kind_dst:host size:256 dest:0 async:1"`` → dict of the fields."""
    out: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition(":")
        if sep:
            out[key] = value
    return out


def _detail_direction(parsed: dict[str, str] | None) -> str:
    if not parsed:
        return "other"
    src = parsed.get("kind_src", "").lower()
    dst = parsed.get("kind_dst", "").lower()

    def side(kind: str) -> str:
        if kind in cat.XPLANE_HOST_MEMORY:
            return "H"
        if kind in cat.XPLANE_DEVICE_MEMORY:
            return "D"
        return ""

    s, d = side(src), side(dst)
    if not s or not d:
        return "other"
    return {"HD": "H2D", "DH": "D2H", "DD": "D2D", "HH": "H2H"}[s + d]


def refine_by_nesting(kinds: Labels, names: Labels, nesting: Nesting, has_stats: np.ndarray
                      ) -> Labels:
    """Nesting rules of the module docstring: thunks, HLO passes next to compile events, inheritance."""
    parent = nesting.parent
    code = {kind: i for i, kind in enumerate(kinds.categories)}
    codes = kinds.codes.copy()
    child = np.flatnonzero(parent >= 0)
    if not len(child):
        return kinds
    name_codes = names.codes
    annotation = child[codes[child] == code[Kind.ANNOTATION.value]]
    if len(annotation):
        # Thunks directly inside an XLA module execution.
        exec_parent = _name_table(names, cat.XLA_MODULE_EXECUTION.search)[name_codes[parent[annotation]]]
        thunk = exec_parent & _name_table(names, cat.XLA_THUNK_NAME.match)[name_codes[annotation]]
        codes[annotation[thunk]] = code[Kind.HOST_OP.value]
    # HLO passes under a parent that also holds a compile event.
    compile_parents = unique_sorted(parent[child[codes[child] == code[Kind.COMPILE.value]]])
    if len(compile_parents):
        annotation = child[codes[child] == code[Kind.ANNOTATION.value]]
        passes = ~has_stats[annotation] & np.isin(parent[annotation], compile_parents)
        passes &= _name_table(names, cat.XPLANE_HLO_PASS.match)[name_codes[annotation]]
        codes[annotation[passes]] = code[Kind.COMPILE.value]
    # Children of compile / graph-building / input ranges take the parent's kind.
    inheriting = _code_table(code, _INHERITING)
    inheritable = _code_table(code, _INHERITABLE)
    codes = nesting.copy_down(codes, takes=inheritable, gives=inheriting)
    return Labels(codes, kinds.categories)


def _name_table(names: Labels, predicate: Any) -> np.ndarray:
    """Whether each name code passes ``predicate`` (indexed by code; -1, missing, does not)."""
    return np.array([bool(predicate(str(c))) for c in names.categories] + [False], dtype=bool)


def _code_table(code: dict[str, int], kinds: frozenset[str]) -> np.ndarray:
    """Whether each kind code is one of ``kinds`` (an array indexed by code; -1, missing, is not)."""
    table = np.zeros(len(code) + 1, dtype=bool)
    for kind in kinds:
        table[code[kind]] = True
    return table


def launchers_from_fw_op(fw_op: np.ndarray, correlation: np.ndarray, is_device: np.ndarray) -> np.ndarray:
    """Device events: their framework op, else that of the host call with the same correlation id
    (``fw_op`` and the result as :class:`StringCodes` codes; 0 for none)."""
    dev = np.flatnonzero(is_device)
    if not len(dev):
        return one_value(0, len(fw_op), np.int32)
    launcher = np.zeros(len(fw_op), dtype=np.int32)
    launcher[dev] = fw_op[dev]
    host = np.flatnonzero(~is_device & (correlation >= 0) & (fw_op != 0))
    if len(host):
        missing = dev[(launcher[dev] == 0) & (correlation[dev] >= 0)]
        launcher[missing] = first_match(correlation[host], fw_op[host], correlation[missing], 0)
    return launcher
