"""Hostile inputs, generated: each case writes its input under a folder and says what the CLI must do.

One row of :data:`CASES` per case: a name, a generator ``build(folder) -> path to diagnose`` and the
expected outcome, either :data:`OK` (exit 0, the report's invariants hold) or
``refused("text")`` (exit 2, one line on stderr containing the text). ``tests/test_hostile_corpus.py``
runs every row through ``traceview diagnose``; ``python -m tests.hostile_corpus DIR`` writes the
inputs out to look at them.

Kineto cases change one part of a small, valid three-step trace (:func:`kineto_doc`); XPlane cases
build an ``XSpace`` with the reader's own generated message classes (:func:`xspace`) or mutate the
real TF eager sample.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
TF_EAGER_XPLANE = REPO / "sample_traces/mlp2/tf-eager/plugins/profile/2026_11_22_03_51_06/vm.xplane.pb"
TORCH_EAGER = REPO / "sample_traces/mlp2/torch-eager"

BIG_63 = 2**63
BIG_64 = 2**64
TWENTY_DIGITS = "9" * 20
YEARS_236_US = 236 * 365 * 86400 * 10**6
LONGER_THAN_2_53_NS_US = 2**53 // 1000 + 10**6  # a step of 2⁵³ ns + 1 s, in µs

# Trace text that must never shape a report (rich markup, escape sequences, markdown, HTML).
MARKUP = ["[bold red]boom[/bold red]", "[/]", "[link=http://evil.example]click[/link]"]
ESCAPES = ["ansi\x1b[31mred\x1b[0m", "osc\x1b]8;;http://evil.example\x07link\x1b]8;;\x07", "bell\x07\x08\r",
           "rtl\u202eesrever\u202c"]
MARKDOWN = ["[x](http://evil.example)", "![i](http://evil.example/i.png)", "| cell | `tick` *em* _u_"]
HTML = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "&amp; &lt;"]
NEWLINES = ["two\nlines", "crlf\r\nline", "tab\tand\vform\ffeed"]


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    message: str | None = None  # exit 2: a text the one-line message contains; exit 3: a trace left out


OK = Outcome(0)


def refused(text: str) -> Outcome:
    return Outcome(2, text)


def partial(text: str) -> Outcome:
    """Exit 3: the report of a folder's readable traces, the unreadable ones (``text`` among them)
    named in a warning line each and a last line."""
    return Outcome(3, text)


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Path]
    expect: Outcome
    options: tuple[str, ...] = ()  # global options before the command (``--max-bytes N``)
    hostile_text: tuple[str, ...] = ()  # strings that must not shape the md / terminal / HTML output
    warns: str | None = None  # exit 0 with one warning line on stderr that contains this
    xfail: str | None = None  # a known bug in a module this corpus does not fix (strict xfail)
    skip_as_root: bool = False  # the case needs file permissions that root ignores


# ---------------------------------------------------------------------------------------------
# Kineto documents


def kineto_doc(steps: int = 3) -> dict[str, Any]:
    """A small valid torch.profiler trace: steps with an op, a kernel launch, the kernel and a copy."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "thread 1 (python)"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    ]
    for s in range(steps):
        t0 = 1_000 + s * 1_000
        corr = 100 + s
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}", "pid": 1, "tid": 1, "ts": t0,
             "dur": 900},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 300,
             "args": {"Input Dims": [[64, 64], [64, 64]], "External id": s}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 20,
             "dur": 15, "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": t0 + 60, "dur": 200,
             "args": {"correlation": corr, "device": 0, "stream": 7}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": t0 + 400,
             "dur": 20, "args": {"correlation": corr + 1000}},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7,
             "ts": t0 + 430, "dur": 50, "args": {"correlation": corr + 1000, "device": 0, "stream": 7, "bytes": 4096}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 1, "tid": 1, "ts": t0 + 20},
            {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 0, "tid": 7, "ts": t0 + 60, "bp": "e"},
        ]
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 2**34}],
            "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
            "baseTimeNanoseconds": 1_700_000_000_000_000_000, "traceEvents": events}


def _where(doc: dict[str, Any], name: str, nth: int = 1) -> dict[str, Any]:
    """The ``nth`` event named ``name`` (1-based) of a document from :func:`kineto_doc`."""
    return [e for e in doc["traceEvents"] if e.get("name") == name][nth - 1]


def event_set(target: str, key: str, value: Any, nth: int = 1) -> dict[str, Any]:
    """The base document with ``key`` of one event (the ``nth`` named ``target``) set to ``value``;
    a key like ``args.bytes`` sets inside ``args``."""
    doc = kineto_doc()
    event = _where(doc, target, nth)
    if key.startswith("args."):
        event.setdefault("args", {})[key[5:]] = value
    else:
        event[key] = value
    return doc


def top_set(key: str, value: Any) -> dict[str, Any]:
    doc = kineto_doc()
    doc[key] = value
    return doc


def renamed(names: list[str]) -> dict[str, Any]:
    """The base document with its ops, kernels and a thread named by ``names``."""
    doc = kineto_doc()
    ops = [e for e in doc["traceEvents"] if e.get("name") in ("aten::mm", "sgemm_kernel")]
    for i, event in enumerate(ops):
        event["name"] = names[i % len(names)]
    doc["traceEvents"][1]["args"]["name"] = names[0]
    return doc


def with_events(change: Callable[[list[dict[str, Any]]], None]) -> dict[str, Any]:
    doc = kineto_doc()
    change(doc["traceEvents"])
    return doc


def _dup_correlation(events: list[dict[str, Any]]) -> None:
    for e in events:
        if "correlation" in e.get("args", {}):
            e["args"]["correlation"] = 7


def _huge_correlation(events: list[dict[str, Any]]) -> None:
    for e in events:
        if "correlation" in e.get("args", {}):
            e["args"]["correlation"] = BIG_64


def _epoch_fractions_and_huge_ts(events: list[dict[str, Any]]) -> None:
    """Absolute epoch µs with ns fractions (read exactly from the text), one ts of 20 digits, and a
    name that is a number (which the typed decoding declines: the document is read the reference way)."""
    for e in events:
        if "ts" in e:
            e["ts"] = 1_700_000_000_000_000 + e["ts"] + 0.5
    ops = [e for e in events if e.get("name") == "aten::mm"]
    ops[0]["ts"] = int(TWENTY_DIGITS)
    ops[1]["name"] = 12


def _epoch_fractions_and_list_ts(events: list[dict[str, Any]]) -> None:
    """Fractional epoch µs (read exactly from the text), one ts that is a list, and an element that
    is no event but holds one with a numeric ts."""
    for e in events:
        if "ts" in e:
            e["ts"] = 1_700_000_000_000_000 + e["ts"] + 0.5
    op = next(e for e in events if e.get("name") == "aten::mm")
    events.append([dict(op)])  # type: ignore[arg-type]
    op["ts"] = [1]


def _kernel_before_launch(events: list[dict[str, Any]]) -> None:
    for e in events:
        if e.get("cat") == "kernel":
            e["ts"] -= 500


def _overlapping(events: list[dict[str, Any]]) -> None:
    for e in list(events):
        if e.get("name") == "aten::mm":  # a sibling that starts inside the op and ends after it
            events.append({**e, "name": "aten::add", "ts": e["ts"] + 150, "dur": 400})


def _step_beyond_2_53(events: list[dict[str, Any]]) -> None:
    step = next(e for e in events if e.get("name") == "ProfilerStep#3")
    step["dur"] = LONGER_THAN_2_53_NS_US


def _events_not_objects(events: list[dict[str, Any]]) -> None:
    events += [1, "x", None, [], [{"ph": "X"}]]  # type: ignore[list-item]


def _metadata_only(events: list[dict[str, Any]]) -> None:
    events[:] = [e for e in events if e["ph"] == "M"]


def _all_phases(events: list[dict[str, Any]]) -> None:
    base = {"cat": "cpu_op", "name": "p", "pid": 1, "tid": 1, "ts": 1_100, "dur": 1}
    events += [{**base, "ph": ph} for ph in ("B", "E", "b", "e", "n", "i", "I", "C", "P", "O", "N", "D", "", "XX")]


def _nested_args(events: list[dict[str, Any]]) -> None:
    deep: Any = 1
    for _ in range(200):
        deep = {"a": [deep]}
    events[4]["args"]["deep"] = deep


# ---------------------------------------------------------------------------------------------
# Writers: a generator returns the path to diagnose


Build = Callable[[Path], Path]


def json_file(make: Callable[[], Any], name: str = "trace.json") -> Build:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_text(json.dumps(make()))
        return path

    return build


def raw_file(make: Callable[[], bytes], name: str = "trace.json") -> Build:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(make())
        return path

    return build


def base_bytes() -> bytes:
    return json.dumps(kineto_doc()).encode()


def cut_mid_event() -> bytes:
    raw = base_bytes()
    return raw[: raw.index(b'"sgemm_kernel"') + 5]


def nested_args(depth: int) -> bytes:
    """The base trace with one event's args holding a value nested ``depth`` deep (written as
    text: Python's own encoder stops near 1,000 levels)."""
    deep = b'"deep": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b", "
    return base_bytes().replace(b'"ts": 1010', deep + b'"ts": 1010', 1)


def gzip_bomb() -> bytes:
    # 16 MiB of spaces after an array opening: ~16 KiB compressed, refused under --max-bytes 1 MiB.
    return gzip.compress(b'{"traceEvents": [' + b" " * (16 * 2**20), compresslevel=9)


def truncated_gzip() -> bytes:
    data = gzip.compress(base_bytes())
    return data[: len(data) // 2]


def unreadable(folder: Path) -> Path:
    path = folder / "locked.json"
    path.write_bytes(base_bytes())
    path.chmod(0)
    return path


def link_loop(folder: Path) -> Path:
    (folder / "a.json").symlink_to(folder / "b.json")
    (folder / "b.json").symlink_to(folder / "a.json")
    return folder / "a.json"


def dangling_link(folder: Path) -> Path:
    (folder / "moved.json").symlink_to(folder / "gone" / "trace.json")
    return folder / "moved.json"


def folder_with_bad_files(folder: Path) -> Path:
    """Two good traces beside a trace that cannot be read (corrupt gzip: left out, named), garbage
    that is no trace (not named: it is not named like one) and a broken link (skipped, named)."""
    root = folder / "runs"
    root.mkdir()
    for rank in (0, 1):
        doc = kineto_doc()
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        (root / f"rank{rank}.pt.trace.json").write_text(json.dumps(doc))
    (root / "broken.pt.trace.json.gz").write_bytes(gzip.compress(base_bytes())[:200])
    (root / "notes.json").write_bytes(b"\x00\xffgarbage")
    (root / "dangling.json").symlink_to(root / "missing-target.json")
    return root


def run_with_dangling_host(folder: Path) -> Path:
    """A profiling run whose second host's XPlane is a broken link: the first host is read, the
    missing one named in a warning."""
    run = folder / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").write_bytes(TF_EAGER_XPLANE.read_bytes())
    (run / "worker1.xplane.pb").symlink_to(run / "missing-target.xplane.pb")
    return folder / "logdir"


def folder_with_garbage_trace(folder: Path) -> Path:
    """A good trace beside one that looks like a trace and is broken inside: left out, named."""
    root = folder / "runs"
    root.mkdir()
    (root / "good.pt.trace.json").write_bytes(base_bytes())
    (root / "bad.pt.trace.json").write_bytes(base_bytes()[:300])
    return root


def folder_hostile_ranks(folder: Path) -> Path:
    """Two ranks whose distributedInfo is nonsense: rank a string, world size beyond 2⁶⁴."""
    root = folder / "ranks"
    root.mkdir()
    for i, info in enumerate(({"rank": "x", "world_size": BIG_64, "backend": ["nccl"]},
                              {"rank": -1, "world_size": -5, "backend": None})):
        doc = kineto_doc()
        doc["distributedInfo"] = info
        (root / f"r{i}.json").write_text(json.dumps(doc))
    return root


def hostile_manifest(folder: Path) -> Path:
    """A manifest beside the trace naming it, every fact of the wrong type."""
    path = folder / "trace.json"
    path.write_bytes(base_bytes())
    (folder / "manifest.json").write_text(json.dumps(
        {"trace": {"path": "trace.json"}, "timing": {"unprofiled_step_ns": "fast", "cold_steps": [BIG_64, "x", None],
                                                     "warmup_steps": {"a": 1}}, "threads": [1]}))
    return path


def hostile_file_name(name: str) -> Build:
    """The base trace under a hostile name (a ``/`` in it makes folders: the path reads the same)."""

    def build(folder: Path) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base_bytes())
        return path

    return build


# ---------------------------------------------------------------------------------------------
# XPlane


def xspace(planes: list[dict[str, Any]], hostnames: tuple[str, ...] = ("host",)) -> bytes:
    """XSpace bytes from plain data: a plane is {"name", "lines": [{"name", "timestamp_ns",
    "events": [(name, offset_ps, duration_ps, {stat: value})]}], "stats": {stat: value}}. Event
    and stat names are interned per plane, as the profiler does."""
    from traceview.readers.proto.xplane_descriptor import message_classes

    space = message_classes()["XSpace"]()
    space.hostnames.extend(hostnames)
    for i, spec in enumerate(planes):
        plane = space.planes.add(id=i, name=spec["name"])
        event_ids: dict[str, int] = {}
        stat_ids: dict[str, int] = {}

        def stat_id(name: str) -> int:
            if name not in stat_ids:
                stat_ids[name] = len(stat_ids) + 1
                plane.stat_metadata[stat_ids[name]].id = stat_ids[name]
                plane.stat_metadata[stat_ids[name]].name = name
            return stat_ids[name]

        def fill(stat: Any, name: str, value: Any) -> None:
            stat.metadata_id = value[1] if isinstance(value, tuple) and value[0] == "ref" else stat_id(name)
            if isinstance(value, tuple):
                kind, raw = value
                if kind == "ref":
                    stat.metadata_id = raw
                    stat.int64_value = 1
                else:
                    setattr(stat, kind, raw)
            elif isinstance(value, float):
                stat.double_value = value
            elif isinstance(value, int):
                if value >= BIG_63:
                    stat.uint64_value = value
                else:
                    stat.int64_value = value
            else:
                stat.str_value = str(value)

        for name, value in spec.get("stats", {}).items():
            fill(plane.stats.add(), name, value)
        for j, line_spec in enumerate(spec.get("lines", [])):
            line = plane.lines.add(id=line_spec.get("id", j), name=line_spec["name"],
                                   timestamp_ns=line_spec.get("timestamp_ns", 1_000_000))
            for event_spec in line_spec["events"]:
                name, offset_ps, duration_ps, stats = (tuple(event_spec) + ({},))[:4]
                event = line.events.add()
                if isinstance(name, int):  # a metadata id that points nowhere
                    event.metadata_id = name
                else:
                    if name not in event_ids:
                        event_ids[name] = len(event_ids) + 1
                        plane.event_metadata[event_ids[name]].id = event_ids[name]
                        plane.event_metadata[event_ids[name]].name = name
                    event.metadata_id = event_ids[name]
                event.offset_ps = offset_ps
                event.duration_ps = duration_ps
                for stat_name, value in stats.items():
                    fill(event.stats.add(), stat_name, value)
    return space.SerializeToString()


def host_plane(events: list[tuple[Any, ...]], line: str = "python", timestamp_ns: int = 1_000_000,
               name: str = "/host:CPU") -> dict[str, Any]:
    return {"name": name, "lines": [{"name": line, "timestamp_ns": timestamp_ns, "events": events}]}


def steps_xplane(step_num: Any = None, op_name: str = "MatMul", extra: tuple[tuple[Any, ...], ...] = ()) -> list:
    """Host events of three steps (``step_num`` stat on the step ranges) with an op in each."""
    events: list[tuple[Any, ...]] = []
    for s in range(3):
        t0 = s * 1_000_000_000  # ps
        events.append(("train", t0, 900_000_000, {"step_num": s if step_num is None else step_num}))
        events.append((op_name, t0 + 10_000_000, 300_000_000, {"eager_op": 1}))
    return events + list(extra)


def gpu_plane(index: str, line: str, events: list[tuple[Any, ...]]) -> dict[str, Any]:
    return {"name": f"/device:GPU:{index}", "lines": [{"name": line, "id": 7, "timestamp_ns": 1_000_000,
                                                       "events": events}]}


def xplane_file(make: Callable[[], bytes], name: str = "vm.xplane.pb") -> Build:
    return raw_file(make, name)


def xplane_steps(**kwargs: Any) -> Callable[[], bytes]:
    return lambda: xspace([host_plane(steps_xplane(**kwargs))])


def sample_xplane_mutated(change: Callable[[Any], None]) -> Callable[[], bytes]:
    """The real TF eager sample, parsed, changed, serialized again."""

    def make() -> bytes:
        from traceview.readers.proto.xplane_descriptor import message_classes

        space = message_classes()["XSpace"]()
        space.ParseFromString(TF_EAGER_XPLANE.read_bytes())
        change(space)
        return space.SerializeToString()

    return make


def _line_timestamp_near_2_63(space: Any) -> None:
    for plane in space.planes:
        for line in plane.lines:
            line.timestamp_ns = BIG_63 - 1_000


def _negative_durations(space: Any) -> None:
    for plane in space.planes:
        for line in plane.lines:
            for event in list(line.events)[::3]:
                event.duration_ps = -event.duration_ps - 1


def _dangling_metadata(space: Any) -> None:
    for plane in space.planes:
        for line in plane.lines:
            for event in list(line.events)[::5]:
                event.metadata_id = 10**12
                for stat in event.stats:
                    stat.metadata_id = -7


def _no_metadata(space: Any) -> None:
    for plane in space.planes:
        plane.ClearField("event_metadata")
        plane.ClearField("stat_metadata")


def _hostile_plane_names(space: Any) -> None:
    for plane in space.planes:
        for line in plane.lines:
            line.name = MARKUP[0] + ESCAPES[0]
        for md in plane.event_metadata.values():
            md.name = MARKDOWN[0] + HTML[0] + md.name


def sample_bytes_cut(fraction: float) -> Callable[[], bytes]:
    return lambda: TF_EAGER_XPLANE.read_bytes()[: int(TF_EAGER_XPLANE.stat().st_size * fraction)]


# ---------------------------------------------------------------------------------------------
# The corpus

NO_USABLE = "no usable timed events"
INVALID_JSON = "invalid JSON"

CASES: list[Case] = [
    # --- strings, objects, lists, null where numbers or objects are expected
    *(Case(f"ts-{label}", json_file(lambda v=v: event_set("aten::mm", "ts", v)), OK)
      for label, v in (("string", "abc"), ("object", {"a": 1}), ("list", [1]), ("null", None), ("bool", True),
                       ("numeric-string", "1000"))),
    *(Case(f"dur-{label}", json_file(lambda v=v: event_set("aten::mm", "dur", v)), OK)
      for label, v in (("string", "x"), ("object", {}), ("list", [300]), ("null", None), ("negative", -5),
                       ("bool", False))),
    *(Case(f"ph-{label}", json_file(lambda v=v: event_set("aten::mm", "ph", v)), OK)
      for label, v in (("number", 88), ("null", None), ("object", {"X": 1}), ("list", ["X"]))),
    *(Case(f"pid-{label}", json_file(lambda v=v: event_set("aten::mm", "pid", v)), OK)
      for label, v in (("object", {}), ("list", [1]), ("null", None), ("float", 1.5), ("beyond-2^64", BIG_64))),
    *(Case(f"tid-{label}", json_file(lambda v=v: event_set("aten::mm", "tid", v)), OK)
      for label, v in (("object", {"t": 1}), ("list", []), ("null", None), ("float", 2.5), ("beyond-2^63", BIG_63))),
    *(Case(f"args-{label}", json_file(lambda v=v: event_set("sgemm_kernel", "args", v)), OK)
      for label, v in (("list", [1, 2]), ("string", "a"), ("null", None), ("number", 3))),
    *(Case(f"name-{label}", json_file(lambda v=v: event_set("aten::mm", "name", v)), OK)
      for label, v in (("number", 12), ("null", None), ("object", {"n": 1}))),
    Case("cat-number", json_file(lambda: event_set("aten::mm", "cat", 5)), OK),
    *(Case(f"base-time-{label}", json_file(lambda v=v: top_set("baseTimeNanoseconds", v)), OK)
      for label, v in (("string", "x"), ("object", {}), ("list", [1]), ("negative", -1), ("beyond-2^64", BIG_64),
                       ("float", 1.5e18))),
    *(Case(f"device-properties-{label}", json_file(lambda v=v: top_set("deviceProperties", v)), OK)
      for label, v in (("string", "gpu"), ("object", {"id": 0}), ("list-of-strings", ["a", 1, None]),
                       ("id-beyond-2^64", [{"id": BIG_64}]), ("name-object", [{"id": 0, "name": {"x": 1}}]))),
    Case("device-properties-number", json_file(lambda: top_set("deviceProperties", 5)), OK),
    Case("device-properties-id-null", json_file(lambda: top_set("deviceProperties", [{"id": None, "name": 5}])),
         OK),
    Case("device-properties-id-string", json_file(lambda: top_set("deviceProperties", [{"id": "gpu0", "name": "x"}])),
         OK),
    Case("device-properties-id-list", json_file(lambda: top_set("deviceProperties", [{"id": [0]}])),
         OK),
    *(Case(f"distributed-info-{label}", json_file(lambda v=v: top_set("distributedInfo", v)), OK)
      for label, v in (("string", "nccl"), ("list", [0, 2]), ("garbage-values", {"rank": "x", "world_size": BIG_64}),
                       ("null", None))),
    Case("trace-events-object", json_file(lambda: {"traceEvents": {"a": 1}}), refused("traceEvents")),
    Case("document-number", json_file(lambda: 42), refused("not a trace")),
    Case("document-string", json_file(lambda: "traceEvents"), refused("not a trace")),
    # --- integers at and beyond 2⁶³ / 2⁶⁴
    Case("ts-2^63", json_file(lambda: event_set("aten::mm", "ts", BIG_63)), OK),
    Case("ts-2^64", json_file(lambda: event_set("aten::mm", "ts", BIG_64)), OK),
    Case("ts-minus-2^63", json_file(lambda: event_set("aten::mm", "ts", -BIG_63)), OK),
    Case("dur-2^64", json_file(lambda: event_set("aten::mm", "dur", BIG_64)), OK),
    Case("correlation-2^63", json_file(lambda: event_set("sgemm_kernel", "args.correlation", BIG_63)), OK),
    Case("correlation-2^64-both-sides", json_file(lambda: with_events(_huge_correlation)), OK),
    Case("bytes-2^64", json_file(lambda: event_set("Memcpy DtoH (Device -> Pageable)", "args.bytes", BIG_64)), OK),
    Case("bytes-negative-string", json_file(lambda: event_set("Memcpy DtoH (Device -> Pageable)", "args.bytes", "-1")),
         OK),
    Case("step-number-20-digits", json_file(lambda: event_set("ProfilerStep#2", "name", f"ProfilerStep#{TWENTY_DIGITS}")),
         OK),
    Case("stream-2^64", json_file(lambda: event_set("sgemm_kernel", "args.stream", BIG_64)), OK),
    Case("device-2^64", json_file(lambda: event_set("sgemm_kernel", "args.device", BIG_64)), OK),
    Case("device-string", json_file(lambda: event_set("sgemm_kernel", "args.device", "cuda:0")), OK),
    Case("correlation-object", json_file(lambda: event_set("sgemm_kernel", "args.correlation", {"id": 1})), OK),
    Case("bytes-list", json_file(lambda: event_set("Memcpy DtoH (Device -> Pageable)", "args.bytes", [4096])), OK),
    Case("device-list", json_file(lambda: event_set("sgemm_kernel", "args.device", [0])), OK),
    Case("stream-object", json_file(lambda: event_set("sgemm_kernel", "args.stream", {"s": 7})), OK),
    Case("input-dims-huge", json_file(lambda: event_set("aten::mm", "args.Input Dims", [[BIG_64, BIG_63], [-1]])), OK),
    # --- NaN-like values and extreme durations
    Case("ts-nan-literal", raw_file(lambda: base_bytes().replace(b'"ts": 1010', b'"ts": NaN', 1)),
         refused(INVALID_JSON)),
    Case("dur-infinity-literal", raw_file(lambda: base_bytes().replace(b'"dur": 300', b'"dur": Infinity', 1)),
         refused(INVALID_JSON)),
    Case("ts-1e400", raw_file(lambda: base_bytes().replace(b'"ts": 1010', b'"ts": 1e400', 1)), refused("infinity")),
    Case("ts-20-digits-among-epoch-fractions", json_file(lambda: with_events(_epoch_fractions_and_huge_ts)), OK),
    Case("ts-list-among-epoch-fractions", json_file(lambda: with_events(_epoch_fractions_and_list_ts)), OK),
    Case("ts-nan-string", json_file(lambda: event_set("aten::mm", "ts", "NaN")), OK),
    Case("dur-tiny-float", json_file(lambda: event_set("aten::mm", "dur", 1e-300)), OK),
    Case("dur-236-years", json_file(lambda: event_set("aten::mm", "dur", YEARS_236_US)), OK),
    Case("step-beyond-2^53-ns", json_file(lambda: with_events(_step_beyond_2_53)), OK),
    # --- empty, metadata only, truncated
    Case("trace-events-empty", json_file(lambda: {"traceEvents": []}), refused(NO_USABLE)),
    Case("empty-list", json_file(lambda: []), refused(NO_USABLE)),
    Case("metadata-only", json_file(lambda: with_events(_metadata_only)), refused(NO_USABLE)),
    Case("empty-file", raw_file(lambda: b""), refused("empty")),
    Case("whitespace-file", raw_file(lambda: b" \n\t "), refused("not a trace")),
    Case("truncated-half", raw_file(lambda: base_bytes()[: len(base_bytes()) // 2]), refused(INVALID_JSON)),
    Case("cut-mid-event", raw_file(cut_mid_event), refused(INVALID_JSON)),
    Case("truncated-gzip", raw_file(truncated_gzip, "trace.json.gz"), refused("gzip")),
    # In an event name: torch.profiler writes names as they are (readers/kineto_names.py), so the
    # name is read with U+FFFD for the bytes, and a note says so.
    Case("invalid-utf8-in-name", raw_file(lambda: base_bytes().replace(b"aten::mm", b"aten\xff\xfe", 1)), OK),
    Case("unescaped-quotes-in-name", raw_file(lambda: base_bytes().replace(b'"aten::mm"', b'"aten::mm("""):\n\\x"', 1)),
         OK),
    Case("invalid-utf8", raw_file(lambda: base_bytes().replace(b'"X"', b'"\xff"', 1)),
         refused("not UTF-8 at byte " + str(base_bytes().index(b'"X"') + 1))),
    # In a key no decoding reads: the typed decoding skips such keys unseen, yet must refuse too.
    Case("invalid-utf8-in-unread-key", raw_file(lambda: base_bytes().replace(b'"ph"', b'"p\xff"', 1)),
         refused("not UTF-8 at byte")),
    Case("lone-surrogate-name", raw_file(lambda: base_bytes().replace(b"aten::mm", b"aten\\ud800", 1)),
         refused("surrogate")),
    Case("nul-in-name", json_file(lambda: event_set("aten::mm", "name", "a\x00b")), OK),
    Case("utf8-bom", raw_file(lambda: b"\xef\xbb\xbf" + base_bytes()), OK),
    Case("utf8-bom-bare-array", raw_file(lambda: b"\xef\xbb\xbf" + json.dumps(kineto_doc()["traceEvents"]).encode()), OK),
    Case("utf8-bom-twice", raw_file(lambda: b"\xef\xbb\xbf" * 2 + base_bytes()), refused("not a trace")),
    Case("events-not-objects", json_file(lambda: with_events(_events_not_objects)), OK),
    Case("every-phase", json_file(lambda: with_events(_all_phases)), OK),
    Case("deeply-nested-args", json_file(lambda: with_events(_nested_args)), OK),
    # 1,000 levels: beyond the typed decoder's recursion, within the plain decoder's depth limit
    Case("args-nested-1000-deep", raw_file(lambda: nested_args(1000)), OK),
    Case("args-nested-100000-deep", raw_file(lambda: nested_args(100_000)), refused("depth limit")),
    # Two traceEvents arrays: every decoding keeps the last, as JSON parsers do (the first is empty
    # here, so a decoding that kept it would refuse the trace as having no events).
    Case("trace-events-twice", raw_file(lambda: b'{"traceEvents": [], ' + base_bytes()[1:]), OK),
    Case("duplicate-keys", raw_file(lambda: base_bytes().replace(b'"ts": 1010', b'"ts": 1010, "ts": "x"', 1)), OK),
    # --- shapes the timeline builder must absorb
    Case("duplicated-correlation-ids", json_file(lambda: with_events(_dup_correlation)), OK),
    Case("kernel-before-launch", json_file(lambda: with_events(_kernel_before_launch)), OK),
    Case("overlapping-siblings", json_file(lambda: with_events(_overlapping)), OK),
    # --- trace text and file names that must not shape any output
    Case("names-rich-markup", json_file(lambda: renamed(MARKUP)), OK, hostile_text=tuple(MARKUP)),
    Case("names-escape-sequences", json_file(lambda: renamed(ESCAPES)), OK, hostile_text=tuple(ESCAPES)),
    Case("names-markdown", json_file(lambda: renamed(MARKDOWN)), OK, hostile_text=tuple(MARKDOWN)),
    Case("names-html", json_file(lambda: renamed(HTML)), OK, hostile_text=tuple(HTML)),
    Case("names-newlines", json_file(lambda: renamed(NEWLINES)), OK, hostile_text=tuple(NEWLINES)),
    Case("file-name-markup", hostile_file_name("[bold red]x[/][link=http:⁄⁄e]l[/link].json"), OK,
         hostile_text=("[bold red]x[/][link=http:⁄⁄e]l[/link]",)),
    Case("file-name-escapes", hostile_file_name("e\x1b[31mred\x1b]8;;http:⁄⁄e\x07.json"), OK,
         hostile_text=("e\x1b[31mred\x1b]8;;http:⁄⁄e\x07",)),
    Case("file-name-markdown-html", hostile_file_name("[x](http:⁄⁄e) ![i](x) <script>.json"), OK,
         hostile_text=("[x](http:⁄⁄e) ![i](x) <script>",)),
    Case("file-name-newline", hostile_file_name("two\nlines.json"), OK, hostile_text=("two\nlines",)),
    Case("file-name-not-utf8", hostile_file_name(os.fsdecode(b"bad\xff\xfe.json")), OK,
         hostile_text=(os.fsdecode(b"bad\xff\xfe"),)),
    Case("refused-file-name-escapes", raw_file(lambda: b"{}", "r\x1b[2J\x1b]0;t\x07\n[bold]x.json"),
         refused("not a trace")),
    # --- compression, permissions, folders
    Case("gzip-bomb", raw_file(gzip_bomb, "bomb.json.gz"), refused("--max-bytes"), options=("--max-bytes", str(2**20))),
    Case("mode-000", unreadable, refused("cannot read"), skip_as_root=True),
    Case("symlink-loop", link_loop, refused("a loop of symbolic links")),
    Case("symlink-dangling", dangling_link, refused("a symbolic link to ")),
    Case("folder-with-unreadable-and-garbage", folder_with_bad_files, partial("broken.pt.trace.json.gz"),
         warns="dangling.json: not a readable regular file"),
    Case("run-with-dangling-host", run_with_dangling_host, OK, warns="worker1.xplane.pb: not a readable regular file"),
    Case("folder-with-broken-trace", folder_with_garbage_trace, partial("bad.pt.trace.json")),
    Case("folder-hostile-distributed-info", folder_hostile_ranks, OK),
    Case("manifest-garbage", hostile_manifest, OK),
    # --- XPlane
    Case("xspace-empty", xplane_file(lambda: b""), refused("empty")),
    Case("xspace-no-planes", xplane_file(lambda: xspace([], hostnames=("h",))), refused("not a trace")),
    Case("xspace-empty-planes", xplane_file(lambda: xspace([{"name": "/host:CPU"}, {"name": "Task Environment"}])),
         refused(NO_USABLE)),
    Case("xplane-timestamp-near-2^63", xplane_file(sample_xplane_mutated(_line_timestamp_near_2_63)), refused(NO_USABLE)),
    Case("xplane-negative-durations", xplane_file(sample_xplane_mutated(_negative_durations)), OK),
    Case("xplane-dangling-metadata-ids", xplane_file(sample_xplane_mutated(_dangling_metadata)), OK),
    Case("xplane-no-metadata-at-all", xplane_file(sample_xplane_mutated(_no_metadata)), OK),
    Case("xplane-hostile-names", xplane_file(sample_xplane_mutated(_hostile_plane_names)), OK,
         hostile_text=(MARKUP[0], ESCAPES[0], MARKDOWN[0], HTML[0])),
    Case("xplane-gpu-20-digits", xplane_file(lambda: xspace([
        host_plane(steps_xplane()), gpu_plane(TWENTY_DIGITS, "Stream #7(Kernel)", [("k", 5_000_000, 1_000_000)])])), OK),
    Case("xplane-stream-20-digits", xplane_file(lambda: xspace([
        host_plane(steps_xplane()), gpu_plane("0", f"Stream #{TWENTY_DIGITS}(Kernel)", [("k", 5_000_000, 1_000_000)])])),
         OK),
    Case("xplane-step-num-nan", xplane_file(xplane_steps(step_num=float("nan"))), OK),
    Case("xplane-step-num-2^64-1", xplane_file(xplane_steps(step_num=BIG_64 - 1)), OK),
    Case("xplane-step-num-string", xplane_file(xplane_steps(step_num="three")), OK),
    # Digits str.isdigit() takes and int() refuses; two minus signs.
    Case("xplane-step-num-superscript", xplane_file(xplane_steps(step_num="²")), OK),
    Case("xplane-step-num-double-minus", xplane_file(xplane_steps(step_num="--5")), OK),
    Case("xplane-offset-beyond-int64-ns", xplane_file(lambda: xspace([host_plane(steps_xplane(
        extra=(("late", BIG_63 - 1, 5),)))])), OK),
    Case("xplane-negative-offset", xplane_file(lambda: xspace([host_plane(steps_xplane(
        extra=(("early", -BIG_63, 5), ("before", -5_000_000, 1_000_000))))])), OK),
    Case("xplane-stat-ref-nowhere", xplane_file(lambda: xspace([host_plane(steps_xplane(
        extra=(("MatMul", 50_000_000, 1_000, {"tf_op": ("ref", 999)}),)))])), OK),
    Case("xplane-event-metadata-nowhere", xplane_file(lambda: xspace([host_plane(steps_xplane(
        extra=((424242, 50_000_000, 1_000),)))])), OK),
    Case("xplane-truncated", xplane_file(sample_bytes_cut(0.6)), refused("truncated or corrupt")),
    Case("xplane-garbage-appended", xplane_file(lambda: TF_EAGER_XPLANE.read_bytes() + b"\xff" * 64),
         refused("truncated or corrupt")),
    Case("xplane-gzipped", xplane_file(lambda: gzip.compress(TF_EAGER_XPLANE.read_bytes()), "vm.xplane.pb.gz"), OK),
]


def by_name() -> dict[str, Case]:
    table = {case.name: case for case in CASES}
    assert len(table) == len(CASES), "case names must be unique"
    return table


def main(argv: list[str]) -> int:
    """Write every input under a folder: ``python -m tests.hostile_corpus OUT``."""
    out = Path(argv[0]) if argv else Path("hostile-corpus")
    for case in CASES:
        folder = out / case.name
        folder.mkdir(parents=True, exist_ok=True)
        path = case.build(folder)
        sys.stdout.write(f"{case.name}\t{case.expect.exit_code}\t{case.expect.message or ''}\t{os.fsdecode(path)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
