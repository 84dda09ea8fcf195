"""The normalized timeline as Chrome Trace-Event JSON, for ui.perfetto.dev and chrome://tracing.

``traceview export A [B …] --perfetto out.json`` writes what traceview *read*, after
normalization, so the picture the user opens is exactly the one the report was computed from.

Layout of the document:

- one **process** per trace (``pid`` 1, 2, … in argument order), named
  ``"<trace file name> (<framework>)"``;
- its **threads**, in this order: ``steps`` (one slice per step window, with the step's buckets in
  its args), ``traceview: attribution`` (the step time cut into consecutive runs of one bucket,
  by the same rules as the report: see :mod:`traceview.analyzers.attribution`), then the host
  tracks sorted by (pid, tid), then the device streams sorted by (device, stream). Thread ids are
  renumbered (unique over the whole file); the original ids stay in the thread names;
- every kept event as one complete event (``ph: "X"``), ``cat`` = its kind, ``ts``/``dur`` in µs
  with the ns digits kept (``ns / 1000``), ``args`` = ``kind`` and, when known, ``step`` (the step
  number), ``correlation``, ``launcher``, ``bytes``, ``copy_kind``;
- one flow arrow (``ph: "s"`` → ``ph: "f"``, ``bp: "e"``, cat ``launch``) from each launch call
  to each device event it queued (same correlation id). Each arrow end is placed at an instant of
  its slice that no nested slice covers (not on its edges), so the viewers, which bind a flow
  event to the innermost slice open at its time, bind it to the right slice;
- events of one track that overlap without nesting (profiler clock jitter, async ranges) would be
  dropped by the viewers, so they go to an extra thread ``"<track> (overlap N)"`` instead.

Time origin: each trace keeps its own clock, shifted so that its **first step starts at the same
instant** in every process: ``ts = event ts − first step start + L``, where ``L`` is the longest
stretch recorded before a first step among the exported traces (so no timestamp is negative).
With one trace ``L`` is its own lead-in and the timestamps are the normalized ones
(``ts`` relative to the earliest kept event). ``otherData.traces[i].shift_us`` records the
shift applied to each trace.

The output is deterministic: the same traces give the same bytes (no generation time).
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import numpy as np
import orjson

from traceview.arrays import at_rows
from traceview.normalize import launch_rows
from traceview.redact import host_field, redact_path, redact_text, secrets_of
from traceview.results import BUCKETS
from traceview.schema import SCHEMA_VERSION
from traceview.table import Table

STEPS_TRACK = "steps"
ATTRIBUTION_TRACK = "traceview: attribution"
FLOW_NAME = "launch"
STEPS_CAT = "traceview.step"  # not a Kind value, so never confused with the step-marker events
ATTRIBUTION_CAT = "traceview.attribution"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def render(diagnoses: list[Any], redact: bool = False) -> bytes:
    """The Chrome Trace-Event JSON document for one or more diagnosed traces, as bytes."""
    return orjson.dumps(trace_document(diagnoses, redact=redact))


def write(diagnoses: list[Any], path: Path, redact: bool = False) -> int:
    """Write the document to ``path`` (gzip-compressed when it ends in ``.gz``); returns bytes written."""
    data = render(diagnoses, redact=redact)
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return len(data)


def trace_document(diagnoses: list[Any], redact: bool = False) -> dict[str, Any]:
    """The trace-event document as a dict: ``traceEvents`` plus ``otherData`` (what was exported)."""
    clean, clean_path, clean_host = _cleaners([d.timeline.meta for d in diagnoses], redact)
    lead = max((_lead_in(d) for d in diagnoses), default=0)
    events: list[dict[str, Any]] = []
    traces: list[dict[str, Any]] = []
    next_tid = len(diagnoses) + 1
    next_flow = 1
    for pid, diag in enumerate(diagnoses, start=1):
        shift = lead - _first_step_start(diag)
        exported = _Exporter(diag, pid, shift, next_tid, next_flow, clean, clean_path)
        events.extend(exported.events)
        next_tid, next_flow = exported.next_tid, exported.next_flow
        meta = diag.timeline.meta
        traces.append(
            {
                "pid": pid,
                "source": clean_path(meta.source),
                "format": meta.format,
                "framework": meta.framework,
                "host_name": clean_host(meta.host_name),
                "devices": [{"index": d.index, "name": clean(d.name)} for d in meta.devices],
                "events_kept": int(len(diag.timeline.table)),
                "steps": int(len(diag.steps.table)),
                "step_rule": diag.steps.rule,
                "shift_us": shift / 1000,
                "first_step_ts_us": lead / 1000,
                "extra": {str(k): (clean(v) if isinstance(v, str) else v) for k, v in sorted(meta.extra.items())
                          if isinstance(v, (str, int, float, bool))},
            }
        )
    return {
        "traceEvents": events,
        "otherData": {
            "generator": "traceview",
            "schema_version": SCHEMA_VERSION,
            "time_origin": "per trace: ts = event ts - first step start + first_step_ts_us",
            "redacted": bool(redact),
            "traces": traces,
        },
    }


_Cleaner = Callable[[str], str]


def _cleaners(metas: list[Any], redact: bool) -> tuple[_Cleaner, _Cleaner, _Cleaner]:
    """Text and path cleaners: control characters out (old viewers reject escapes), secrets too when redacting."""
    secrets = secrets_of(*metas) if redact else {}

    def clean(text: str) -> str:
        return _CONTROL.sub(" ", redact_text(str(text), secrets) if redact else str(text))

    def clean_path(text: str) -> str:
        return _CONTROL.sub(" ", redact_path(str(text), secrets) if redact else str(text))

    def clean_host(text: str) -> str:
        return _CONTROL.sub(" ", host_field(str(text), secrets) if redact else str(text))

    return clean, clean_path, clean_host


def _first_step_start(diag: Any) -> int:
    table = diag.steps.table
    return int(table["start"].min()) if len(table) else 0


def _lead_in(diag: Any) -> int:
    """Time recorded before the first step (the earliest kept event is at 0 or later)."""
    ts = diag.timeline.table["ts"]
    earliest = int(ts.min()) if len(ts) else 0
    return max(0, _first_step_start(diag) - earliest)


class _Exporter:
    """Trace events of one diagnosed trace (one process)."""

    def __init__(self, diag: Any, pid: int, shift: int, first_tid: int, first_flow: int,
                 clean: Callable[[str], str], clean_path: Callable[[str], str]) -> None:
        self.diag = diag
        self.pid = pid
        self.shift = shift
        self.clean = clean
        self.clean_path = clean_path
        self.next_tid = first_tid
        self.next_flow = first_flow
        self.events: list[dict[str, Any]] = []
        self._build()

    def _us(self, ns: Any) -> float:
        return (int(ns) + self.shift) / 1000

    def _new_thread(self, name: str) -> int:
        tid = self.next_tid
        self.next_tid += 1
        self.events.append({"ph": "M", "name": "thread_name", "pid": self.pid, "tid": tid,
                            "args": {"name": name}})
        self.events.append({"ph": "M", "name": "thread_sort_index", "pid": self.pid, "tid": tid,
                            "args": {"sort_index": tid}})
        return tid

    def _build(self) -> None:
        diag = self.diag
        meta = diag.timeline.meta
        name = f"{self.clean_path(Path(meta.source).name)} ({self.clean(meta.framework)})"
        self.events.append({"ph": "M", "name": "process_name", "pid": self.pid, "tid": 0,
                            "args": {"name": name}})
        self.events.append({"ph": "M", "name": "process_sort_index", "pid": self.pid, "tid": 0,
                            "args": {"sort_index": self.pid}})
        steps_tid = self._new_thread(STEPS_TRACK)
        attribution_tid = self._new_thread(ATTRIBUTION_TRACK)
        slices: list[dict[str, Any]] = []
        slices.extend(self._step_slices(steps_tid))
        slices.extend(self._attribution_slices(attribution_tid))
        event_slices, flows = self._timeline_slices()
        self.events.extend(slices)
        self.events.extend(event_slices)
        self.events.extend(flows)

    def _step_slices(self, tid: int) -> list[dict[str, Any]]:
        table = self.diag.steps.table
        per = self.diag.attribution.per_step
        out = []
        per_bucket = {b: per[b].tolist() for b in BUCKETS}
        for i, row in enumerate(table.tuples()):
            out.append({
                "ph": "X", "name": f"step {int(row.number)}" + (" (cold)" if bool(row.cold) else ""),
                "cat": STEPS_CAT, "pid": self.pid, "tid": tid, "ts": self._us(row.start),
                "dur": int(row.duration) / 1000,
                "args": {"step": int(row.number), "name": self.clean(str(row.name)), "cold": bool(row.cold),
                         "buckets_us": {b: int(per_bucket[b][i]) / 1000 for b in BUCKETS}},
            })
        return out

    def _attribution_slices(self, tid: int) -> list[dict[str, Any]]:
        diag = self.diag
        segments = diag.attribution.segments
        numbers = diag.steps.table["number"]
        out = []
        for step, start, end, bucket in zip(segments["step"].tolist(), segments["start"].tolist(),
                                            segments["end"].tolist(), segments["bucket"].values().tolist()):
            out.append({"ph": "X", "name": bucket, "cat": ATTRIBUTION_CAT, "pid": self.pid, "tid": tid,
                        "ts": self._us(start), "dur": (end - start) / 1000,
                        "args": {"bucket": bucket, "step": int(numbers[step])}})
        return out

    def _timeline_slices(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        ev = self.diag.timeline.table
        n = len(ev)
        if not n:
            return [], []
        ts = ev["ts"].astype(np.int64)
        dur = ev["dur"].astype(np.int64)
        track_codes = ev["track"].codes.astype(np.int64)
        lanes, parent = _lanes(track_codes, ts, ts + dur)
        tids = self._thread_ids(ev, track_codes, lanes)
        row_tid = tids[track_codes, lanes]

        clean = self.clean
        names = [clean(c) for c in ev["name"].categories.tolist()]
        name_of = [names[c] for c in ev["name"].codes.tolist()]
        launchers = [clean(c) for c in ev["launcher"].categories.tolist()]
        launcher_codes = ev["launcher"].codes.tolist()
        kinds = [str(k) for k in ev["kind"].values().tolist()]
        copy_kinds = [str(k) for k in ev["copy_kind"].values().tolist()]
        step_pos = ev["step"]
        numbers = self.diag.steps.table["number"]
        step_number = np.where(step_pos >= 0, at_rows(numbers, step_pos) if len(numbers) else -1, -1).tolist()
        correlation = ev["correlation"].tolist()
        nbytes = ev["bytes"].tolist()
        # Rows are in (ts, -dur) order, so each thread's slices come parent first.
        order = np.lexsort((np.arange(n), row_tid)).tolist()
        ts_list, dur_list, tid_list = ts.tolist(), dur.tolist(), row_tid.tolist()
        slices: list[dict[str, Any]] = []
        for i in order:
            args: dict[str, Any] = {"kind": kinds[i]}
            if step_number[i] >= 0:
                args["step"] = int(step_number[i])
            if correlation[i] >= 0:
                args["correlation"] = correlation[i]
            code = launcher_codes[i]
            if code >= 0 and launchers[code]:
                args["launcher"] = launchers[code]
            if nbytes[i] >= 0:
                args["bytes"] = nbytes[i]
            if copy_kinds[i] and copy_kinds[i] != "nan":
                args["copy_kind"] = copy_kinds[i]
            slices.append({"ph": "X", "name": name_of[i], "cat": kinds[i], "pid": self.pid, "tid": tid_list[i],
                           "ts": self._us(ts_list[i]), "dur": dur_list[i] / 1000, "args": args})
        return slices, self._flows(ev, ts, dur, row_tid, parent)

    def _thread_ids(self, ev: Table, track_codes: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """A thread per (track, lane), numbered host tracks first, then device streams; lanes after their track."""
        labels = list(ev["track"].categories)
        n_lanes = int(lanes.max()) + 1 if len(lanes) else 1
        tids = np.zeros((len(labels), n_lanes), dtype=np.int64)
        codes, first = np.unique(track_codes, return_index=True)
        device = ev["device"]
        key_a = np.where(device >= 0, device, ev["pid"])
        key_b = np.where(device >= 0, ev["stream"], ev["tid"])
        lanes_per_track = np.zeros(len(labels), dtype=np.int64)
        np.maximum.at(lanes_per_track, track_codes, lanes + 1)
        order = sorted(
            zip(codes.tolist(), first.tolist()),
            key=lambda cf: (int(device[cf[1]] >= 0), int(key_a[cf[1]]), int(key_b[cf[1]]), str(labels[cf[0]])),
        )
        for code, _ in order:
            label = self.clean(str(labels[code]))
            for lane in range(int(lanes_per_track[code])):
                tids[code, lane] = self._new_thread(label if lane == 0 else f"{label} (overlap {lane})")
        return tids

    def _flows(self, ev: Table, ts: np.ndarray, dur: np.ndarray, row_tid: np.ndarray,
               parent: np.ndarray) -> list[dict[str, Any]]:
        """Arrows launch call → device event, one per device event with a resolved launch."""
        launch = launch_rows(ev)
        device_rows = np.flatnonzero(launch >= 0)
        if not len(device_rows):
            return []
        host_rows = launch[device_rows]
        end = ts + dur
        # Each end of an arrow sits at a point of its slice that no child slice covers, so a viewer
        # binding it to the innermost open slice finds that slice; "s" is placed no later than the
        # device event starts, so it precedes "f" in time.
        children: dict[int, list[int]] = defaultdict(list)
        wanted = set(host_rows.tolist()) | set(device_rows.tolist())
        for row, up in enumerate(parent.tolist()):
            if up in wanted:
                children[up].append(row)
        out: list[dict[str, Any]] = []
        for host, device, s_tid, f_tid in zip(host_rows.tolist(), device_rows.tolist(), row_tid[host_rows].tolist(),
                                              row_tid[device_rows].tolist()):
            s_ts = _free_point(ts, end, host, children.get(host, ()), limit=int(ts[device]) + 1)
            f_ts = _free_point(ts, end, device, children.get(device, ()), floor=s_ts)
            flow_id = self.next_flow
            self.next_flow += 1
            out.append({"ph": "s", "name": FLOW_NAME, "cat": FLOW_NAME, "id": flow_id, "pid": self.pid,
                        "tid": s_tid, "ts": self._us(s_ts), "bp": "e"})
            out.append({"ph": "f", "name": FLOW_NAME, "cat": FLOW_NAME, "id": flow_id, "pid": self.pid,
                        "tid": f_tid, "ts": self._us(f_ts), "bp": "e"})
        return out


def _free_point(ts: np.ndarray, end: np.ndarray, row: int, children: Any, limit: int | None = None,
                floor: int | None = None) -> int:
    """A time inside ``row``'s slice covered by none of its children: the middle of the first gap.

    ``limit`` (exclusive) and ``floor`` narrow the search when possible; the slice start is the
    fallback when every instant is covered.
    """
    lo, hi = int(ts[row]), int(end[row])
    if floor is not None and lo < floor < hi:
        lo = floor
    if limit is not None and lo < limit < hi:
        hi = limit
    cursor = lo
    for child in sorted(children, key=lambda c: (int(ts[c]), -int(end[c]))):
        c_start, c_end = int(ts[child]), int(end[child])
        if c_start > cursor:
            gap_end = min(c_start, hi)
            if gap_end > cursor:
                return cursor + (gap_end - cursor) // 2
        cursor = max(cursor, c_end)
        if cursor >= hi:
            break
    if cursor < hi:
        return cursor + (hi - cursor) // 2
    return int(ts[row])


def _lanes(track_codes: np.ndarray, ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row (in (ts, -dur) order), the first lane of its track where it nests properly,
    and the row that encloses it there (-1 when none).

    Lane 0 holds every event that nests in the track's stack of open events; an event that
    overlaps an open one without fitting inside it moves to the next lane where it does.
    """
    lane = np.zeros(len(ts), dtype=np.int64)
    parent = np.full(len(ts), -1, dtype=np.int64)
    stacks: dict[int, list[list[tuple[int, int]]]] = {}
    for i, (code, start, stop) in enumerate(zip(track_codes.tolist(), ts.tolist(), end.tolist())):
        track_lanes = stacks.get(code)
        if track_lanes is None:
            track_lanes = stacks[code] = []
        for k, stack in enumerate(track_lanes):
            while stack and stack[-1][0] <= start:
                stack.pop()
            if not stack or stack[-1][0] >= stop:
                parent[i] = stack[-1][1] if stack else -1
                stack.append((stop, i))
                lane[i] = k
                break
        else:
            track_lanes.append([(stop, i)])
            lane[i] = len(track_lanes) - 1
    return lane, parent
