"""How long traceview takes to read and diagnose a trace, next to a bare JSON parse.

Usage::

    .venv/bin/python benchmarks/bench_load.py [TRACE ...] [--repeat N] [--cpu-time] [--profile] [--json OUT]

For each trace (default: the two large shared torch GPU traces) it times, best of N runs,

(a) the bare parse: gunzip + ``orjson.loads`` (the floor for any JSON trace reader),
(b) ``traceview.loader.load_with_steps`` (read + normalize + steps),
(c) ``traceview.loader.diagnose`` (everything ``traceview diagnose`` computes),

and prints the ratio diagnose / bare parse, input events per second and peak RSS, then where the
time goes stage by stage. Each trace is measured in a fresh child process so that its peak RSS
(``resource.getrusage``) is its own. ``--profile`` runs ``diagnose`` once under cProfile and
prints the top functions. ``--cpu-time`` times with process CPU time instead of the wall
clock (steadier on a busy shared machine). Results and the machine are in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "torch_gpu"
DEFAULT_TRACES = [TRACES / "v100_2rank_rank1_large.json.gz", TRACES / "resnet_v100_1rank.pt.trace.json.gz"]


def _rss_mb() -> float:
    """Peak resident set size of this process so far, MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


# Wall-clock by default; ``--cpu-time`` switches to this process's CPU time, which a busy shared
# machine disturbs much less (everything measured here runs on one thread).
_clock: Callable[[], float] = time.perf_counter


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best time of ``repeat`` calls, and the last result."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        result = None
        gc.collect()
        started = _clock()
        result = fn()
        best = min(best, _clock() - started)
    return best, result


def measure(path: Path, repeat: int) -> dict[str, Any]:
    """All timings for one trace, in this process (called in a child process by ``main``)."""
    import orjson

    from traceview.analyzers.attribution import attribute
    from traceview.analyzers.device_time import device_time
    from traceview.analyzers.diagnosis import diagnose_timeline
    from traceview.loader import diagnose
    from traceview.analyzers.launch import launch_stats
    from traceview.analyzers.steps import find_steps
    from traceview.analyzers.top import top_kernels, top_ops
    from traceview.loader import load_with_steps
    from traceview.normalize import normalize
    from traceview.readers import detect
    from traceview.readers._io import read_bytes

    out: dict[str, Any] = {"trace": path.name, "file_mb": path.stat().st_size / 1e6, "rss_start_mb": _rss_mb()}
    raw = read_bytes(path)
    out["raw_mb"] = len(raw) / 1e6
    del raw

    def bare() -> int:
        doc = orjson.loads(read_bytes(path))
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        return len(events)

    def bare_gc_paused() -> int:
        gc.disable()
        try:
            return bare()
        finally:
            gc.enable()

    out["gunzip_s"], _ = _best(lambda: len(read_bytes(path)), repeat)
    out["parse_s"], out["input_events"] = _best(bare, repeat)
    out["parse_gc_paused_s"], _ = _best(bare_gc_paused, repeat)
    out["rss_parse_mb"] = _rss_mb()
    out["load_s"], (timeline, _steps) = _best(lambda: load_with_steps(path), repeat)
    out["kept_events"] = len(timeline.events)
    del timeline, _steps
    out["rss_load_mb"] = _rss_mb()
    out["diagnose_s"], _ = _best(lambda: diagnose(path), repeat)
    out["rss_diagnose_mb"] = _rss_mb()

    # Stage by stage: each stage timed on its own, best of ``repeat`` fresh runs of the pipeline.
    reader = detect(path)
    stages: dict[str, float] = {}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        started = _clock()
        result = fn()
        stages[name] = min(stages.get(name, float("inf")), _clock() - started)
        return result

    def pipeline() -> None:
        timeline = timed("read (parse + build columns)", lambda: reader.read(path))
        timed("normalize (nesting, launchers)", lambda: normalize(timeline))
        steps = timed("steps", lambda: find_steps(timeline))
        timed("attribution", lambda: attribute(timeline, steps))
        timed("top kernels", lambda: top_kernels(timeline, steps))
        timed("top ops", lambda: top_ops(timeline, steps))
        timed("launch stats", lambda: launch_stats(timeline, steps))
        timed("device time", lambda: device_time(timeline))
        timed("diagnose_timeline (all analyses + findings)", lambda: diagnose_timeline(timeline, steps))

    for _ in range(repeat):
        gc.collect()
        pipeline()
    out["stages_s"] = stages
    return out


def profile(path: Path, top: int) -> None:
    from traceview.loader import diagnose

    diagnose(path)  # warm imports and caches first
    profiler = cProfile.Profile()
    profiler.enable()
    diagnose(path)
    profiler.disable()
    for key in ("tottime", "cumulative"):
        print(f"\n--- {path.name}: top {top} functions by {key} ---")
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.strip_dirs().sort_stats(key).print_stats(top)


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    import numpy
    import orjson
    import pandas

    return {
        "cpu": cpu,
        "cores": cores,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "pandas": pandas.__version__,
        "orjson": orjson.__version__,
        "os": platform.platform(),
    }


def _table(results: list[dict[str, Any]]) -> str:
    head = (f"{'trace':<38} {'MB raw':>7} {'events':>8} {'parse s':>8} {'load s':>7} {'diag s':>7} "
            f"{'diag/parse':>10} {'events/s':>9} {'RSS MB':>7}")
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r['trace'][:38]:<38} {r['raw_mb']:>7.1f} {r['input_events']:>8,} {r['parse_s']:>8.2f} "
            f"{r['load_s']:>7.2f} {r['diagnose_s']:>7.2f} {r['diagnose_s'] / r['parse_s']:>10.1f} "
            f"{r['input_events'] / r['diagnose_s']:>9,.0f} {r['rss_diagnose_mb']:>7.0f}"
        )
    return "\n".join(lines)


def _stages(r: dict[str, Any]) -> str:
    lines = [f"{r['trace']}: stages (best of runs; bare parse {r['parse_s']:.2f} s, "
             f"{r['parse_gc_paused_s']:.2f} s with the garbage collector paused; "
             f"peak RSS after parse / load / diagnose: "
             f"{r['rss_parse_mb']:.0f} / {r['rss_load_mb']:.0f} / {r['rss_diagnose_mb']:.0f} MB)"]
    for name, seconds in r["stages_s"].items():
        lines.append(f"  {name:<46} {seconds:>6.2f} s")
        if name.startswith("read"):
            parse = r["parse_gc_paused_s"]
            lines.append(f"  {'  gunzip':<46} {r['gunzip_s']:>6.2f} s")
            lines.append(f"  {'  orjson.loads (garbage collector paused)':<46} {parse - r['gunzip_s']:>6.2f} s")
            lines.append(f"  {'  building columns':<46} {seconds - parse:>6.2f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--repeat", "-n", type=int, default=3, help="runs per measurement; the best is kept")
    parser.add_argument("--profile", action="store_true", help="print cProfile hotspots of one diagnose run")
    parser.add_argument("--top", type=int, default=25, help="functions to show with --profile")
    parser.add_argument("--cpu-time", action="store_true", help="time with process CPU time instead of wall clock")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    traces = args.traces or DEFAULT_TRACES
    missing = [t for t in traces if not t.exists()]
    if missing:
        print(f"missing trace(s): {', '.join(map(str, missing))}", file=sys.stderr)
        return 1
    from traceview.readers import format_of

    not_json = [t for t in traces if format_of(t) != "kineto-json"]
    if not_json:  # (its floor, the bare parse, is a JSON parse)
        print(f"bench_load times Kineto JSON traces; not one: {', '.join(map(str, not_json))} "
              "(an XPlane: benchmarks/bench_scale.py --xplane FILE)", file=sys.stderr)
        return 2

    global _clock
    if args.cpu_time:
        _clock = time.process_time
    if args.child:  # one trace, results as JSON on stdout
        print(json.dumps(measure(traces[0], args.repeat)))
        return 0

    results = []
    for trace in traces:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", "--repeat", str(args.repeat),
             *(["--cpu-time"] if args.cpu_time else []), str(trace)],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))

    info = machine()
    print(f"machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}, numpy {info['numpy']}, "
          f"pandas {info['pandas']}, orjson {info['orjson']}; best of {args.repeat}, "
          f"{'CPU time' if args.cpu_time else 'wall clock'}\n")
    print(_table(results))
    for r in results:
        print()
        print(_stages(r))
    if args.profile:
        for trace in traces:
            profile(trace, args.top)
    if args.json:
        clock = "cpu" if args.cpu_time else "wall"
        args.json.write_text(json.dumps({"machine": info, "repeat": args.repeat, "clock": clock, "results": results},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
