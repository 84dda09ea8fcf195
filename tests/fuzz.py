"""Mutation fuzzing of the whole pipeline, in process: ``python -m tests.fuzz --seconds N [--seed S]``.

Seeds are real traces cut down to a few hundred events (the torch eager samples, the TF eager
XPlane samples, ``../shared/traces`` when present). Each input is a seed with a few mutations
(values, keys, structure, raw bytes, compression) and goes the way ``traceview diagnose`` takes a
file: discover → read → normalize → steps → diagnose → render json / md / terminal. Outcomes:

- OK: reports rendered, their invariants hold (tests/report_invariants.py);
- REFUSED: a :class:`traceview.errors.TraceviewError` (the CLI's exit 2 with one line);
- INTERNAL: any other exception, a hang (``--timeout``) or a Python warning on stderr;
- VIOLATION: an invariant broken, or a rerun of the same input rendering different bytes.

The summary gives inputs/s, counts by outcome and each distinct INTERNAL / VIOLATION (by where
it happens) with a reproducer saved under ``--save``; the exit status is 1 when there is any.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
FORMATS = ("json", "md", "terminal")
OUTCOMES = ("OK", "REFUSED", "INTERNAL", "VIOLATION")

# ---------------------------------------------------------------------------------------------
# The pipeline, as the CLI runs it


def render_reports(path: Path, formats: tuple[str, ...] = FORMATS) -> dict[str, str]:
    """``traceview diagnose PATH --format F`` for each format, sharing one diagnosis: the CLI's
    steps without its argument parsing and error printing."""
    return render_diagnosed(*diagnose_path(path), formats)


def diagnose_path(path: Path) -> tuple[list[Any], list[Any]]:
    """The diagnoses of the traces ``path`` names, one each, and the comparisons between them."""
    from traceview.analyzers.compare import workload_comparisons
    from traceview.loader import diagnose
    from traceview.loader import trace_paths

    diagnoses = [diagnose(p) for p in trace_paths(path)]
    return diagnoses, workload_comparisons(diagnoses)


def render_diagnosed(diagnoses: list[Any], comparisons: list[Any],
                     formats: tuple[str, ...] = FORMATS) -> dict[str, str]:
    from traceview.renderers import registry

    return {fmt: registry.get(fmt).render_diagnoses(diagnoses, width=100, color=False, comparisons=comparisons,
                                                    multi_rank=[]) for fmt in formats}


@dataclass
class Result:
    outcome: str
    detail: str = ""  # the error message, the traceback tail or the broken invariants
    signature: tuple[str, ...] = ()  # what makes two failures the same one


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise _Timeout


def classify(path: Path, timeout_s: float = 20.0, rerun: bool = False) -> Result:
    """Run one input through the pipeline and say what happened."""
    from traceview.errors import TraceviewError, TraceviewWarning

    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outputs = render_reports(path)
            if rerun and render_reports(path) != outputs:
                return Result("VIOLATION", "a rerun rendered different bytes", ("rerun differs",))
    except TraceviewError as err:
        message = str(err)
        if not message.strip():
            return Result("VIOLATION", f"{type(err).__name__} with an empty message", ("empty message",))
        return Result("REFUSED", message)
    except _Timeout:
        return Result("INTERNAL", f"no result within {timeout_s:g} s", ("timeout",))
    except Exception as err:  # noqa: BLE001 - what the fuzz is looking for (RecursionError, MemoryError too)
        return _internal(err)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    noisy = [w for w in caught if not issubclass(w.category, TraceviewWarning)]
    if noisy:
        first = noisy[0]
        where = f"{_repo_relative(first.filename)}:{first.lineno}"
        return Result("INTERNAL", f"{first.category.__name__} at {where}: {first.message}",
                      ("warning", first.category.__name__, _repo_relative(first.filename)))
    return _check(outputs)


def _check(outputs: dict[str, str]) -> Result:
    from tests.report_invariants import json_violations, text_violations

    problems = text_violations(outputs)
    try:
        problems += json_violations(json.loads(outputs["json"]))
    except (ValueError, KeyError, TypeError) as err:
        problems.append(f"json report unreadable: {type(err).__name__}: {err}")
    if problems:
        # The same broken invariant whatever the numbers and the file: "step N: buckets sum to N …".
        kind = re.sub(r"\d+", "N", problems[0].removeprefix(outputs_source(outputs) + ": "))[:50]
        return Result("VIOLATION", "\n".join(problems[:5]), ("invariant", kind))
    return Result("OK")


def outputs_source(outputs: dict[str, str]) -> str:
    """The trace's path as the JSON report names it (the prefix of its invariant messages)."""
    match = re.search(r'"source": "((?:[^"\\]|\\.)*)"', outputs.get("json", ""))
    return json.loads(f'"{match.group(1)}"')[-60:] if match else ""


def _internal(err: BaseException) -> Result:
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/traceview/" in f.filename] or frames
    last = ours[-1] if ours else None
    signature = (type(err).__name__, _repo_relative(last.filename), last.name) if last else (type(err).__name__,)
    tail = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-6:])
    return Result("INTERNAL", tail, signature)


def _repo_relative(filename: str) -> str:
    try:
        return Path(filename).resolve().relative_to(REPO).as_posix()
    except ValueError:
        return Path(filename).name


# ---------------------------------------------------------------------------------------------
# Seeds: real traces cut to a few hundred events


@dataclass
class Seed:
    name: str
    kind: str  # "kineto" (a JSON document) or "xplane" (an XSpace message)
    value: Any


def kineto_seeds(max_events: int = 250) -> list[Seed]:
    paths = sorted(REPO.glob("sample_traces/*/torch-eager/*.pt.trace.json.gz"))
    paths += sorted((SHARED_TRACES / "torch_gpu").glob("*.json.gz")) if SHARED_TRACES.is_dir() else []
    return [Seed(p.parent.parent.name + "/" + p.name[:24], "kineto", cut_kineto(orjson.loads(gzip.decompress(
        p.read_bytes())), max_events)) for p in paths]


def cut_kineto(doc: Any, max_events: int) -> dict[str, Any]:
    """The document with its events cut to a window of ``max_events`` from the second step on
    (the first is often cold), plus its metadata and flow events in that window."""
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    timed = sorted((e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))),
                   key=lambda e: e["ts"])
    steps = [e for e in timed if str(e.get("name", "")).startswith("ProfilerStep#")]
    start = steps[1]["ts"] if len(steps) > 2 else (timed[0]["ts"] if timed else 0)
    window = [e for e in timed if e["ts"] >= start][:max_events]
    end = window[-1]["ts"] if window else start
    rest = [e for e in events if e.get("ph") != "X" and (e.get("ph") == "M" or start <= e.get("ts", -1) <= end)]
    top = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
    return {**top, "traceEvents": rest[:40] + window}


def xplane_seeds(max_events: int = 120) -> list[Seed]:
    paths = sorted(REPO.glob("sample_traces/*/tf-eager/plugins/profile/*/*.xplane.pb"))[:3]
    paths += sorted((SHARED_TRACES / "xplane_gpu").glob("*.xplane.pb")) if SHARED_TRACES.is_dir() else []
    return [Seed(p.parts[-6] + "/" + p.name if "plugins" in p.parts else p.name, "xplane",
                 cut_xplane(p.read_bytes(), max_events)) for p in paths]


def cut_xplane(raw: bytes, max_events: int) -> Any:
    """The XSpace with each line cut to the events of one time window (at most ``max_events`` on the
    busiest line), at most 6 lines per plane."""
    space = _xspace_class()()
    space.ParseFromString(raw)
    for plane in space.planes:
        del plane.lines[6:]
        lines = sorted(plane.lines, key=lambda line: -len(line.events))
        if not lines or not lines[0].events:
            continue
        busiest = sorted(lines[0].events, key=lambda e: e.offset_ps)
        skip = len(busiest) // 4  # past the start-up
        lo = lines[0].timestamp_ns * 1000 + busiest[skip].offset_ps
        hi = lines[0].timestamp_ns * 1000 + busiest[min(len(busiest) - 1, skip + max_events)].offset_ps
        for line in plane.lines:
            keep = [e for e in line.events if lo <= line.timestamp_ns * 1000 + e.offset_ps <= hi][:max_events]
            kept = [type(e)() for e in keep]
            for new, old in zip(kept, keep):
                new.CopyFrom(old)
            del line.events[:]
            line.events.extend(kept)
    return space


def _xspace_class() -> Any:
    from traceview.readers.proto.xplane_descriptor import message_classes

    return message_classes()["XSpace"]


# ---------------------------------------------------------------------------------------------
# Values that break assumptions

INT_EDGES = [0, -1, 1, 2**31, 2**32 + 1, 2**53 + 1, 2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1,
             2**64, 10**20, 10**30]
FLOAT_EDGES = [0.5, -0.0, 1e-300, 1e300, -1e300, 1.5e15 + 0.123, 9.2e15, 1e18, 7.3e12, 2.0**62 / 1000]
HOSTILE_TEXT = ["", " ", "[bold red]x[/bold red]", "[/]", "[link=http://e]l[/link]", "\x1b[31mred\x1b[0m",
                "\x1b]8;;http://e\x07l", "[m](http://e)", "![i](http://e/i.png)", "<script>x</script>", "a|b`c*d_e",
                "two\nlines", "tab\tcr\r", "\x00nul", "é漢字🙂", "x" * 3000, "ProfilerStep#", "ProfilerStep#-1",
                "ProfilerStep#99999999999999999999", "ProfilerStep#1.5", "\u202eevil", "\ufeffbom", "%s%n{0}"]
KINETO_NAMES = ["ProfilerStep#7", "aten::mm", "aten::linear", "cudaLaunchKernel", "cudaDeviceSynchronize",
                "cudaStreamSynchronize", "cudaMemcpyAsync", "cudaEventSynchronize", "Memcpy HtoD (Pageable -> Device)",
                "Memset (Device)", "ncclKernel_AllReduce_RING_LL_Sum_float", "Optimizer.step#SGD.step",
                "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "CompiledFunction",
                "Torch-Compiled Region", "aten::to", "## forward ##", "record_param_comms", "sgemm"]
KINETO_CATEGORIES = ["cpu_op", "user_annotation", "gpu_user_annotation", "python_function", "cuda_runtime",
                     "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "Trace", "ac2g", "fwdbwd",
                     "Operator", "Kernel", "Runtime", "Memcpy", "overhead", "", "KERNEL"]
PHASES = ["X", "B", "E", "i", "I", "s", "f", "t", "M", "C", "b", "e", "n", "P", "", "x"]
EVENT_KEYS = ["ts", "dur", "ph", "cat", "name", "pid", "tid", "args", "id", "bp", "s"]
ARG_KEYS = ["correlation", "device", "stream", "bytes", "Input Dims", "External id", "name", "Ev Idx",
            "Input type", "Concrete Inputs", "memory bandwidth (GB/s)", "Python id", "Python parent id"]
TOP_KEYS = ["baseTimeNanoseconds", "deviceProperties", "distributedInfo", "traceName", "schemaVersion",
            "displayTimeUnit", "host_name", "traceEvents", "record_shapes", "trace_id"]


def nasty(rng: random.Random) -> Any:
    """A value of any JSON type, usually an edge case."""
    pick = rng.randrange(10)
    if pick < 3:
        return rng.choice(INT_EDGES) * rng.choice((1, 1, -1))
    if pick == 3:
        return rng.choice(FLOAT_EDGES)
    if pick == 4:
        return rng.choice(HOSTILE_TEXT)
    if pick == 5:
        return rng.choice([None, True, False, [], {}, [1, 2], {"a": None}, [[64, 64]], "1000", "NaN", "-inf"])
    if pick == 6:
        return rng.randint(-10**6, 10**7)
    if pick == 7:
        return rng.uniform(-1e6, 1e7)
    if pick == 8:
        return rng.choice(KINETO_NAMES)
    return [nasty(rng)] if rng.random() < 0.5 else {"x": nasty(rng)}


# ---------------------------------------------------------------------------------------------
# Kineto mutations: each changes a shallow copy of the document in place


Doc = dict[str, Any]


def _event(doc: Doc, rng: random.Random) -> tuple[int, dict[str, Any]] | None:
    events = doc["traceEvents"]
    if not isinstance(events, list) or not events:
        return None
    i = rng.randrange(len(events))
    if not isinstance(events[i], dict):
        return None
    events[i] = dict(events[i])  # copy on write: the seed stays as it was
    return i, events[i]


def m_set_field(doc: Doc, rng: random.Random) -> str:
    hit = _event(doc, rng)
    if hit is None:
        return "set-field(none)"
    _, ev = hit
    key = rng.choice(EVENT_KEYS)
    value = nasty(rng)
    if key == "ph" and rng.random() < 0.6:
        value = rng.choice(PHASES)
    elif key == "cat" and rng.random() < 0.6:
        value = rng.choice(KINETO_CATEGORIES)
    elif key == "name" and rng.random() < 0.5:
        value = rng.choice(KINETO_NAMES + HOSTILE_TEXT)
    ev[key] = value
    return f"set {key}"


def m_set_arg(doc: Doc, rng: random.Random) -> str:
    hit = _event(doc, rng)
    if hit is None:
        return "set-arg(none)"
    _, ev = hit
    args = dict(ev["args"]) if isinstance(ev.get("args"), dict) else {}
    key = rng.choice(ARG_KEYS)
    args[key] = nasty(rng) if rng.random() < 0.7 else rng.randint(0, 50)
    ev["args"] = args
    return f"set args.{key}"


def m_del_key(doc: Doc, rng: random.Random) -> str:
    hit = _event(doc, rng)
    if hit is None or not hit[1]:
        return "del-key(none)"
    key = rng.choice(sorted(hit[1]))
    del hit[1][key]
    return f"del {key}"


def m_structure(doc: Doc, rng: random.Random) -> str:
    events = doc["traceEvents"]
    if not isinstance(events, list) or not events:
        return "structure(none)"
    events = doc["traceEvents"] = list(events)
    i = rng.randrange(len(events))
    j = rng.randrange(i, min(len(events), i + rng.choice((1, 5, 50))) + 1)
    op = rng.randrange(6)
    if op == 0:
        del events[i:j]
        return "delete events"
    if op == 1:
        events[i:i] = [dict(e) if isinstance(e, dict) else e for e in events[i:j]]
        return "duplicate events"
    if op == 2:
        piece = events[i:j]
        rng.shuffle(piece)
        events[i:j] = piece
        return "shuffle events"
    if op == 3:
        events.insert(i, rng.choice([1, "x", None, [], [events[i]], {"traceEvents": []}]))
        return "insert a non-event"
    if op == 4:
        events[:] = [e for e in events if isinstance(e, dict) and e.get("ph") in ("M", rng.choice(PHASES))]
        return "keep one phase"
    events[:] = events[: rng.randrange(len(events) + 1)]
    return "drop the tail"


def m_time(doc: Doc, rng: random.Random) -> str:
    """Times that make events overlap, nest wrongly, run before their launch, or last for ages."""
    events = doc["traceEvents"]
    if not isinstance(events, list) or not events:
        return "time(none)"
    events = doc["traceEvents"] = list(events)
    picked = rng.sample(range(len(events)), min(len(events), rng.choice((1, 3, 20))))
    op = rng.randrange(5)
    delta = rng.choice((-1, 1)) * rng.choice((1, 50, 1000, 10**6, 10**9, 2**53 // 1000, 10**13))
    for i in picked:
        if not isinstance(events[i], dict):
            continue
        ev = events[i] = dict(events[i])
        ts, dur = ev.get("ts"), ev.get("dur")
        if op == 0 and isinstance(ts, (int, float)):
            ev["ts"] = ts + delta
        elif op == 1 and isinstance(dur, (int, float)):
            ev["dur"] = abs(dur * rng.choice((0, 2, 10, 1000, 10**6)))
        elif op == 2:
            ev["ts"] = events[picked[0]].get("ts", 0) if isinstance(events[picked[0]], dict) else 0
        elif op == 3 and isinstance(ts, (int, float)):
            ev["ts"] = ts + 0.0004 * rng.randrange(1, 4)  # sub-ns fractions
        elif op == 4 and isinstance(ts, (int, float)):
            ev["ts"] = 1.7e15 + ts + rng.random()  # epoch µs with fractions: the exact-ts path
    return ["shift ts", "scale dur", "same ts", "sub-ns ts", "epoch ts"][op]


def m_scramble(doc: Doc, rng: random.Random) -> str:
    """Many events at once: random times within the trace's span, or moved to another track, so
    that events on one thread overlap without nesting and kernels leave their streams."""
    events = doc["traceEvents"]
    timed = [i for i, e in enumerate(events) if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))
             and not isinstance(e.get("ts"), bool)] if isinstance(events, list) else []
    if not timed:
        return "scramble(none)"
    events = doc["traceEvents"] = list(events)
    lo = min(events[i]["ts"] for i in timed)
    hi = max(events[i]["ts"] for i in timed)
    tracks = [(events[i].get("pid"), events[i].get("tid")) for i in timed]
    moved = rng.sample(timed, max(1, len(timed) // rng.choice((2, 5, 20))))
    retime = rng.random() < 0.5
    for i in moved:
        ev = events[i] = dict(events[i])
        if retime:
            ev["ts"] = rng.uniform(lo, hi) if isinstance(lo, float) else rng.randint(int(lo), int(hi))
            ev["dur"] = rng.choice((0, 1, rng.randint(0, max(1, int(hi - lo)))))
        else:
            ev["pid"], ev["tid"] = rng.choice(tracks)
    return "scramble times" if retime else "scramble tracks"


def m_correlation(doc: Doc, rng: random.Random) -> str:
    """Launch/kernel links: duplicated, crossed, or pointing nowhere."""
    events = doc["traceEvents"]
    if not isinstance(events, list):
        return "correlation(none)"
    linked = [i for i, e in enumerate(events) if isinstance(e, dict) and isinstance(e.get("args"), dict)
              and "correlation" in e["args"]]
    if not linked:
        return "correlation(none)"
    events = doc["traceEvents"] = list(events)
    value = rng.choice((events[rng.choice(linked)]["args"]["correlation"], nasty(rng), 0, -1))
    for i in rng.sample(linked, min(len(linked), rng.choice((1, 2, 10)))):
        events[i] = {**events[i], "args": {**events[i]["args"], "correlation": value}}
    return "correlation"


def m_step(doc: Doc, rng: random.Random) -> str:
    """A step marker with a strange number or span."""
    events = doc["traceEvents"]
    if not isinstance(events, list):
        return "step(none)"
    events = doc["traceEvents"] = list(events)
    base = next((e for e in events if isinstance(e, dict) and e.get("ph") == "X"), {"pid": 1, "tid": 1, "ts": 0})
    number = rng.choice(["99999999999999999999", "0", "-3", "1", "7", "", "x", str(2**63)])
    events.insert(rng.randrange(len(events) + 1), {
        "ph": "X", "cat": rng.choice(("user_annotation", "cpu_op", "gpu_user_annotation")),
        "name": f"ProfilerStep#{number}", "pid": base.get("pid"), "tid": base.get("tid"),
        "ts": base.get("ts", 0) if rng.random() < 0.5 else nasty(rng),
        "dur": rng.choice((0, 1, 500, 2**53 // 1000 + 5, 10**12, nasty(rng)))})
    return "step marker"


def m_top(doc: Doc, rng: random.Random) -> str:
    key = rng.choice(TOP_KEYS)
    if key == "traceEvents" and rng.random() < 0.7:
        return "top(kept)"
    if key == "deviceProperties" and rng.random() < 0.5:
        doc[key] = [{"id": nasty(rng), "name": nasty(rng), "totalGlobalMem": nasty(rng)}]
    elif key == "distributedInfo" and rng.random() < 0.5:
        doc[key] = {"rank": nasty(rng), "world_size": nasty(rng), "backend": nasty(rng)}
    else:
        doc[key] = nasty(rng)
    return f"top {key}"


KINETO_MUTATIONS: list[Callable[[Doc, random.Random], str]] = [
    m_set_field, m_set_field, m_set_arg, m_set_arg, m_del_key, m_structure, m_time, m_time, m_scramble, m_scramble,
    m_correlation, m_step, m_top]

# ---------------------------------------------------------------------------------------------
# Raw-byte mutations (any format)

TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"99999999999999999999999", b"-0", b"1.5e-400",
          b"null", b"true", b"[]", b"{}", b'"', b",", b"]", b"}", b"[", b"{", b"\\u0000", b"\\ud800", b"\xff", b"\x00",
          b'"ts":', b'"ph":"X",', b"\x1f\x8b"]


def mutate_bytes(data: bytes, rng: random.Random, other: bytes) -> tuple[bytes, str]:
    if not data:
        return rng.choice(TOKENS), "bytes: token only"
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.choice((1, 2, 8, 64, 1024)))
    op = rng.randrange(7)
    if op == 0:
        out = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    elif op == 1:
        out = data[:i] + rng.choice(TOKENS) + data[i:]
    elif op == 2:
        out = data[:i] + data[j:]
    elif op == 3:
        out = data[:j] + data[i:j] * rng.choice((1, 2, 30)) + data[j:]
    elif op == 4:
        out = data[:i]
    elif op == 5:
        k = rng.randrange(len(other) + 1) if other else 0
        out = data[:i] + other[k:k + rng.choice((16, 256, 4096))]
    else:
        out = data[:i] + bytes(rng.randrange(256) for _ in range(j - i)) + data[j:]
    return out, ["bytes: flip a bit", "bytes: insert a token", "bytes: delete", "bytes: repeat",
                 "bytes: truncate", "bytes: splice another seed", "bytes: random run"][op]


def numbers_swapped(text: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Replace one JSON number by an edge case written as text (beyond what json.dumps writes)."""
    import re

    numbers = [m for m in re.finditer(rb"(?<=[:\[,])\s*-?\d+(\.\d+)?([eE][-+]?\d+)?", text)]
    if not numbers:
        return text, "numbers(none)"
    m = rng.choice(numbers)
    new = rng.choice([b"1e400", b"-1e400", b"1e-400", b"99999999999999999999999999", b"-0.0", b"1.0e2", b"0.0000001",
                      b"18446744073709551616", b"9223372036854775808", b"-9223372036854775809", b"1E+2"])
    return text[:m.start()] + new + text[m.end():], "bytes: number edge"


# ---------------------------------------------------------------------------------------------
# XPlane mutations (on a copy of the seed's XSpace)

INT64_EDGES = [0, -1, 1, 2**62, 2**63 - 1, -(2**63), -(2**62), 10**15, -10**12, 2**53 + 1]
PLANE_NAMES = ["/host:CPU", "/device:GPU:0", "/device:GPU:1", "/device:GPU:" + "9" * 20, "/device:GPU:-1",
               "/device:TPU:0", "/host:metadata", "Task Environment", "/device:CUSTOM:x", "", "/device:GPU:x"]
LINE_NAMES = ["python", "Host Threads/123", "Stream #7(Kernel)", "Stream #" + "9" * 20 + "(Kernel)", "Stream #-1",
              "XLA Ops", "XLA Modules", "Steps", "TensorFlow Ops", "tf_Compute/1", "tf_data_iterator_resource/1",
              "tf_xla-cpu-codegen/2", "py_xla_callback/3", ""]
XPLANE_NAMES = ["train", "MatMul", "cudaLaunchKernel", "cuLaunchKernel", "cudaStreamSynchronize", "BlockUntilReady",
                "EagerExecute", "EagerLocalExecute: MatMul", "__inference_f_12", "PjitFunction(f)",
                "jit_f:XLA GPU module", "ThunkExecutor::Execute", "$python.py:1 f", "MemcpyH2D", "memset",
                "MemoryAllocation", "MemoryDeallocation", "dce", "IteratorGetNext", "a:MatMul", "ExecutorState::Process", "fusion.1"]
STAT_NAMES = ["step_num", "correlation_id", "tf_op", "eager_op", "hlo_op", "hlo_module", "tf_function_call",
              "memcpy_details", "memset_details", "group_id", "name", "device_ordinal", "profile_start_time",
              "stream_id", "kernel_details", "annotation", "host_name", "devid", "context_id",
              "allocator_name", "bytes_allocated", "allocation_bytes", "requested_bytes", "addr"]


def _pick_event(space: Any, rng: random.Random) -> tuple[Any, Any, Any] | None:
    lines = [(p, ln) for p in space.planes for ln in p.lines if len(ln.events)]
    if not lines:
        return None
    plane, line = rng.choice(lines)
    return plane, line, line.events[rng.randrange(len(line.events))]


def _set_stat(stat: Any, rng: random.Random) -> None:
    kind = rng.randrange(6)
    if kind == 0:
        stat.double_value = rng.choice([float("nan"), float("inf"), -float("inf"), 1e300, -0.0, 2.5, 1e19])
    elif kind == 1:
        stat.uint64_value = rng.choice([0, 2**63, 2**64 - 1, 7])
    elif kind == 2:
        stat.int64_value = rng.choice(INT64_EDGES)
    elif kind == 3:
        stat.str_value = rng.choice(HOSTILE_TEXT + XPLANE_NAMES + ["$$1", "memory_kind:pageable dst:device size:9"])
    elif kind == 4:
        stat.bytes_value = bytes(rng.randrange(256) for _ in range(rng.randrange(12)))
    else:
        stat.ref_value = rng.choice([0, 1, 2**63, 2**64 - 1, 12345])


def x_values(space: Any, rng: random.Random) -> str:
    hit = _pick_event(space, rng)
    if hit is None:
        return "x-values(none)"
    plane, line, event = hit
    op = rng.randrange(6)
    if op == 0:
        line.timestamp_ns = rng.choice(INT64_EDGES)
    elif op == 1:
        event.offset_ps = rng.choice(INT64_EDGES)
    elif op == 2:
        event.duration_ps = rng.choice(INT64_EDGES)
    elif op == 3:
        event.num_occurrences = rng.choice((1, 0, -1, 2**62))
    elif op == 4:
        event.metadata_id = rng.choice((0, -1, 10**12, 2**63 - 1))
    else:
        line.duration_ps = rng.choice(INT64_EDGES)
    return ["x: line timestamp", "x: offset", "x: duration", "x: num_occurrences", "x: metadata id nowhere",
            "x: line duration"][op]


def x_stats(space: Any, rng: random.Random) -> str:
    hit = _pick_event(space, rng)
    if hit is None:
        return "x-stats(none)"
    plane, _, event = hit
    name = rng.choice(STAT_NAMES)
    ids = [k for k, md in plane.stat_metadata.items() if md.name == name]
    stat_id = ids[0] if ids else max(list(plane.stat_metadata.keys()) + [0]) + 1
    if not ids:
        plane.stat_metadata[stat_id].id = stat_id
        plane.stat_metadata[stat_id].name = name
    target = plane.stats if rng.random() < 0.15 else event.stats
    stat = target.add()
    stat.metadata_id = stat_id if rng.random() < 0.9 else rng.choice((0, -5, 10**9))
    _set_stat(stat, rng)
    return f"x: stat {name}"


def _pick_plane(space: Any, rng: random.Random) -> Any:
    return space.planes[rng.randrange(len(space.planes))] if len(space.planes) else None


def x_names(space: Any, rng: random.Random) -> str:
    plane = _pick_plane(space, rng)
    op = rng.randrange(3)
    if plane is None:
        return "x-names(none)"
    if op == 0:
        plane.name = rng.choice(PLANE_NAMES + HOSTILE_TEXT[:12])
    elif op == 1 and len(plane.lines):
        plane.lines[rng.randrange(len(plane.lines))].name = rng.choice(LINE_NAMES + HOSTILE_TEXT[:12])
    elif len(plane.event_metadata):
        key = rng.choice(list(plane.event_metadata.keys()))
        plane.event_metadata[key].name = rng.choice(XPLANE_NAMES + HOSTILE_TEXT)
    return ["x: plane name", "x: line name", "x: event name"][op]


def x_structure(space: Any, rng: random.Random) -> str:
    plane, op = _pick_plane(space, rng), rng.randrange(6)
    if plane is None:
        return "x-structure(none)"
    if op == 0:
        del space.planes[rng.randrange(len(space.planes))]
    elif op == 1 and len(plane.lines):
        del plane.lines[rng.randrange(len(plane.lines))]
    elif op == 2 and len(plane.lines):
        line = plane.lines[rng.randrange(len(plane.lines))]
        if len(line.events):
            i = rng.randrange(len(line.events))
            del line.events[i:i + rng.choice((1, 10, 100))]
    elif op == 3:
        space.planes.add().CopyFrom(plane)
    elif op == 4 and len(plane.lines):
        line = plane.lines[rng.randrange(len(plane.lines))]
        if len(line.events):
            line.events.add().CopyFrom(line.events[rng.randrange(len(line.events))])
    else:
        plane.ClearField(rng.choice(("event_metadata", "stat_metadata")))
    return ["x: drop a plane", "x: drop a line", "x: drop events", "x: copy a plane", "x: copy an event",
            "x: clear metadata"][op]


XPLANE_MUTATIONS: list[Callable[[Any, random.Random], str]] = [x_values, x_values, x_stats, x_stats, x_names,
                                                               x_structure]


# ---------------------------------------------------------------------------------------------
# The loop


@dataclass
class Failure:
    outcome: str
    signature: tuple[str, ...]
    detail: str
    mutations: list[str]
    reproducer: str
    count: int = 1


@dataclass
class Stats:
    inputs: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    failures: dict[tuple[str, ...], Failure] = field(default_factory=dict)
    refusals: Counter = field(default_factory=Counter)

    def merge(self, other: "Stats") -> None:
        self.inputs += other.inputs
        self.seconds = max(self.seconds, other.seconds)
        self.outcomes.update(other.outcomes)
        self.refusals.update(other.refusals)
        for key, failure in other.failures.items():
            if key in self.failures:
                self.failures[key].count += failure.count
            else:
                self.failures[key] = failure


def make_input(seeds: list[Seed], rng: random.Random) -> tuple[bytes, str, list[str]]:
    """One mutated input: (content, file suffix, what was done)."""
    seed = rng.choice(seeds)
    done = [seed.name]
    if seed.kind == "kineto":
        doc = dict(seed.value)
        doc["traceEvents"] = list(doc["traceEvents"])
        for _ in range(rng.choice((1, 1, 2, 3, 6))):
            done.append(rng.choice(KINETO_MUTATIONS)(doc, rng))
        data = json.dumps(doc, allow_nan=True, separators=rng.choice(((",", ":"), (", ", ": ")))).encode()
        suffix = ".json"
        if rng.random() < 0.1:
            data, what = numbers_swapped(data, rng)
            done.append(what)
    else:
        space = _xspace_class()()
        space.CopyFrom(seed.value)
        for _ in range(rng.choice((1, 1, 2, 4))):
            done.append(rng.choice(XPLANE_MUTATIONS)(space, rng))
        data = space.SerializeToString()
        suffix = ".xplane.pb"
    if rng.random() < 0.15:
        other = rng.choice(seeds)
        other_bytes = json.dumps(other.value).encode() if other.kind == "kineto" else other.value.SerializeToString()
        for _ in range(rng.choice((1, 1, 3))):
            data, what = mutate_bytes(data, rng, other_bytes)
            done.append(what)
    if rng.random() < 0.05:
        data = gzip.compress(data, compresslevel=1)
        suffix += ".gz"
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data) + 1)]
            done.append("gzip truncated")
        else:
            done.append("gzip")
    return data, suffix, done


def fuzz(seconds: float, seed: int, save: Path | None, max_inputs: int | None = None, rerun_every: int = 10,
         timeout_s: float = 20.0, worker: int = 0) -> Stats:
    """Mutate and run inputs for ``seconds`` (or ``max_inputs``); one process."""
    rng = random.Random(seed * 1_000_003 + worker)
    seeds = kineto_seeds() + xplane_seeds()
    stats = Stats()
    workdir = Path(tempfile.mkdtemp(prefix="traceview-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds and (max_inputs is None or stats.inputs < max_inputs):
            data, suffix, done = make_input(seeds, rng)
            path = workdir / f"input{suffix}"
            for stale in workdir.iterdir():
                stale.unlink()
            path.write_bytes(data)
            result = classify(path, timeout_s=timeout_s, rerun=stats.inputs % rerun_every == 0)
            stats.inputs += 1
            stats.outcomes[result.outcome] += 1
            if result.outcome == "REFUSED":
                stats.refusals[_refusal_kind(result.detail)] += 1
            elif result.outcome != "OK":
                key = (result.outcome, *result.signature)
                if key in stats.failures:
                    stats.failures[key].count += 1
                else:
                    stats.failures[key] = Failure(result.outcome, result.signature, result.detail, done,
                                                  _save(save, data, suffix, result, done))
    finally:
        for stale in workdir.iterdir():
            stale.unlink()
        workdir.rmdir()
    stats.seconds = time.monotonic() - start
    return stats


def _refusal_kind(message: str) -> str:
    """The refusal's reason without the file name: ``invalid JSON``, ``no usable timed events`` …"""
    text = message.split(": ", 1)[-1]
    return text.split(" (")[0].split(";")[0].split(" at byte")[0][:60]


def _save(folder: Path | None, data: bytes, suffix: str, result: Result, done: list[str]) -> str:
    if folder is None:
        return ""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(data).hexdigest()[:12]
    path = folder / f"{result.outcome.lower()}-{digest}{suffix}"
    path.write_bytes(data)
    path.with_name(path.name + ".txt").write_text(
        f"outcome: {result.outcome}\nsignature: {' | '.join(result.signature)}\nmutations: {', '.join(done)}\n"
        f"reproduce: python -m traceview diagnose {path} --format json\n\n{result.detail}\n", encoding="utf-8")
    return str(path)


def _worker(args: tuple[float, int, Path | None, int | None, float, int]) -> Stats:
    seconds, seed, save, max_inputs, timeout_s, worker = args
    return fuzz(seconds, seed, save, max_inputs, timeout_s=timeout_s, worker=worker)


def summary(stats: Stats, show: int = 8) -> str:
    rate = stats.inputs / stats.seconds if stats.seconds else 0.0
    out = io.StringIO()
    out.write(f"{stats.inputs} inputs in {stats.seconds:.0f} s ({rate:.1f} inputs/s)\n")
    out.write("  ".join(f"{name} {stats.outcomes.get(name, 0)}" for name in OUTCOMES) + "\n")
    if stats.refusals:
        top = ", ".join(f"{kind} {n}" for kind, n in stats.refusals.most_common(6))
        out.write(f"refused most often: {top}\n")
    bad = [f for f in stats.failures.values() if f.outcome in ("INTERNAL", "VIOLATION")]
    for failure in sorted(bad, key=lambda f: -f.count)[:show]:
        out.write(f"\n{failure.outcome} ×{failure.count}: {' | '.join(failure.signature)}\n"
                  f"  mutations: {', '.join(failure.mutations)}\n"
                  + (f"  reproducer: {failure.reproducer}\n" if failure.reproducer else "")
                  + "".join(f"  {line}\n" for line in failure.detail.strip().splitlines()[-6:]))
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to run (per worker)")
    parser.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same inputs")
    parser.add_argument("--save", type=Path, default=None, help="folder for reproducers of INTERNAL / VIOLATION")
    parser.add_argument("--max-inputs", type=int, default=None, help="stop after this many inputs (per worker)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, each with its own stream of inputs")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds one input may take before it is a hang")
    parser.add_argument("--max-memory-gb", type=float, default=6.0, help="address-space limit per process")
    args = parser.parse_args(argv)
    limit = int(args.max_memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    os.environ.pop("TRACEVIEW_MAX_BYTES", None)
    jobs = [(args.seconds, args.seed, args.save, args.max_inputs, args.timeout, w) for w in range(args.jobs)]
    if args.jobs == 1:
        stats = _worker(jobs[0])
    else:
        import multiprocessing

        stats = Stats()
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            for part in pool.map(_worker, jobs):
                stats.merge(part)
    sys.stdout.write(summary(stats))
    return 1 if stats.outcomes["INTERNAL"] or stats.outcomes["VIOLATION"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
