"""Reader for the TensorFlow / JAX profiler's XPlane protobuf (``<host>.xplane.pb``), without
TensorFlow: the schema is compiled into :mod:`traceview.readers.proto.xplane_descriptor`.

What the file holds (see ``proto/xplane.proto``): an ``XSpace`` of planes; each plane has lines
(threads or streams) of events; event and stat names are interned per plane. Event time =
``XLine.timestamp_ns`` + ``XEvent.offset_ps`` (ps rounded to ns; start and end are rounded
separately so that nested events stay nested). The ``Task Environment`` plane's
``profile_start_time`` (epoch ns) anchors line timestamps, which are relative to it.

Planes and lines → kinds (every XEvent is either kept or dropped under a counted reason):

- ``/host:*`` planes (``/host:CPU``). Line ``Host Threads/<tid>`` (GPU tracer API callbacks):
  launch / sync / runtime API by ``categories.LAUNCH_API`` / ``SYNC_API``, anything else there
  ``runtime``. Lines whose thread only compiles (``tf_xla-cpu-codegen/<id>``): ``compile``;
  tf.data threads (``tf_data_iterator_resource/<id>``, ``tf_data_private_threadpool/<id>``, where
  the map functions' op kernels run): ``input`` (rules 1–3 below still apply there). All
  other lines (``python``, ``tf_Compute/<id>``, ``tf_numa_-1_Eigen/<id>``, ``py_xla_callback/…``):
  by event, first rule that matches (the rows of ``traceview.kinds.XPLANE_RULES``, in short):

  1. stat ``step_num`` → ``step`` (``Trace('train', step_num=n)``, JAX ``StepTraceAnnotation``);
  2. a name starting ``$`` (Python tracer frame) → ``python``;
  3. CUDA / HIP API names → launch / sync / runtime; ``BlockUntilReady`` → ``sync``;
  4. ``categories.TF_GRAPH_BUILD`` / ``TF_COMPILE`` / ``TF_INPUT`` → graph_build / compile / input;
  5. framework ops → ``host_op``: stats ``eager_op``, ``hlo_op`` (XLA CPU thunks) or
     ``tf_function_call`` (the call of a ``tf.function``, named after the Python function), TF op
     kernels named ``name:Type``, and ``categories.TF_HOST_OP`` (eager runtime, executor,
     ``PjitFunction(f)``, ``jit_f:XLA GPU module``);
  6. anything else → ``annotation`` (user ``Trace`` ranges, XLA/PJRT runtime internals).

  Then, using the nesting on each line: children of a ``compile`` / ``graph_build`` / ``input``
  event that are ``annotation`` / ``host_op`` / ``python`` take the parent's kind (the passes
  inside "HLO passes after layout assignment", ``convert_to_tensor`` while tracing); an
  ``annotation`` named like an HLO pass (``dce``, ``sharding-removal``) whose parent also holds a
  ``compile`` event is ``compile`` (TF 2.21 runs the first passes outside any named compile
  range); an ``annotation`` named like an HLO instruction directly inside an XLA module execution
  (``jit_f:XLA GPU module``, ``ThunkExecutor::Execute``) is a thunk → ``host_op``.
  Zero-duration host events (``ThreadpoolListener::*`` flow markers, ``MemoryAllocation``) are dropped.

- ``/device:GPU:N`` planes, lines ``Stream #<id>(…)``: ``memcpy`` when the event has
  ``memcpy_details`` or a copy name (``MemcpyH2D``, ROCm ``__amd_rocclr_copyBuffer``),
  ``memset`` likewise, else ``kernel``. Device = N, stream = id from the line name. Other lines
  of a device plane are derived (``XLA Ops``, ``XLA Modules``, ``Steps``…) and dropped; a device
  plane without stream lines (TPU) keeps ``XLA Ops`` as its kernels.
- ``/host:metadata``, ``Task Environment``, ``/device:CUSTOM:*``: metadata, dropped (counted).
- Derived host lines (``TensorFlow Ops``, ``Steps``…; ``categories.XPLANE_DERIVED_LINES``): dropped.

Framework: "jax" when the file has JAX markers (``PjitFunction(f)``, XLA modules named
``jit_*``/``pmap_*`` in events, stats or ``/host:metadata``); else "tensorflow" when it has TF
markers (eager runtime events, ``__inference_*``, ``tf_Compute`` threads, ``tf_function_call``
stats); else "unknown". JAX wins because a JAX program may also run TF ops (tf.data).

Extra columns after the schema's (same row order): ``step_num`` (int64, the ``step_num`` stat,
-1 when absent) and ``fw_op`` (category: the framework op an event belongs to, from the first of
the stats ``tf_op`` (not the bare ``XlaModule:``), ``annotation`` (TF 2.4), ``eager_op``, the JAX
op path in stat ``name`` (with ``hlo_op``), ``hlo_op``; a host event without one inherits its
parent's; "" when none) and ``fn_call`` (category: the ``tf_function_call`` stat of a tf.function
call event, ``traced-nonXla`` / ``notTraced-xla`` …; "" on every other event). ``launcher`` of a device event is its ``fw_op`` (or that of the host
call with the same correlation id): XPlane launch calls sit on ``Host Threads`` lines, apart from
the framework ops, so nesting cannot name the op there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceview import categories as cat
from traceview import kinds as kind_rules
from traceview.arrays import unique_inverse
from traceview.errors import FormatError, InputError
from traceview.normalize import OVERLAP_NOTE, nest_tracks
from traceview.readers._io import read_bytes
from traceview.readers.xplane_events import decode_line
from traceview.builder import RawTrace, build
from traceview.schema import Device, Kind, Timeline, TraceMeta, categorical, categorical_from_codes

FORMAT_NAME = "xplane"
XPLANE_SUFFIX = ".xplane.pb"
# A gzipped XPlane (how traces are often shared) is read the same way: content decides the format.
XPLANE_SUFFIXES = (XPLANE_SUFFIX, XPLANE_SUFFIX + ".gz")


def is_xplane_name(path: Path) -> bool:
    """Whether a file name is an XPlane file's (``<host>.xplane.pb``, or the same gzipped)."""
    return path.name.endswith(XPLANE_SUFFIXES)


def xplane_files(folder: Path, recursive: bool) -> list[Path]:
    found = folder.rglob("*.xplane.pb*") if recursive else folder.glob("*.xplane.pb*")
    return sorted(p for p in found if p.is_file() and is_xplane_name(p))
EXTRA_COLUMNS = ("step_num", "fw_op", "fn_call")

# Stats read per event (others are skipped without decoding).
_WANTED_STATS = frozenset(
    {
        "correlation_id",
        "memcpy_details",
        "memset_details",
        "tf_op",
        "annotation",
        "hlo_op",
        "hlo_module",
        "name",
        "step_num",
        "eager_op",
        "tf_function_call",
    }
)
_EPOCH_NS_MIN = 10**17  # line timestamps above this are absolute epoch ns, not session-relative
# Bounds that keep line time + offset + duration inside int64 ns (2**61 ns ≈ 73 years each).
_MAX_PS = 2**61
_MAX_LINE_NS = 2**61
_RUN_NAME = re.compile(r"^\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}")

_INHERITING = frozenset({Kind.COMPILE.value, Kind.GRAPH_BUILD.value, Kind.INPUT.value})
_INHERITABLE = frozenset({Kind.ANNOTATION.value, Kind.HOST_OP.value, Kind.PYTHON.value})

# Line classes.
_HOST, _HOST_API, _HOST_COMPILE, _HOST_INPUT, _DEVICE = 0, 1, 2, 3, 4


# --------------------------------------------------------------------------------------------
# Format detection
# --------------------------------------------------------------------------------------------
_XSPACE_FIELDS = {1: 2, 2: 2, 3: 2, 4: 2}  # field number -> wire type (all length-delimited)
_XPLANE_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2}


def sniff(head: bytes) -> bool:
    """True when the first bytes are a serialized XSpace whose first field is a plane.

    The TF/JAX/XLA profilers write the planes first (field 1, tag 0x0a). The walk checks every
    field tag and length that fits in ``head``: XSpace fields 1–4 (all length-delimited), the
    first plane's fields 1–6 with their wire types, map entries starting with their key, and
    strings that decode as UTF-8. JSON, text and gzip fail at the first or second tag.
    """
    if len(head) < 2 or head[0] != 0x0A:
        return False
    pos = 0
    first = True
    while pos < len(head):
        tag = _varint(head, pos)
        if tag is None:
            return not first
        value, pos = tag
        field_no, wire = value >> 3, value & 7
        if _XSPACE_FIELDS.get(field_no) != wire:
            return False
        length = _varint(head, pos)
        if length is None:
            return not first
        size, pos = length
        body = head[pos : pos + size]
        if field_no == 1:
            if not _plausible_plane(body, complete=len(body) == size):
                return False
        elif not _utf8_prefix(body):
            return False
        first = False
        pos += size
    return not first


def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    """Decode a varint at ``pos``; None when it runs past the buffer or is longer than 10 bytes."""
    result = 0
    shift = 0
    for i in range(10):
        if pos + i >= len(buf):
            return None
        byte = buf[pos + i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos + i + 1
        shift += 7
    return None


def _plausible_plane(body: bytes, complete: bool) -> bool:
    pos = 0
    seen = False
    while pos < len(body):
        tag = _varint(body, pos)
        if tag is None:
            return seen or not complete
        value, pos = tag
        field_no, wire = value >> 3, value & 7
        if _XPLANE_FIELDS.get(field_no) != wire:
            return False
        if wire == 0:
            number = _varint(body, pos)
            if number is None:
                return not complete
            pos = number[1]
        else:
            length = _varint(body, pos)
            if length is None:
                return not complete
            size, pos = length
            if pos + size > len(body) and complete:
                return False
            content = body[pos : pos + size]
            if field_no in (4, 5) and content[:1] not in (b"\x08", b""):
                return False  # map entries are written key first
            if field_no == 2 and not _utf8_prefix(content):
                return False
            pos += size
        seen = True
    return seen or complete


def _utf8_prefix(data: bytes) -> bool:
    """Whether ``data`` is UTF-8, allowing a character cut at the end of the sniffed head."""
    for cut in range(4):
        try:
            data[: len(data) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


# --------------------------------------------------------------------------------------------
# Logdir discovery
# --------------------------------------------------------------------------------------------
def find_xplanes(path: Path, run: str | None = None) -> list[Path]:
    """The ``.xplane.pb`` files of one profiling run under ``path``.

    ``path`` may be a run folder (``…/plugins/profile/2026_11_22_02_43_17``), a
    ``plugins/profile`` folder, or a TensorBoard logdir. Without ``run`` the newest run is taken:
    run folders are named by capture time (``YYYY_MM_DD_HH_MM_SS``), so the greatest name is the
    newest; runs named otherwise are ordered by modification time, after the timestamped ones.
    With several ``plugins/profile`` folders under a logdir, runs of all of them compete.
    A run with several hosts returns one file per host.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_file():
        if is_xplane_name(path):
            return [path]
        raise InputError(f"{path}: not an {XPLANE_SUFFIX} file; point at a trace or a TensorBoard logdir")
    direct = xplane_files(path, recursive=False)
    if direct:  # a run folder
        if run is not None and run != path.name:
            raise InputError(
                f"{path}: is the run folder '{path.name}', not run '{run}'; "
                f"point at its plugins/profile folder or drop --run"
            )
        return direct
    runs: dict[Path, list[Path]] = {}
    for file in xplane_files(path, recursive=True):
        runs.setdefault(file.parent, []).append(file)
    if not runs:
        raise InputError(
            f"{path}: no {XPLANE_SUFFIX} files found (searched this folder and below, e.g. "
            f"plugins/profile/<run>/<host>{XPLANE_SUFFIX}); point at a TensorBoard logdir written by "
            f"tf.profiler / jax.profiler, or at a trace file"
        )
    if run is not None:
        chosen = [folder for folder in runs if folder.name == run]
        if not chosen:
            names = ", ".join(sorted({folder.name for folder in runs}))
            raise InputError(f"{path}: no run named '{run}' (runs found: {names}); pick one of those")
        if len(chosen) > 1:
            where = ", ".join(str(folder) for folder in sorted(chosen))
            raise InputError(f"{path}: run '{run}' exists in several profile folders ({where}); point at one")
        return sorted(runs[chosen[0]])
    newest = max(runs, key=_run_order)
    return sorted(runs[newest])


def _run_order(folder: Path) -> tuple[int, str, float]:
    if _RUN_NAME.match(folder.name):
        return (1, folder.name, 0.0)
    return (0, "", folder.stat().st_mtime)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def read(path: Path) -> Timeline:
    """Read one ``.xplane.pb`` file into the normalized timeline (plus ``step_num``, ``fw_op``)."""
    path = Path(path)
    raw = read_bytes(path)
    if not raw:
        raise FormatError(f"{path}: file is empty; re-capture the profile (tf.profiler / jax.profiler)")
    if not sniff(raw[:4096]):
        raise FormatError(
            f"{path}: not an XSpace protobuf (first bytes {raw[:8].hex(' ')}); expected a TensorFlow/JAX "
            f"profiler {XPLANE_SUFFIX} file"
        )
    space = _parse(path, raw)
    return _Builder(path, space).build()


def _parse(path: Path, raw: bytes) -> Any:
    from google.protobuf.message import DecodeError

    from traceview.readers.proto.xplane_descriptor import message_classes

    space = message_classes()["XSpace"]()
    try:
        space.ParseFromString(raw)
    except (DecodeError, ValueError, RuntimeError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise FormatError(
            f"{path}: XPlane protobuf is truncated or corrupt ({detail}, {len(raw)} bytes); "
            f"re-copy the file or re-capture the profile"
        ) from None
    if not len(space.planes):
        raise FormatError(f"{path}: XSpace holds no planes; re-capture the profile")
    return space


@dataclass
class _Columns:
    """Per-event arrays gathered line by line, concatenated once at the end."""

    offset_ps: list[np.ndarray] = field(default_factory=list)
    duration_ps: list[np.ndarray] = field(default_factory=list)
    names: list[np.ndarray] = field(default_factory=list)
    line_ts: list[np.ndarray] = field(default_factory=list)
    line_idx: list[np.ndarray] = field(default_factory=list)
    aggregated: list[int] = field(default_factory=list)  # global rows without a timestamp
    stats: dict[str, dict[int, Any]] = field(default_factory=lambda: {name: {} for name in _WANTED_STATS})
    count: int = 0


@dataclass
class _Line:
    """One kept line: where its events go in the table."""

    cls: int
    track: str
    pid: int
    tid: int
    device: int
    stream: int


class _Builder:
    def __init__(self, path: Path, space: Any) -> None:
        self.path = path
        self.space = space
        self.meta = TraceMeta(source=str(path), format=FORMAT_NAME, framework="unknown")
        self.cols = _Columns()
        self.lines: list[_Line] = []
        self.devices: dict[int, Device] = {}
        self.device_stats: dict[int, dict[str, Any]] = {}
        self.jax_hint = False
        self.tf_hint = False
        self.unknown_metadata = 0
        self.dropped_outside_table = 0  # events of dropped planes/lines, never gathered into columns
        self.line_class = _xline_class()
        self.name_codes: dict[str, int] = {}
        self.name_values: list[str] = []

    # ---- plane walk ------------------------------------------------------------------------
    def build(self) -> Timeline:
        meta = self.meta
        meta.host_name = str(self.space.hostnames[0]) if len(self.space.hostnames) else ""
        start_time: int | None = None
        for plane in self.space.planes:
            if plane.name == "Task Environment":
                env = self._plane_stats(plane)
                if isinstance(env.get("profile_start_time"), int):
                    start_time = int(env["profile_start_time"])
                    meta.extra["profile_start_time_ns"] = start_time
                if isinstance(env.get("profile_stop_time"), int):
                    meta.extra["profile_stop_time_ns"] = int(env["profile_stop_time"])
            self._plane(plane)
        meta.input_events = self.cols.count + self.dropped_outside_table
        meta.extra["hostnames"] = [str(h) for h in self.space.hostnames]
        meta.extra["planes"] = [str(p.name) for p in self.space.planes]
        for kind_name, items in (("error", self.space.errors), ("warning", self.space.warnings)):
            for item in items:
                meta.notes.append(f"profiler {kind_name}: {item}")
        if self.unknown_metadata:
            meta.notes.append(f"{self.unknown_metadata} events name an event-metadata id the plane lacks; kept unnamed")
        return self._table(start_time)

    def _drop(self, reason: str, count: int) -> None:
        if count:
            self.meta.drop(reason, count)
            self.dropped_outside_table += count

    def _plane(self, plane: Any) -> None:
        name = str(plane.name)
        n_events = sum(len(line.events) for line in plane.lines)
        if cat.XPLANE_METADATA_PLANE.match(name):
            if name == "/host:metadata":
                self._scan_metadata_names(plane)
            self._drop(f"metadata plane '{name}'", n_events)
            return
        device_match = cat.XPLANE_DEVICE_PLANE.match(name)
        if device_match is None and not cat.XPLANE_HOST_PLANE.match(name):
            self._drop(f"unrecognised plane '{name}'", n_events)
            return
        stat_names = {int(k): str(v.name) for k, v in plane.stat_metadata.items()}
        wanted = {k: v for k, v in stat_names.items() if v in _WANTED_STATS}
        md_names: dict[int, str] = {}
        md_stats: dict[str, dict[int, Any]] = {}
        for mid, md in plane.event_metadata.items():
            md_names[int(mid)] = str(md.name)
            for stat in md.stats:
                stat_name = wanted.get(stat.metadata_id)
                if stat_name is not None:
                    md_stats.setdefault(stat_name, {})[int(mid)] = _stat_value(stat, stat_names)
        if device_match is not None:
            self._device_plane(plane, int(device_match.group(2)), device_match.group(1), md_names, md_stats,
                               wanted, stat_names)
        else:
            self._host_plane(plane, md_names, md_stats, wanted, stat_names)

    def _host_plane(self, plane: Any, md_names: dict[int, str], md_stats: dict[str, dict[int, Any]],
                    wanted: dict[int, str], stat_names: dict[int, str]) -> None:
        seen_labels: set[str] = set()
        prefix = "host" if plane.name == "/host:CPU" else f"host {str(plane.name).removeprefix('/host:')}"
        for line in plane.lines:
            line_name = str(line.name) or str(line.display_name) or str(line.id)
            derived = cat.XPLANE_DERIVED_LINES.get(line_name)
            if derived is not None:
                self._drop(f"derived line '{line_name}' (duplicates {derived})", len(line.events))
                continue
            if cat.TF_LINE.match(line_name):
                self.tf_hint = True
            if cat.XPLANE_API_LINE.match(line_name):
                cls = _HOST_API
            elif cat.XPLANE_COMPILE_LINE.search(line_name):
                cls = _HOST_COMPILE
            elif cat.XPLANE_INPUT_LINE.match(line_name):
                cls = _HOST_INPUT
            else:
                cls = _HOST
            label = f"{prefix} {line_name}"
            if label in seen_labels:
                label = f"{label} #{line.id}"
            seen_labels.add(label)
            info = _Line(cls=cls, track=label, pid=int(plane.id), tid=int(line.id), device=-1, stream=-1)
            self._line(line, info, md_names, md_stats, wanted, stat_names)

    def _device_plane(self, plane: Any, index: int, device_type: str, md_names: dict[int, str],
                      md_stats: dict[str, dict[int, Any]], wanted: dict[int, str],
                      stat_names: dict[int, str]) -> None:
        plane_stats = self._plane_stats(plane, stat_names)
        self.device_stats[index] = plane_stats
        has_streams = any(cat.XPLANE_STREAM_LINE.match(str(line.name)) for line in plane.lines)
        label = "GPU" if device_type == "GPU" else device_type
        for line in plane.lines:
            line_name = str(line.name)
            stream_match = cat.XPLANE_STREAM_LINE.match(line_name)
            if stream_match is not None:
                stream = int(stream_match.group(1))
            elif not has_streams and line_name == "XLA Ops":
                stream = int(line.id)
            else:
                derived = cat.XPLANE_DERIVED_LINES.get(line_name, "device events")
                self._drop(f"derived line '{line_name}' (duplicates {derived})", len(line.events))
                continue
            info = _Line(cls=_DEVICE, track=f"{label} {index} stream {stream}", pid=int(plane.id), tid=stream,
                         device=index, stream=stream)
            if len(line.events) and index not in self.devices:
                self.devices[index] = Device(index=index, name=_device_name(plane_stats, device_type),
                                             vendor=_vendor(plane_stats, device_type))
            self._line(line, info, md_names, md_stats, wanted, stat_names)

    def _line(self, line: Any, info: _Line, md_names: dict[int, str], md_stats: dict[str, dict[int, Any]],
              wanted: dict[int, str], stat_names: dict[int, str]) -> None:
        events = line.events
        n = len(events)
        if not n:
            return
        cols = self.cols
        base = cols.count
        stats = cols.stats
        decoded = decode_line(line, self.line_class)
        if decoded is not None:
            mids, offs, durs = decoded.metadata_id, decoded.offset_ps, decoded.duration_ps
            # Events of aggregated planes carry num_occurrences instead of offset_ps.
            cols.aggregated.extend((base + np.flatnonzero(decoded.aggregated)).tolist())
            records = np.flatnonzero(np.isin(decoded.stat_id, list(wanted)))
            values = decoded.stat_values(records, stat_names)
            for j, stat_id, value in zip(decoded.stat_event[records].tolist(), decoded.stat_id[records].tolist(),
                                         values):
                stats[wanted[stat_id]][base + j] = value
        else:
            mids, offs, durs = self._line_by_runtime(events, base, wanted, stat_names)
        # Event-metadata stats apply to every event of that metadata; event stats win.
        for stat_name, by_mid in md_stats.items():
            target = stats[stat_name]
            for j in np.flatnonzero(np.isin(mids, list(by_mid))).tolist():
                target.setdefault(base + j, by_mid[int(mids[j])])
        uniq, inverse = unique_inverse(mids)
        codes_u = np.empty(len(uniq), dtype=np.int64)  # each metadata id's name, as a code into name_values
        for k, mid in enumerate(uniq.tolist()):
            found = md_names.get(mid)
            if found is None:
                self.unknown_metadata += int((inverse == k).sum())
                found = ""
            code = self.name_codes.get(found)
            if code is None:
                code = self.name_codes[found] = len(self.name_values)
                self.name_values.append(found)
            codes_u[k] = code
        cols.offset_ps.append(offs)
        cols.duration_ps.append(durs)
        cols.names.append(codes_u[inverse])
        cols.line_ts.append(np.full(n, int(line.timestamp_ns), dtype=np.int64))
        cols.line_idx.append(np.full(n, len(self.lines), dtype=np.int64))
        cols.count += n
        self.lines.append(info)

    def _line_by_runtime(self, events: Any, base: int, wanted: dict[int, str],
                         stat_names: dict[int, str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The events of a line the wire decoding declined, read through the protobuf runtime."""
        cols = self.cols
        mid_list: list[int] = []
        off_list: list[int] = []
        dur_list: list[int] = []
        with_stats: list[int] = []
        for j, ev in enumerate(events):  # one pass; attribute reads are the cost here
            mid_list.append(ev.metadata_id)
            off_list.append(ev.offset_ps)
            dur_list.append(ev.duration_ps)
            if ev.stats:
                with_stats.append(j)
        for j in with_stats:
            for stat in events[j].stats:
                stat_name = wanted.get(stat.metadata_id)
                if stat_name is not None:
                    cols.stats[stat_name][base + j] = _stat_value(stat, stat_names)
        offs = np.array(off_list, dtype=np.int64)
        for j in np.flatnonzero(offs == 0).tolist():
            if events[j].WhichOneof("data") == "num_occurrences":
                cols.aggregated.append(base + j)
        return np.array(mid_list, dtype=np.int64), offs, np.array(dur_list, dtype=np.int64)

    def _plane_stats(self, plane: Any, stat_names: dict[int, str] | None = None) -> dict[str, Any]:
        if stat_names is None:
            stat_names = {int(k): str(v.name) for k, v in plane.stat_metadata.items()}
        out: dict[str, Any] = {}
        for stat in plane.stats:
            value = _stat_value(stat, stat_names)
            if isinstance(value, bytes):
                continue
            out[stat_names.get(stat.metadata_id, str(stat.metadata_id))] = value
        return out

    def _scan_metadata_names(self, plane: Any) -> None:
        for md in plane.event_metadata.values():
            if cat.JAX_MODULE.match(str(md.name)):
                self.jax_hint = True
                return

    # ---- table -----------------------------------------------------------------------------
    def _table(self, start_time: int | None) -> Timeline:
        meta = self.meta
        cols = self.cols
        n = cols.count
        if n:
            # Names stay codes (a categorical): every name rule below runs once per distinct name.
            names = categorical_from_codes(np.concatenate(cols.names), self.name_values)
            offs = np.concatenate(cols.offset_ps)
            durs = np.concatenate(cols.duration_ps)
            line_ts = np.concatenate(cols.line_ts)
            line_idx = np.concatenate(cols.line_idx)
        else:
            names = categorical_from_codes(np.empty(0, dtype=np.int64), [])
            offs = durs = line_ts = line_idx = np.empty(0, dtype=np.int64)
        stats = cols.stats

        line_cls = np.array([ln.cls for ln in self.lines], dtype=np.int64)[line_idx] if n else line_idx
        is_device = line_cls == _DEVICE

        # Offsets, durations and line times that would overflow int64 ns once added up are not
        # times: such events are dropped (counted), the arithmetic below never wraps.
        out_of_range = (offs < 0) | (offs > _MAX_PS) | (durs > _MAX_PS) | (np.abs(line_ts) > _MAX_LINE_NS)
        if out_of_range.any():
            offs, durs = np.where(out_of_range, 0, offs), np.where(out_of_range, 0, durs)
        # Start and end rounded separately (half up) so that nesting survives ps -> ns.
        ts = line_ts + (offs + 500) // 1000
        end = line_ts + (offs + durs + 500) // 1000
        dur = end - ts

        keep = ~out_of_range
        if out_of_range.any():
            meta.drop("offset, duration or line time out of range", int(out_of_range.sum()))
        if cols.aggregated:
            aggregated = np.zeros(n, dtype=bool)
            aggregated[np.array(cols.aggregated, dtype=np.int64)] = True
            aggregated &= keep  # each event counted under one reason
            keep &= ~aggregated
            meta.drop("aggregated event without timestamp (num_occurrences)", int(aggregated.sum()))
        negative = keep & (durs < 0)
        if negative.any():
            keep &= ~negative
            meta.drop("negative duration", int(negative.sum()))
        instant = keep & ~is_device & (durs == 0)
        if instant.any():
            memory = instant & _match_names(names, cat.XPLANE_MEMORY_RECORD.match)
            meta.drop("memory allocator record (no duration)", int(memory.sum()))
            meta.drop("instant event (no duration)", int((instant & ~memory).sum()))
            keep &= ~instant

        step_num = _int_stat(stats["step_num"], n)
        correlation = _int_stat(stats["correlation_id"], n)
        fw_op = _fw_op(stats, n)
        fn_call = _str_stat(stats["tf_function_call"], n)
        self._framework(names, stats)

        kinds = _base_kinds(names, line_cls, stats, n)
        copy_kind, nbytes = _copies(kinds, names, stats, correlation, is_device, n)

        # Keep, then sort by (ts, -dur) once; build_events' stable sort then keeps this order.
        rows = np.flatnonzero(keep)
        order = rows[np.lexsort((-dur[rows], ts[rows]))]
        ts, dur, end = ts[order], dur[order], end[order]
        names, kinds, line_idx = names[order], kinds[order], line_idx[order]
        step_num, correlation, fw_op = step_num[order], correlation[order], fw_op[order]
        fn_call = fn_call[order]
        copy_kind, nbytes, is_device = copy_kind[order], nbytes[order], is_device[order]
        has_stats = _has_any_stat(stats, n)[order]

        parent, depth, overlaps = nest_tracks(line_idx, ts, end, ~is_device)
        if overlaps:
            meta.notes.append(OVERLAP_NOTE.format(overlaps))
        kinds = _refine_by_nesting(kinds, names, parent, depth, has_stats)
        fw_op = _inherit(fw_op, parent, depth, lambda child, par: (child == "") & (par != ""))
        launcher = _launchers(fw_op, correlation, is_device)

        if len(ts):
            origin_raw = int(ts.min())
        else:
            origin_raw = 0
        relative = start_time is not None and (not len(line_ts) or int(np.abs(line_ts).max()) < _EPOCH_NS_MIN)
        meta.origin_ns = int(start_time) + origin_raw if relative and start_time is not None else origin_raw
        if start_time is not None and not relative:
            meta.notes.append("line timestamps are absolute; profile_start_time not applied")

        lines = self.lines
        track_u = np.array([ln.track for ln in lines], dtype=object)
        pid_u = np.array([ln.pid for ln in lines], dtype=np.int64)
        tid_u = np.array([ln.tid for ln in lines], dtype=np.int64)
        device_u = np.array([ln.device for ln in lines], dtype=np.int64)
        stream_u = np.array([ln.stream for ln in lines], dtype=np.int64)
        self._vendor_from_content(names, is_device)
        meta.devices = [self.devices[i] for i in sorted(self.devices)]
        if self.device_stats:
            # String keys: meta.extra is written to JSON as is.
            meta.extra["device_stats"] = {str(i): self.device_stats[i] for i in sorted(self.device_stats)}
        meta.extra["extra_columns"] = list(EXTRA_COLUMNS)
        return build(RawTrace(
            columns={
                "ts": ts - origin_raw,
                "dur": dur,
                "kind": kinds,
                "name": names,
                "track": track_u[line_idx],
                "pid": pid_u[line_idx],
                "tid": tid_u[line_idx],
                "device": device_u[line_idx],
                "stream": stream_u[line_idx],
                "correlation": correlation,
                "launcher": launcher,
                "bytes": nbytes,
                "copy_kind": copy_kind,
                # The nesting the kind and framework-op rules used is the timeline's.
                "parent": parent,
                "depth": depth,
            },
            meta=meta,
            extra={"step_num": step_num, "fw_op": categorical(fw_op), "fn_call": categorical(fn_call)},
            nested=True,
        ))

    def _vendor_from_content(self, names: pd.Categorical, is_device: np.ndarray) -> None:
        """Vendor of devices whose plane does not say: ROCm names (hip* API, ``.kd`` kernels) → amd,
        CUDA API names → nvidia."""
        unknown = [d for d in self.devices.values() if not d.vendor]
        if not unknown:
            return
        host_names = pd.unique(names[~is_device]).tolist()
        device_names = pd.unique(names[is_device]).tolist()
        if any(str(x).startswith("hip") for x in host_names) or any(str(x).endswith(".kd") for x in device_names):
            vendor = "amd"
        elif any(str(x).startswith(("cuda", "cu")) and kind_rules.API_NAME.match(str(x)) for x in host_names):
            vendor = "nvidia"
        else:
            return
        for dev in unknown:
            dev.vendor = vendor

    def _framework(self, names: pd.Categorical, stats: dict[str, dict[int, Any]]) -> None:
        uniq = pd.unique(names)
        jax = self.jax_hint or any(cat.JAX_MARKER.match(str(u)) for u in uniq)
        jax = jax or any(isinstance(v, str) and cat.JAX_MODULE.match(v) for v in stats["hlo_module"].values())
        tf = self.tf_hint or bool(stats["tf_function_call"]) or any(cat.TF_MARKER.match(str(u)) for u in uniq)
        self.meta.framework = "jax" if jax else ("tensorflow" if tf else "unknown")


# --------------------------------------------------------------------------------------------
# Helpers (pure functions over column arrays)
# --------------------------------------------------------------------------------------------
def _xline_class() -> Any:
    from traceview.readers.proto.xplane_descriptor import message_classes

    return message_classes()["XLine"]


def _stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if which is None:
        return None
    return getattr(stat, which)


def _match_names(names: pd.Categorical, predicate: Any) -> np.ndarray:
    """Apply a name predicate once per distinct name."""
    if not len(names):
        return np.zeros(0, dtype=bool)
    hit = np.array([bool(predicate(str(c))) for c in names.categories] + [False], dtype=bool)
    return hit[names.codes]


def _int_stat(values: dict[int, Any], n: int) -> np.ndarray:
    out = np.full(n, -1, dtype=np.int64)
    if not values:
        return out
    rows = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
    try:
        out[rows] = np.fromiter(values.values(), dtype=np.int64, count=len(values))
        return out
    except (TypeError, ValueError, OverflowError):
        pass  # mixed value types: decode one by one
    for row, value in values.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[row] = int(value)
        elif isinstance(value, str) and value.lstrip("-").isdigit():
            out[row] = int(value)
    return out


def _str_stat(values: dict[int, Any], n: int) -> np.ndarray:
    """A string stat per event ("" when absent or not a string)."""
    out = np.full(n, "", dtype=object)
    for row, value in values.items():
        if isinstance(value, str):
            out[row] = value
    return out


def _has_any_stat(stats: dict[str, dict[int, Any]], n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    for values in stats.values():
        if values:
            out[np.fromiter(values.keys(), dtype=np.int64, count=len(values))] = True
    return out


def _fw_op(stats: dict[str, dict[int, Any]], n: int) -> np.ndarray:
    """The framework op of each event from its stats (see the module docstring); "" when none."""
    out = np.full(n, "", dtype=object)
    filled = np.zeros(n, dtype=bool)
    with_hlo = np.zeros(n, dtype=bool)
    if stats["hlo_op"]:
        with_hlo[np.fromiter(stats["hlo_op"].keys(), dtype=np.int64, count=len(stats["hlo_op"]))] = True
    sources = (
        ("tf_op", lambda v: not v.endswith(":") and not v.startswith("XlaModule:")),
        ("annotation", None),
        ("eager_op", None),
        ("name", None),  # the JAX op path; only on events that also carry hlo_op
        ("hlo_op", None),
    )
    for stat, accept in sources:
        values = stats[stat]
        if not values:
            continue
        rows = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
        vals = np.empty(len(values), dtype=object)
        vals[:] = list(values.values())
        codes, uniq = pd.factorize(vals)
        good = np.array([isinstance(u, str) and u != "" and (accept is None or accept(u)) for u in uniq] + [False])
        ok = good[codes] & ~filled[rows]  # code -1 (missing) picks the trailing False
        if stat == "name":
            ok &= with_hlo[rows]
        out[rows[ok]] = vals[ok]
        filled[rows[ok]] = True
    return out


# Line classes (ints in the reader) → the class names the kind table uses.
_LINE_CLASS = np.array([kind_rules.HOST, kind_rules.HOST_API, kind_rules.HOST_COMPILE, kind_rules.HOST_INPUT,
                        kind_rules.DEVICE], dtype=object)
_KIND_STATS = tuple(sorted({rule.stat for rule in kind_rules.XPLANE_RULES if rule.stat}))


def _base_kinds(names: pd.Categorical, line_cls: np.ndarray, stats: dict[str, dict[int, Any]], n: int) -> np.ndarray:
    """Kind of each event from its line class, name and stats: the table ``kinds.XPLANE_RULES``."""
    classes = _LINE_CLASS[line_cls] if n else np.empty(0, dtype=object)
    default = np.array([kind_rules.XPLANE_DEFAULT_KIND[c].value for c in _LINE_CLASS], dtype=object)[line_cls] \
        if n else np.empty(0, dtype=object)
    has_stat = {}
    for stat in _KIND_STATS:
        mask = np.zeros(n, dtype=bool)
        rows = stats[stat]
        if rows:
            mask[np.fromiter(rows.keys(), dtype=np.int64, count=len(rows))] = True
        has_stat[stat] = mask
    return kind_rules.apply_kind_rules(kind_rules.XPLANE_RULES, classes, names, default, has_stat)



def _copies(
    kinds: np.ndarray,
    names: pd.Categorical,
    stats: dict[str, dict[int, Any]],
    correlation: np.ndarray,
    is_device: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """copy_kind of device copies/fills and bytes of every event with memcpy/memset details."""
    copy_kind = np.full(n, "", dtype=object)
    nbytes = np.full(n, -1, dtype=np.int64)
    details: dict[int, dict[str, str]] = {}
    for stat in ("memset_details", "memcpy_details"):
        for row, value in stats[stat].items():
            if isinstance(value, str):
                details[row] = _parse_details(value)
    for row, parsed in details.items():
        size = parsed.get("size", parsed.get("num_bytes", ""))
        if size.isdigit() and int(size) > 0:
            nbytes[row] = int(size)
    copies = np.flatnonzero(kinds == Kind.MEMCPY.value)
    if len(copies):
        # The launching API call (same correlation id) may name the direction (hipMemcpyHtoDAsync)
        # and carry the size when the device event does not.
        api_direction: dict[int, str] = {}
        api_bytes: dict[int, int] = {}
        for row in np.flatnonzero(~is_device & (correlation >= 0)).tolist():
            corr = int(correlation[row])
            m = cat.API_COPY_DIRECTION.search(str(names[row]))
            if m:
                api_direction.setdefault(corr, _API_DIRECTION[m.group(1)])
            if nbytes[row] > 0:
                api_bytes.setdefault(corr, int(nbytes[row]))
        for row in copies.tolist():
            corr = int(correlation[row])
            direction = _detail_direction(details.get(row))
            if direction == "other":
                direction = cat.XPLANE_COPY_NAME_DIRECTION.get(str(names[row]), "other")
            if direction == "other":
                direction = api_direction.get(corr, "other")
            copy_kind[row] = direction
            if nbytes[row] < 0 and corr in api_bytes:
                nbytes[row] = api_bytes[corr]
    copy_kind[kinds == Kind.MEMSET.value] = "memset"
    return copy_kind, nbytes


_API_DIRECTION = {"HtoD": "H2D", "DtoH": "D2H", "DtoD": "D2D", "HtoH": "H2H", "Peer": "P2P"}


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


def _refine_by_nesting(
    kinds: np.ndarray, names: pd.Categorical, parent: np.ndarray, depth: np.ndarray, has_stats: np.ndarray
) -> np.ndarray:
    """Nesting rules of the module docstring: thunks, HLO passes next to compile events, inheritance."""
    kinds = kinds.copy()
    child = np.flatnonzero(parent >= 0)
    if not len(child):
        return kinds
    par = parent[child]
    annotation = kinds[child] == Kind.ANNOTATION.value
    # Thunks directly inside an XLA module execution.
    exec_parent = _match_names(names[par], cat.XLA_MODULE_EXECUTION.search)
    thunk = annotation & exec_parent & _match_names(names[child], cat.XLA_THUNK_NAME.match)
    kinds[child[thunk]] = Kind.HOST_OP.value
    # HLO passes under a parent that also holds a compile event.
    compile_parents = np.unique(par[kinds[child] == Kind.COMPILE.value])
    if len(compile_parents):
        annotation = kinds[child] == Kind.ANNOTATION.value
        passes = annotation & ~has_stats[child] & np.isin(par, compile_parents)
        passes &= _match_names(names[child], cat.XPLANE_HLO_PASS.match)
        kinds[child[passes]] = Kind.COMPILE.value
    # Children of compile / graph-building / input ranges take the parent's kind.
    inheriting, inheritable = list(_INHERITING), list(_INHERITABLE)
    return _inherit(kinds, parent, depth, lambda c, p: np.isin(p, inheriting) & np.isin(c, inheritable))


def _inherit(values: np.ndarray, parent: np.ndarray, depth: np.ndarray, should: Any) -> np.ndarray:
    """Copy a parent's value onto children where ``should(child_values, parent_values)`` (a
    vectorized mask), level by level from the top so that values flow down whole subtrees."""
    values = values.copy()
    for d in range(1, int(depth.max()) + 1 if len(depth) else 0):
        level = np.flatnonzero((depth == d) & (parent >= 0))
        par = parent[level]
        mask = should(values[level], values[par])
        if mask.any():
            values[level[mask]] = values[par[mask]]
    return values


def _launchers(fw_op: np.ndarray, correlation: np.ndarray, is_device: np.ndarray) -> np.ndarray:
    """Device events: their framework op, else that of the host call with the same correlation id."""
    launcher = np.full(len(fw_op), "", dtype=object)
    dev = np.flatnonzero(is_device)
    if not len(dev):
        return launcher
    launcher[dev] = fw_op[dev]
    host = np.flatnonzero(~is_device & (correlation >= 0) & (fw_op != ""))
    if len(host):
        by_corr = pd.Series(fw_op[host], index=correlation[host])
        by_corr = by_corr[~by_corr.index.duplicated(keep="first")]
        missing = dev[(launcher[dev] == "") & (correlation[dev] >= 0)]
        found = by_corr.reindex(correlation[missing]).to_numpy()
        ok = ~pd.isna(found)
        launcher[missing[ok]] = found[ok]
    return launcher


def _device_name(stats: dict[str, Any], device_type: str) -> str:
    for key in ("device_name", "device_type_name"):
        if isinstance(stats.get(key), str) and stats[key]:
            return str(stats[key])
    vendor = str(stats.get("device_vendor", "")).strip()
    parts = [f"{vendor} {device_type}".strip()]
    if "compute_cap_major" in stats:
        parts.append(f"compute capability {stats['compute_cap_major']}.{stats.get('compute_cap_minor', 0)}")
    if "core_count" in stats:
        parts.append(f"{stats['core_count']} cores")
    return ", ".join(parts)


def _vendor(stats: dict[str, Any], device_type: str) -> str:
    vendor = str(stats.get("device_vendor", "")).lower()
    if "amd" in vendor or "advanced micro" in vendor:
        return "amd"
    if "nvidia" in vendor:
        return "nvidia"
    if device_type == "TPU":
        return "google"
    return ""
