"""Whole-process speed and memory of ``traceview diagnose`` from 54 MB to 1 GB, next to the peers.

Usage::

    .venv/bin/python benchmarks/bench_scale.py [--sizes 64,256,1024] [--repeat N] [--hta PYTHON]
                                               [--xplane FILE] [--write-readme]

What it measures, each in a fresh child process (wall clock and peak RSS of that process):

- **bare parse**: ``gzip`` + ``orjson.loads`` of the 54 MB shared trace (the floor any JSON reader
  pays) and ``traceview diagnose --format json`` of the same file; their ratio.
- **HTA** (``--hta`` names a Python with ``holistictraceanalysis==0.5.0`` installed): load +
  temporal breakdown of the same trace; the ratio HTA / traceview.
- **the ladder**: raw-JSON traces of ~64 MB, 256 MB and 1 GB built from the real trace by
  replicating its events with shifted timestamps and fresh correlation / external ids
  (``build_ladder``); MB/s of raw JSON, peak RSS / raw size, and the time per MB across the
  ladder (linear within 10 % is the target).
- **XPlane** (``--xplane``): ``traceview diagnose`` against xprof's own ``overview_page``
  conversion of a copy of the file (xprof writes cache files next to its input).

Every program is timed as installed: traceview's modules are byte-compiled first, as ``pip
install`` does for the packages it installs (HTA's and xprof's were, by theirs). An editable
install run with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile each of its modules from
source at every start (~0.05 s here).

Figures go to stdout as a markdown table; ``--write-readme`` also puts it in benchmarks/README.md
between the ``<!-- scale-table -->`` markers. Timings on a shared 2-core machine are noisy: each
figure is the median of ``--repeat`` runs, the commands compared run in turn (the ladder's rungs
too: its line compares them), and ratios are taken within one run.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import os
import platform
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "traces" / "torch_gpu"
SOURCE = SHARED / "v100_2rank_rank1_large.json.gz"
CACHE = ROOT / "benchmarks" / ".cache"
README = ROOT / "benchmarks" / "README.md"
MARK_BEGIN, MARK_END = "<!-- scale-table -->", "<!-- /scale-table -->"

# A child runs its body as a script would (its peak RSS is read from the kernel when it ends).
_CHILD = """
import sys
{body}
"""
# The bare parse as a script does it, and the same script ending as diagnose does, without the
# interpreter's teardown (which here frees every parsed object: a quarter of its time).
_BARE_PARSE = """
import gzip, orjson
raw = open(sys.argv[1], "rb").read()
doc = orjson.loads(gzip.decompress(raw) if raw[:2] == b"\\x1f\\x8b" else raw)
"""
_BARE_PARSE_NO_TEARDOWN = _BARE_PARSE + "import os; os._exit(0)\n"
# As the console script runs it (the read-ahead and the end without teardown apply).
_DIAGNOSE = """
from traceview.__main__ import main
sys.argv[1:] = ["diagnose", sys.argv[1], "--format", "json", "-o", sys.argv[2]]
main()
"""
_HTA = """
import logging, os, shutil, tempfile
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp(dir=sys.argv[2])
shutil.copy(sys.argv[1], os.path.join(folder, "rank1.json.gz"))
analysis = TraceAnalysis(trace_dir=folder)
analysis.get_temporal_breakdown(visualize=False)
"""
_XPROF = """
import shutil, tempfile, os
from xprof.convert.raw_to_tool_data import xspace_to_tool_data
folder = tempfile.mkdtemp(dir=sys.argv[2])
copy = os.path.join(folder, os.path.basename(sys.argv[1]))
shutil.copy(sys.argv[1], copy)
xspace_to_tool_data([copy], "overview_page", {})
"""


def run_child(python: str, body: str, *args: str) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of ``body`` in a fresh interpreter, timed from before the
    interpreter starts to its exit (imports included, as a user waits for it)."""
    script = _CHILD.format(body=body)
    with tempfile.TemporaryFile() as errors:  # (a file, not a pipe: a chatty child cannot block on it)
        started = time.perf_counter()
        child = subprocess.Popen([python, "-c", script, *args], stdout=subprocess.DEVNULL, stderr=errors, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            errors.seek(0)
            raise RuntimeError(f"child failed ({child.returncode}): {errors.read().decode(errors='replace')[-600:]}")
    return elapsed, usage.ru_maxrss * 1024  # (KiB on Linux)


def median_runs(repeat: int, commands: list[tuple[str, str, tuple[str, ...]]],
                emptied: Path | None = None) -> list[tuple[float, int]]:
    """(median wall, peak RSS) of each command, the commands run in turn ``repeat`` times, so that a
    slow spell of a shared machine falls on all of them alike and not on one; ``emptied``, a
    folder emptied after each run, outside its time (the peers' copies of the trace)."""
    runs: list[list[tuple[float, int]]] = [[] for _ in commands]
    for _ in range(repeat):
        for found, (python, body, args) in zip(runs, commands):
            found.append(run_child(python, body, *args))
            for left in emptied.iterdir() if emptied is not None else ():
                shutil.rmtree(left, ignore_errors=True)
    return [(statistics.median(r[0] for r in found), max(r[1] for r in found)) for found in runs]


def build_ladder(target_mb: int) -> Path:
    """A raw-JSON Kineto trace of about ``target_mb`` MB made from the real V100 trace: its events
    replicated with timestamps shifted by the trace's span per copy and correlation / external ids
    made unique per copy, so steps, launches and kernels stay as consistent as in the original."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / f"v100_x{target_mb}MB.json"
    if out.exists():
        return out
    doc = orjson.loads(gzip.decompress(SOURCE.read_bytes()))
    events = doc.pop("traceEvents")
    source_bytes = len(orjson.dumps(events))
    copies = max(1, round(target_mb * 1e6 / source_bytes))
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    start = min(e["ts"] for e in timed)
    span = max(e["ts"] + (e.get("dur") or 0) for e in timed) - start + 1000  # µs, plus a 1 ms gap
    id_stride = 10 ** 9
    tmp = out.with_suffix(".tmp")
    with tmp.open("wb") as handle:
        header = orjson.dumps(doc)[:-1]
        handle.write(header + b', "traceEvents": [\n')
        for k in range(copies):
            batch = []
            for ev in events:
                if k and ev.get("ph") == "M":
                    continue  # track names once
                ev = dict(ev)
                if isinstance(ev.get("ts"), (int, float)):
                    ev["ts"] = ev["ts"] + k * span
                if ev.get("ph") in ("s", "f", "t") and isinstance(ev.get("id"), int):
                    ev["id"] = ev["id"] + k * id_stride
                args = ev.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for key in ("correlation", "External id"):
                        if isinstance(args.get(key), int) and args[key] > 0:
                            args[key] = args[key] + k * id_stride
                    ev["args"] = args
                batch.append(ev)
            handle.write((b",\n" if k else b"") + orjson.dumps(batch)[1:-1])
        handle.write(b"\n]}\n")
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,256,1024", help="ladder sizes in MB (comma separated)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hta", help="a Python interpreter with holistictraceanalysis==0.5.0")
    parser.add_argument("--xplane", type=Path, help="an .xplane.pb to time against xprof's overview_page")
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args(argv)
    if not SOURCE.exists():
        sys.exit(f"bench_scale: {SOURCE} is missing (the shared traces sit beside the repository)")
    python = sys.executable
    compileall.compile_dir(ROOT / "traceview", quiet=1)  # (as installed: see the module's docstring)
    # The peers read a copy of the trace each run (xprof writes cache files beside its input):
    # the copies go in here, each removed after its run, outside the timed runs.
    scratch = Path(tempfile.mkdtemp(prefix="bench_scale-"))
    try:
        _measure(args, python, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _measure(args: argparse.Namespace, python: str, scratch: Path) -> None:
    out_json = scratch / "report.json"
    copies = scratch / "copies"
    copies.mkdir()
    rows: list[dict[str, Any]] = []

    raw_mb = len(gzip.decompress(SOURCE.read_bytes())) / 1e6
    peers = [(args.hta, _HTA, (str(SOURCE), str(copies)))] if args.hta else []
    bare, bare_quick, ours, *hta_run = median_runs(args.repeat, [
        (python, _BARE_PARSE, (str(SOURCE),)), (python, _BARE_PARSE_NO_TEARDOWN, (str(SOURCE),)),
        (python, _DIAGNOSE, (str(SOURCE), str(out_json))), *peers], emptied=copies)
    rows.append({"what": f"{SOURCE.name} ({raw_mb:.1f} MB raw)", "bare_s": bare[0], "bare_rss": bare[1],
                 "bare_quick_s": bare_quick[0], "ours_s": ours[0], "ours_rss": ours[1], "raw_mb": raw_mb})
    hta = hta_run[0] if hta_run else None

    ladder = []
    rungs = [build_ladder(int(size)) for size in args.sizes.split(",") if size]
    # The rungs in turn, like the commands above: the line through them compares rungs, so a slow
    # spell of the machine must fall on all of them alike.
    timed = median_runs(args.repeat, [(python, _DIAGNOSE, (str(path), str(out_json))) for path in rungs])
    for path, (wall, rss) in zip(rungs, timed):
        mb = path.stat().st_size / 1e6
        ladder.append({"mb": mb, "events": _count_events(path), "wall": wall, "rss": rss})
        print(f"ladder {mb:.0f} MB: {wall:.1f} s, {rss / 1e9:.2f} GB", file=sys.stderr)

    xplane = None
    if args.xplane:
        mb = args.xplane.stat().st_size / 1e6
        theirs, ours_x = median_runs(args.repeat, [(python, _XPROF, (str(args.xplane), str(copies))),
                                                   (python, _DIAGNOSE, (str(args.xplane), str(out_json)))],
                                     emptied=copies)
        xplane = {"name": args.xplane.name, "mb": mb, "xprof": theirs, "ours": ours_x}

    table = render(rows, hta, ladder, xplane)
    print(table)
    if args.write_readme:
        text = README.read_text()
        begin, end = text.index(MARK_BEGIN) + len(MARK_BEGIN), text.index(MARK_END)
        README.write_text(text[:begin] + "\n" + table + "\n" + text[end:])


def _count_events(path: Path) -> int:
    """Array elements in a ladder file (counted once by decoding, then remembered beside it)."""
    meta = path.with_suffix(".events")
    if meta.exists():
        return int(meta.read_text())
    from traceview.readers._json_stream import EventArrayReader
    import msgspec

    reader = EventArrayReader(path, msgspec.json.Decoder(list[msgspec.Raw]))
    for _ in reader.batches():
        pass
    meta.write_text(str(reader.events_seen))
    return reader.events_seen


def render(rows: list[dict[str, Any]], hta: tuple[float, int] | None, ladder: list[dict[str, Any]],
           xplane: dict[str, Any] | None) -> str:
    versions = _versions()
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} cores, {_memory_gib():.0f} GiB RAM; "
             f"Python {platform.python_version()}; {versions}. Wall clock of the whole process "
             f"(interpreter start to exit), median of runs; peak RSS of that process.", ""]
    lines += ["| trace | bare gzip + orjson.loads | traceview diagnose | ratio (≤ 1.0 target) | bare parse ending "
              "without teardown | ratio to it |"
              + (" HTA load + temporal breakdown | HTA / traceview (≥ 10 target) |" if hta else ""),
              "|---|---|---|---|---|---|" + ("---|---|" if hta else "")]
    for r in rows:
        line = (f"| {r['what']} | {r['bare_s']:.2f} s, {r['bare_rss'] / 1e6:.0f} MB | {r['ours_s']:.2f} s, "
                f"{r['ours_rss'] / 1e6:.0f} MB | {r['ours_s'] / r['bare_s']:.2f} | {r['bare_quick_s']:.2f} s | "
                f"{r['ours_s'] / r['bare_quick_s']:.2f} |")
        if hta:
            line += f" {hta[0]:.2f} s, {hta[1] / 1e6:.0f} MB | {hta[0] / r['ours_s']:.1f} |"
        lines.append(line)
    if ladder:
        base = ladder[0]["wall"] / ladder[0]["mb"]
        fixed, per_mb = _line([step["mb"] for step in ladder], [step["wall"] for step in ladder])
        lines += ["", "| ladder trace (raw JSON) | events | diagnose | MB/s (≥ 100 target) | peak RSS | RSS / raw "
                      "(≤ 2 target) | s per MB vs smallest | off the line |", "|---|---|---|---|---|---|---|---|"]
        for step in ladder:
            off = step["wall"] / (fixed + per_mb * step["mb"]) - 1
            lines.append(f"| {step['mb']:.0f} MB | {step['events']:,} | {step['wall']:.1f} s | "
                         f"{step['mb'] / step['wall']:.0f} | {step['rss'] / 1e9:.2f} GB | "
                         f"{step['rss'] / 1e6 / step['mb']:.2f} | {step['wall'] / step['mb'] / base:.2f} | "
                         f"{off:+.0%} |")
        lines += ["", f"Least-squares line through the ladder: wall ≈ {fixed:.2f} s + {per_mb * 1e3:.2f} ms per MB "
                      "(\"off the line\": each rung's time against it)."]
    if xplane:
        theirs, ours = xplane["xprof"], xplane["ours"]
        lines += ["", "| XPlane | xprof overview_page | traceview diagnose | xprof / traceview (≥ 3 target) |",
                  "|---|---|---|---|",
                  f"| {xplane['name']} ({xplane['mb']:.0f} MB) | {theirs[0]:.1f} s, {theirs[1] / 1e9:.2f} GB | "
                  f"{ours[0]:.1f} s, {ours[1] / 1e9:.2f} GB | {theirs[0] / ours[0]:.1f} |"]
    return "\n".join(lines)


def _line(x: list[float], y: list[float]) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line through the points."""
    n = len(x)
    mean_x, mean_y = sum(x) / n, sum(y) / n
    spread = sum((a - mean_x) ** 2 for a in x)
    slope = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y)) / spread if spread else 0.0
    return mean_y - slope * mean_x, slope


def _versions() -> str:
    from importlib import metadata

    names = ("numpy", "pandas", "orjson", "msgspec", "isal")
    return ", ".join(f"{n} {metadata.version(n)}" for n in names)


def _memory_gib() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        return 0.0


if __name__ == "__main__":
    main()
