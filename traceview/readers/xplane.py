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
  ``runtime``. Lines whose thread only compiles (``tf_xla-cpu-codegen/<id>``,
  ``tf_pjrt_compile_thread_pool/<id>``): ``compile``;
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
  Zero-duration host events (``ThreadpoolListener::*`` flow markers) are dropped; the allocator
  samples among them (``MemoryAllocation`` / ``MemoryDeallocation``) become the timeline's memory
  table (:mod:`traceview.readers.xplane_memory`), counted as dropped from the event table under
  ``memory sample (in the memory table)``.

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
call event, ``traced-nonXla`` / ``notTraced-xla`` …; "" on every other event) and ``hlo_op``
(category: the ``hlo_op`` stat, the XLA instruction a thunk runs; "" elsewhere). ``launcher`` of a
device event is its ``fw_op`` (or that of the host call with the same correlation id): XPlane
launch calls sit on ``Host Threads`` lines, apart from the framework ops, so nesting cannot name
the op there.

How the bytes become columns: :mod:`~traceview.readers.xplane_space` parses the XSpace's skeleton
and leaves each line's events as a byte range of the file; :mod:`~traceview.readers.xplane_events`
decodes them into start / end / status columns and stat records; :mod:`~traceview.readers.xplane_stats`
holds the stats kept as (rows, values) columns; :mod:`~traceview.readers.xplane_classify` holds the
rules above as array operations. This module walks the planes and builds the table.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview import kinds as kind_rules
from traceview.arrays import (Nesting, distinct_values, factorize, joined, order_by_start_then_longest, per_group,
                              reordered, unique_inverse)
from traceview.builder import RawTrace, build
from traceview.errors import FormatError
from traceview.normalize import nest_tracks, record_overlaps
from traceview.readers import _prefetch, xplane_memory
from traceview.readers._io import read_bytes
from traceview.readers.xplane_classify import (
    LINE_DEVICE, LINE_HOST, LINE_HOST_API, LINE_HOST_COMPILE, LINE_HOST_INPUT, StringCodes, base_kinds,
    copies_and_bytes, fw_op_codes, has_any_stat, int_stat, launchers_from_fw_op, match_names,
    refine_by_nesting, str_stat_codes)
from traceview.readers.xplane_events import INSTANT, NEGATIVE, OUT_OF_RANGE, LineEvents, event_times
# (sniff: this reader's format test, as readers/__init__.py asks every reader module for one)
from traceview.readers.xplane_space import LineSource, PlaneSource, SpaceSource, sniff, space_of_file  # noqa: F401
from traceview.readers.xplane_stats import StatColumn, StatGatherer, column_from_dict, last_per_row
from traceview.schema import MEMORY_SAMPLE_REASON, Device, Timeline, TraceMeta, categorical_from_codes
from traceview.table import Labels

FORMAT_NAME = "xplane"
# The plane TensorFlow and JAX write the session's own stats in (profile_start_time, the options).
TASK_ENVIRONMENT = "Task Environment"
EXTRA_COLUMNS = ("step_num", "fw_op", "fn_call", "hlo_op")

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
) | xplane_memory.MEMORY_STATS
_MAX_DEVICE_INDEX = 2**31 - 1  # the schema's device column is int32
_DENSE_METADATA_IDS = 2**22  # metadata ids below this are looked up through a table indexed by id
_MAX_STREAM_ID = 2**63 - 1
_EPOCH_NS_MIN = 10**17  # line timestamps above this are absolute epoch ns, not session-relative


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def read(path: Path) -> Timeline:
    """Read one ``.xplane.pb`` file into the normalized timeline (plus ``step_num``, ``fw_op``)."""
    path = Path(path)
    ahead = _prefetch.take(path)  # (the command line's read-ahead, when it read this very file)
    source = ahead.space if ahead is not None else None
    if source is None:
        source = space_of_file(path, read_bytes(path))
    if not source.planes:
        raise FormatError(f"{path}: XSpace holds no planes; re-capture the profile")
    builder = _Builder(path, source)
    del source
    return builder.build()


@dataclass
class _Columns:
    """Per-event arrays gathered line by line, concatenated once at the end."""

    ts: list[np.ndarray] = field(default_factory=list)  # ns, on the line's clock
    end: list[np.ndarray] = field(default_factory=list)
    status: list[np.ndarray] = field(default_factory=list)  # int8: xplane_events.TIMED … INSTANT
    names: list[np.ndarray] = field(default_factory=list)
    line_counts: list[int] = field(default_factory=list)  # events of each kept line
    aggregated: list[int] = field(default_factory=list)  # global rows without a timestamp
    stats: StatGatherer = field(default_factory=lambda: StatGatherer(_WANTED_STATS))
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
    timestamp_ns: int = 0


class _Builder:
    def __init__(self, path: Path, source: SpaceSource) -> None:
        self.path = path
        self.source: SpaceSource | None = source  # (None once build() has walked its lines)
        self.space = source.space
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
        # Held here only while the lines are walked: once they are columns, the file's bytes (105 MB
        # of a 105 MB trace) go before the table is built, whose arrays then reuse that memory.
        source, self.source = self.source, None
        if source is None:
            raise ValueError("an XPlane builder builds once")
        meta = self.meta
        meta.host_name = str(self.space.hostnames[0]) if len(self.space.hostnames) else ""
        start_time: int | None = None
        for plane_source in source.planes:
            plane = plane_source.plane
            if plane.name == TASK_ENVIRONMENT:
                env = plane_stats(plane)
                if isinstance(env.get("profile_start_time"), int):
                    start_time = int(env["profile_start_time"])
                    meta.extra["profile_start_time_ns"] = start_time
                if isinstance(env.get("profile_stop_time"), int):
                    meta.extra["profile_stop_time_ns"] = int(env["profile_stop_time"])
            self._plane(plane_source)
        meta.input_events = self.cols.count + self.dropped_outside_table
        meta.extra["hostnames"] = [str(h) for h in self.space.hostnames]
        meta.extra["planes"] = [str(p.plane.name) for p in source.planes]
        for kind_name, items in (("error", self.space.errors), ("warning", self.space.warnings)):
            for item in items:
                meta.notes.append(f"profiler {kind_name}: {item}")
        if self.unknown_metadata:
            meta.notes.append(f"{self.unknown_metadata} events name an event-metadata id the plane lacks; kept unnamed")
        del source
        return self._table(start_time)

    def _drop(self, reason: str, count: int) -> None:
        if count:
            self.meta.drop(reason, count)
            self.dropped_outside_table += count

    def _plane(self, source: PlaneSource) -> None:
        plane = source.plane
        name = str(plane.name)
        n_events = sum(line.count for line in source.lines)
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
        by_metadata: dict[str, dict[int, Any]] = {}
        for mid, md in plane.event_metadata.items():
            md_names[int(mid)] = str(md.name)
            for stat in md.stats:
                stat_name = wanted.get(stat.metadata_id)
                if stat_name is not None:
                    by_metadata.setdefault(stat_name, {})[int(mid)] = _stat_value(stat, stat_names)
        md_stats = {stat_name: column_from_dict(values) for stat_name, values in by_metadata.items()}
        if device_match is not None:
            index = int(device_match.group(2))
            if index > _MAX_DEVICE_INDEX:  # '/device:GPU:<20 digits>' is not a device a machine has
                self._drop(f"device plane with an index out of range ('{name[:60]}')", n_events)
                return
            self._device_plane(source, index, device_match.group(1), md_names, md_stats, wanted, stat_names)
        else:
            self._host_plane(source, md_names, md_stats, wanted, stat_names)

    def _host_plane(self, source: PlaneSource, md_names: dict[int, str], md_stats: dict[str, StatColumn],
                    wanted: dict[int, str], stat_names: dict[int, str]) -> None:
        plane = source.plane
        seen_labels: set[str] = set()
        prefix = "host" if plane.name == "/host:CPU" else f"host {str(plane.name).removeprefix('/host:')}"
        for line_source in source.lines:
            line = line_source.header
            line_name = str(line.name) or str(line.display_name) or str(line.id)
            derived = cat.XPLANE_DERIVED_LINES.get(line_name)
            if derived is not None:
                self._drop(f"derived line '{line_name}' (duplicates {derived})", line_source.count)
                continue
            if cat.TF_LINE.match(line_name):
                self.tf_hint = True
            if cat.XPLANE_API_LINE.match(line_name):
                cls = LINE_HOST_API
            elif cat.XPLANE_COMPILE_LINE.search(line_name):
                cls = LINE_HOST_COMPILE
            elif cat.XPLANE_INPUT_LINE.match(line_name):
                cls = LINE_HOST_INPUT
            else:
                cls = LINE_HOST
            label = f"{prefix} {line_name}"
            if label in seen_labels:
                label = f"{label} #{line.id}"
            seen_labels.add(label)
            info = _Line(cls=cls, track=label, pid=int(plane.id), tid=int(line.id), device=-1, stream=-1)
            self._line(line_source, info, md_names, md_stats, wanted, stat_names)

    def _device_plane(self, source: PlaneSource, index: int, device_type: str, md_names: dict[int, str],
                      md_stats: dict[str, StatColumn], wanted: dict[int, str],
                      stat_names: dict[int, str]) -> None:
        plane = source.plane
        device_stats = plane_stats(plane, stat_names)
        self.device_stats[index] = device_stats
        has_streams = any(cat.XPLANE_STREAM_LINE.match(str(line.header.name)) for line in source.lines)
        label = "GPU" if device_type == "GPU" else device_type
        for line_source in source.lines:
            line = line_source.header
            line_name = str(line.name)
            stream_match = cat.XPLANE_STREAM_LINE.match(line_name)
            if stream_match is not None:
                stream = int(stream_match.group(1))
                if stream > _MAX_STREAM_ID:
                    self._drop(f"stream line with an id out of range ('{line_name[:60]}')", line_source.count)
                    continue
            elif not has_streams and line_name == "XLA Ops":
                stream = int(line.id)
            else:
                derived = cat.XPLANE_DERIVED_LINES.get(line_name, "device events")
                self._drop(f"derived line '{line_name}' (duplicates {derived})", line_source.count)
                continue
            info = _Line(cls=LINE_DEVICE, track=f"{label} {index} stream {stream}", pid=int(plane.id), tid=stream,
                         device=index, stream=stream)
            if line_source.count and index not in self.devices:
                self.devices[index] = Device(index=index, name=_device_name(device_stats, device_type),
                                             vendor=_vendor(device_stats, device_type))
            self._line(line_source, info, md_names, md_stats, wanted, stat_names)

    def _line(self, source: LineSource, info: _Line, md_names: dict[int, str], md_stats: dict[str, StatColumn],
              wanted: dict[int, str], stat_names: dict[int, str]) -> None:
        n = source.count
        if not n:
            return
        line = source.header
        cols = self.cols
        base = cols.count
        decoded = source.decode(self.line_class)
        event_stats: dict[str, StatColumn] = {}
        if decoded is not None:
            try:
                event_stats = _event_stats(decoded, wanted, stat_names)
            except UnicodeDecodeError:
                decoded = None  # a str stat that is not UTF-8: the runtime reading names the problem
        if decoded is not None:
            mids, ts, end, status = decoded.metadata_id, decoded.ts, decoded.end, decoded.status
            # Events of aggregated planes carry num_occurrences instead of offset_ps.
            cols.aggregated.extend((base + np.flatnonzero(decoded.aggregated)).tolist())
        else:
            events = source.runtime_events(self.path, self.line_class)
            mids, offs, durs, event_stats = self._line_by_runtime(events, base, wanted, stat_names)
            ts, end, status = event_times(int(line.timestamp_ns), offs, durs)
        # Event-metadata stats apply to every event of that metadata; event stats win.
        cols.stats.add_line(base, mids, event_stats, md_stats)
        cols.names.append(self._name_codes(mids, md_names))
        cols.ts.append(ts)
        cols.end.append(end)
        cols.status.append(status)
        cols.line_counts.append(n)
        info.timestamp_ns = int(line.timestamp_ns)
        cols.count += n
        self.lines.append(info)

    def _name_codes(self, mids: np.ndarray, md_names: dict[int, str]) -> np.ndarray:
        """Each event's name as a code into ``name_values``, looked up once per distinct metadata id.

        Metadata ids are small integers numbered from 1 as the profiler registers them, so the
        distinct ids come from counting (no sort); ids beyond any plane's metadata table are sorted."""
        if len(mids) and mids.min() >= 0 and mids.max() < _DENSE_METADATA_IDS:
            counts = np.bincount(mids)
            uniq = np.flatnonzero(counts)
            table = np.zeros(len(counts), dtype=np.int64)
            table[uniq] = self._codes_of_ids(uniq, counts[uniq], md_names)
            return table[mids]
        uniq, inverse = unique_inverse(mids)
        return self._codes_of_ids(uniq, np.bincount(inverse, minlength=len(uniq)), md_names)[inverse]

    def _codes_of_ids(self, ids: np.ndarray, counts: np.ndarray, md_names: dict[int, str]) -> np.ndarray:
        """The name code of each distinct metadata id (``counts``: its events, for the unknown ones)."""
        codes = np.empty(len(ids), dtype=np.int64)
        for k, mid in enumerate(ids.tolist()):
            found = md_names.get(mid)
            if found is None:
                self.unknown_metadata += int(counts[k])
                found = ""
            code = self.name_codes.get(found)
            if code is None:
                code = self.name_codes[found] = len(self.name_values)
                self.name_values.append(found)
            codes[k] = code
        return codes

    def _line_by_runtime(self, events: Any, base: int, wanted: dict[int, str], stat_names: dict[int, str]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, StatColumn]]:
        """The events of a line the wire decoding declined, read through the protobuf runtime."""
        cols = self.cols
        by_name: dict[str, dict[int, Any]] = {}
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
                    by_name.setdefault(stat_name, {})[j] = _stat_value(stat, stat_names)
        offs = np.array(off_list, dtype=np.int64)
        for j in np.flatnonzero(offs == 0).tolist():
            if events[j].WhichOneof("data") == "num_occurrences":
                cols.aggregated.append(base + j)
        stats = {stat_name: column_from_dict(values) for stat_name, values in by_name.items()}
        return np.array(mid_list, dtype=np.int64), offs, np.array(dur_list, dtype=np.int64), stats

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
            names = categorical_from_codes(joined(cols.names, np.int64), self.name_values)
            cols.names.clear()  # the per-row codes are not needed once the names are a categorical
            ts, end, status = joined(cols.ts, np.int64), joined(cols.end, np.int64), joined(cols.status, np.int8)
        else:
            names = categorical_from_codes(np.empty(0, dtype=np.int64), [])
            ts = end = np.empty(0, dtype=np.int64)
            status = np.empty(0, dtype=np.int8)
        line_idx = np.repeat(np.arange(len(self.lines), dtype=np.int64), cols.line_counts)
        stats = cols.stats.columns()

        line_cls = np.array([ln.cls for ln in self.lines], dtype=np.int8)[line_idx]
        is_device = line_cls == LINE_DEVICE
        dur = end - ts

        out_of_range = status == OUT_OF_RANGE
        keep = ~out_of_range
        if out_of_range.any():
            meta.drop("offset, duration or line time out of range", int(out_of_range.sum()))
        if cols.aggregated:
            aggregated = np.zeros(n, dtype=bool)
            aggregated[np.array(cols.aggregated, dtype=np.int64)] = True
            aggregated &= keep  # each event counted under one reason
            keep &= ~aggregated
            meta.drop("aggregated event without timestamp (num_occurrences)", int(aggregated.sum()))
        negative = keep & (status == NEGATIVE)
        if negative.any():
            keep &= ~negative
            meta.drop("negative duration", int(negative.sum()))
        instant = keep & ~is_device & (status == INSTANT)
        del status
        memory = instant & match_names(names, cat.XPLANE_MEMORY_RECORD.match)
        memory_samples = xplane_memory.samples(names, stats, np.flatnonzero(memory))
        meta.drop(MEMORY_SAMPLE_REASON, len(memory_samples.rows))
        meta.drop(xplane_memory.NO_SIZE_REASON, memory_samples.unsized)
        meta.drop("instant event (no duration)", int((instant & ~memory).sum()))
        keep &= ~instant
        memory_ts = ts[memory_samples.rows]
        memory_line = line_idx[memory_samples.rows]

        # Keep, then sort by (ts, -dur) once; build_events then finds the rows in order. A line's
        # events are in time order, so one line's rows, all kept, need no permutation at all.
        rows = None if keep.all() else np.flatnonzero(keep)
        within = order_by_start_then_longest(ts if rows is None else ts[rows], dur if rows is None else dur[rows])
        order = rows if within is None else (within if rows is None else rows[within])
        sorted_line, sorted_device = (line_idx, is_device) if order is None else (line_idx[order], is_device[order])
        if order is not None:
            ts, dur, end = ts[order], dur[order], end[order]
        # The rows are nested on a second thread (a compiled walk that lets go of the interpreter
        # lock) while this one classifies them, in the order of the stats that name them.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="traceview-nest") as helper:
            loose = match_names(names, cat.NESTING_LOOSE.match)
            nested = helper.submit(nest_tracks, sorted_line, ts, end, ~sorted_device,
                                   loose if order is None else loose[order])
            step_num = int_stat(stats["step_num"], n)
            correlation = int_stat(stats["correlation_id"], n)
            strings = StringCodes()  # fw_op, fn_call and launcher as codes into one table of strings
            fw_op = fw_op_codes(stats, n, strings)
            fn_call = str_stat_codes(stats["tf_function_call"], n, strings)
            hlo_op = str_stat_codes(stats["hlo_op"], n, strings)
            self._framework(names, stats)

            kinds = base_kinds(names, line_cls, stats, n)
            copy_kind, nbytes = copies_and_bytes(kinds, names, stats, correlation, is_device, n)
            has_stats = has_any_stat(stats, n)
            line_idx, is_device = sorted_line, sorted_device
            del sorted_line, sorted_device
            if order is not None:
                names, kinds = names.take(order), kinds.take(order)
                step_num, correlation, fw_op = reordered(step_num, order), reordered(correlation, order), fw_op[order]
                fn_call, hlo_op = reordered(fn_call, order), reordered(hlo_op, order)
                copy_kind, nbytes = copy_kind.take(order), reordered(nbytes, order)
                has_stats = has_stats[order]
            parent, depth, overlaps = nested.result()
        record_overlaps(meta, overlaps)
        nesting = Nesting(parent, depth)
        kinds = refine_by_nesting(kinds, names, nesting, has_stats)
        # An event without a framework op of its own (code 0) takes its parent's.
        has_op = np.arange(len(strings.values)) != 0
        fw_op = nesting.copy_down(fw_op, takes=~has_op, gives=has_op)
        del nesting
        launcher = launchers_from_fw_op(fw_op, correlation, is_device)

        if len(ts):
            origin_raw = int(ts.min())
        else:
            origin_raw = 0
        line_ts = [abs(ln.timestamp_ns) for ln in self.lines]
        relative = start_time is not None and (not line_ts or max(line_ts) < _EPOCH_NS_MIN)
        meta.origin_ns = int(start_time) + origin_raw if relative and start_time is not None else origin_raw
        if start_time is not None and not relative:
            meta.notes.append("line timestamps are absolute; profile_start_time not applied")

        lines = self.lines
        track_u = np.array([ln.track for ln in lines], dtype=object)
        pid_u = np.array([ln.pid for ln in lines], dtype=np.int64)
        tid_u = np.array([ln.tid for ln in lines], dtype=np.int64)
        device_u = np.array([ln.device for ln in lines], dtype=np.int64)
        stream_u = np.array([ln.stream for ln in lines], dtype=np.int64)
        memory_table = xplane_memory.memory_table(memory_samples, memory_ts - origin_raw, pid_u[memory_line],
                                                  tid_u[memory_line], track_u[memory_line])
        self._vendor_from_content(names, is_device)
        meta.devices = [self.devices[i] for i in sorted(self.devices)]
        if self.device_stats:
            # String keys: meta.extra is written to JSON as is.
            meta.extra["device_stats"] = {str(i): self.device_stats[i] for i in sorted(self.device_stats)}
        meta.extra["extra_columns"] = list(EXTRA_COLUMNS)

        ts -= origin_raw  # in place: the reader's own array, not needed on the old clock any more

        def per_row(values: np.ndarray) -> np.ndarray:
            """A per-line value on each row: rows still in line order take it line by line (one
            value held once where every line has the same)."""
            return per_group(values, cols.line_counts) if order is None else values[line_idx]

        return build(RawTrace(
            columns={
                "ts": ts,
                "dur": dur,
                "kind": kinds,
                "name": names,
                "track": categorical_from_codes(line_idx, track_u),
                "pid": per_row(pid_u),
                "tid": per_row(tid_u),
                "device": per_row(device_u),
                "stream": per_row(stream_u),
                "correlation": correlation,
                "launcher": strings.categorical(launcher),
                "bytes": nbytes,
                "copy_kind": copy_kind,
                # The nesting the kind and framework-op rules used is the timeline's.
                "parent": parent,
                "depth": depth,
            },
            meta=meta,
            extra={"step_num": step_num, "fw_op": strings.categorical(fw_op), "fn_call": strings.categorical(fn_call),
                   "hlo_op": strings.categorical(hlo_op)},
            nested=True,
            memory=memory_table,
        ))

    def _vendor_from_content(self, names: Labels, is_device: np.ndarray) -> None:
        """Vendor of devices whose plane does not say: ROCm names (hip* API, ``.kd`` kernels) → amd,
        CUDA API names → nvidia."""
        unknown = [d for d in self.devices.values() if not d.vendor]
        if not unknown:
            return
        host_names = distinct_values(names.take(~is_device))
        device_names = distinct_values(names.take(is_device))
        if any(str(x).startswith("hip") for x in host_names) or any(str(x).endswith(".kd") for x in device_names):
            vendor = "amd"
        elif any(str(x).startswith(("cuda", "cu")) and kind_rules.API_NAME.match(str(x)) for x in host_names):
            vendor = "nvidia"
        else:
            return
        for dev in unknown:
            dev.vendor = vendor

    def _framework(self, names: Labels, stats: dict[str, StatColumn]) -> None:
        uniq = distinct_values(names)
        jax = self.jax_hint or any(cat.JAX_MARKER.match(str(u)) for u in uniq)
        modules = factorize(stats["hlo_module"].values)[1].tolist()  # few distinct modules, whatever the events
        jax = jax or any(isinstance(v, str) and cat.JAX_MODULE.match(v) for v in modules)
        tf = self.tf_hint or bool(len(stats["tf_function_call"])) or any(cat.TF_MARKER.match(str(u)) for u in uniq)
        self.meta.framework = "jax" if jax else ("tensorflow" if tf else "unknown")


# --------------------------------------------------------------------------------------------
# Protobuf helpers
# --------------------------------------------------------------------------------------------
def _xline_class() -> Any:
    from traceview.readers.proto.xplane_descriptor import message_classes

    return message_classes()["XLine"]


def _event_stats(decoded: LineEvents, wanted: dict[int, str], stat_names: dict[int, str]) -> dict[str, StatColumn]:
    """The wanted stats of a decoded line, by event position: one column per stat name (two stat
    ids may share a name; the event's later record wins, as in the runtime's reading)."""
    ids = np.fromiter(wanted, dtype=np.int64, count=len(wanted))
    records = np.flatnonzero(np.isin(decoded.stat_id, ids))
    if not len(records):
        return {}
    values = decoded.stat_values(records, stat_names)
    record_ids = decoded.stat_id[records]
    positions = decoded.stat_event[records]
    out: dict[str, StatColumn] = {}
    for name in sorted(set(wanted.values())):
        sel = np.flatnonzero(np.isin(record_ids, [i for i, n in wanted.items() if n == name]))
        if len(sel):
            out[name] = last_per_row(positions[sel], values[sel])
    return out


def plane_stats(plane: Any, stat_names: dict[int, str] | None = None) -> dict[str, Any]:  # noqa: ANN401 - an XPlane
    """The plane's own stats by name (``stat_names``: its stat metadata's names, read from it when
    None); byte values left out."""
    if stat_names is None:
        stat_names = {int(k): str(v.name) for k, v in plane.stat_metadata.items()}
    out: dict[str, Any] = {}
    for stat in plane.stats:
        value = _stat_value(stat, stat_names)
        if isinstance(value, bytes):
            continue
        out[stat_names.get(stat.metadata_id, str(stat.metadata_id))] = value
    return out


def _stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if which is None:
        return None
    return getattr(stat, which)


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
