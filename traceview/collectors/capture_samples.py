"""Regenerate ``sample_traces/``: every workload x framework-mode pair, captured small, on the CPU.

    python -m traceview.collectors.capture_samples            # all workloads into sample_traces/
    python -m traceview.collectors.capture_samples --workloads mlp2,lstm --out /tmp/samples

Each pair runs in its own Python process (as ``traceview collect`` does by default) with one
thread, so the timings are quiet and no capture inherits another's caches; each workload gets a
fresh inductor cache, so the torch-compile samples show a complete first compile. Step counts are
small (1 cold step, 4 steady ones; 20 for the 3x2 gradient descent, whose steps are tiny; 2 for
the LSTM and 3 for the transformer, whose Keras loops write many events per step) to keep each
trace to a few hundred KiB. ``sample_traces/README.md`` is rewritten from the manifests.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from traceview.collectors import manifest as mf
from traceview.collectors.runner import CaptureSettings, PairOutcome, collect
from traceview.collectors.workloads import MODE_HELP, WORKLOADS, pairs

# Steady steps per workload for the samples (one cold step always precedes them; no warm-up).
SAMPLE_STEPS: dict[str, int] = {name: 4 for name in WORKLOADS}
SAMPLE_STEPS["linreg-gd"] = 20
SAMPLE_STEPS["lstm"] = 2  # Keras' LSTM loop writes ~150 KiB of events per step
# Keras eager writes ~9,600 events (~150 KiB) per transformer step. 3 rather than 2: under the profiler
# TorchScript's step 2 still holds one-time work (its backward graph is specialized a call later; 127 ms
# against 9 ms), which with 2 steady steps would be half of them.
SAMPLE_STEPS["transformer"] = 3

REPO_ROOT = Path(__file__).resolve().parents[2]  # traceview/collectors/ -> the repository


def capture_all(
    out: Path, workloads: list[str], threads: int, frameworks: str = "all", modes: str = "all"
) -> dict[str, list[PairOutcome]]:
    results: dict[str, list[PairOutcome]] = {}
    for name in workloads:
        # A fresh inductor cache per workload, so each torch-compile sample shows a full first
        # compile (code generation and C++ builds), as a first run on a new machine does.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="traceview-inductor-")
        settings = CaptureSettings(steps=SAMPLE_STEPS[name], warmup=0, threads=threads)
        results[name] = collect(name, out / name, frameworks, modes, settings, isolate=True, overwrite=True)
    return results


def _steps_line() -> str:
    """"4 (linreg-gd: 20, lstm: 2)": the usual count, then the workloads that differ."""
    usual = max(set(SAMPLE_STEPS.values()), key=list(SAMPLE_STEPS.values()).count)
    others = ", ".join(f"{name}: {n}" for name, n in SAMPLE_STEPS.items() if n != usual)
    return f"{usual} ({others})" if others else str(usual)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1e3:.3g}"


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write_readme(out: Path) -> Path:
    """Describe every capture under ``out`` from its manifest (so the README cannot drift)."""
    manifests: list[tuple[Path, dict[str, Any]]] = []
    for name, spec in WORKLOADS.items():  # definition order, then each framework's mode order
        for fw, mode in pairs(spec):
            path = out / name / f"{fw}-{mode}" / mf.MANIFEST_NAME
            if path.is_file():
                manifests.append((path.parent, mf.read(path)))
    versions: dict[str, str] = {}
    hosts: set[str] = set()
    threads: set[str] = set()
    for _, m in manifests:
        versions.update(m.get("versions", {}))
        hosts.add(f"{m['host']['cpu']} ({m['host']['cpu_count']} cores), {m['host']['platform']}")
        threads.add(str(m["threads"].get("requested")))
    lines = [
        "# Sample traces",
        "",
        "Small real CPU captures of every workload x framework-mode pair that `traceview collect --list` shows,",
        "written exactly as `traceview collect` writes them: `<workload>/<framework>-<mode>/` with the native trace",
        "and a `manifest.json` (workload spec, versions, threads, cold/steady steps, per-step wall time with and",
        "without the profiler, losses and the cross-framework loss-parity verdict).",
        "",
        "- torch: Kineto JSON `<host>_<pid>.<ms>.pt.trace.json.gz` (`tensorboard_trace_handler`, gzip), step markers",
        "  `ProfilerStep#N` with N = step index.",
        "- TensorFlow: TensorBoard layout `plugins/profile/<run>/<host>.xplane.pb`; step markers",
        "  `Trace('train', step_num=N, _r=1)` on the `python` line of `/host:CPU`.",
        "- JAX: the same TensorBoard layout, `plugins/profile/<run>/<host>.xplane.pb` (Python tracer and HLO",
        "  protos off; the `<host>.trace.json.gz` JAX writes beside it, a trace-viewer copy of the same events,",
        "  is removed); step markers `StepTraceAnnotation('train', step_num=N)` on the host's `python` line.",
        "- numpy (gradient-descent baselines only): numpy has no profiler; `numpy.steps.pt.trace.json.gz` holds",
        "  `ProfilerStep#N` spans timed with `perf_counter_ns` and no op events.",
        "",
        "Step 0 is the cold step (tracing, compilation, graph construction) and lies inside every trace;",
        "torchscript marks steps 0 and 1 cold (its profiling executor specializes on the second call).",
        "Each workload's torch-compile capture started from an empty inductor cache, so its cold step holds",
        "the whole first compile (dynamo tracing, AOT autograd, inductor code generation and C++ builds);",
        "jax-jit's cold step holds the step's tracing, lowering and XLA compile.",
        "",
        "Loss parity: every capture's first 5 losses agree with torch eager, TF eager and JAX jit (and the",
        "numpy baseline for linreg-gd*) within rtol 1e-4; mlp-bn is checked with dropout off (its masks come",
        "from each framework's own generator) while its traces and timings use real dropout. Captures made",
        "before the JAX collector existed were checked against torch and TF only (their manifests list what",
        "they were compared with).",
        "",
        "## How they were made",
        "",
        "```",
        "python -m traceview.collectors.capture_samples",
        "```",
        "",
        f"Each pair ran in its own Python process with {', '.join(sorted(threads))} thread(s); steady steps: "
        f"{_steps_line()}, no warm-up steps.",
        "",
        "- machine: " + "; ".join(sorted(hosts)),
        "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "",
        "Timings on a shared CPU machine are indicative only; the manifests keep every step's time.",
        "",
        "## Captures",
        "",
        "| workload | pair | what runs | trace | KiB | cold ms | steady median ms (profiled / unprofiled) | parity |",
        "| --- | --- | --- | --- | ---: | ---: | --- | --- |",
    ]
    for folder, m in manifests:
        t = m["timing"]
        p = m.get("parity", {})
        ok = {True: "ok", False: "MISMATCH", None: "unchecked"}[p.get("ok")]
        if p.get("ok"):
            worst = max(p.get("max_rel_diff", {}).values(), default=0.0)
            ok = f"ok ({worst:.0e})"
        trace = m["trace"]
        what = MODE_HELP[(m["framework"], m["mode"])]
        fallbacks = (m.get("compile_report") or {}).get("fell_back_to_eager") or []
        if fallbacks:
            what += f"; dynamo fell back to eager ({'; '.join(fallbacks)})"
        lines.append(
            f"| {m['workload']['name']} | {m['framework']}-{m['mode']} | {what} | "
            f"`{trace['path']}` | {trace['bytes'] / 1024:.1f} | {_ms(t['cold_profiled_s'])} | "
            f"{_ms(t['steady_median_profiled_s'])} / {_ms(t['steady_median_unprofiled_s'])} | {ok} |"
        )
    total = _size(out)
    lines += ["", f"Total size: {total / 1e6:.1f} MB.", ""]
    lines += ["## Workloads", ""]
    for spec in WORKLOADS.values():
        lines.append(f"- `{spec.name}`: {spec.description}. {spec.question[:1].upper() + spec.question[1:]}")
    lines.append("")
    readme = out / "README.md"
    readme.write_text("\n".join(lines), encoding="utf-8")
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "sample_traces")
    parser.add_argument("--workloads", default="all", help="comma-separated names, or all")
    parser.add_argument("--frameworks", default="all", help="comma-separated frameworks, or all")
    parser.add_argument("--modes", default="all", help="comma-separated modes, or all")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--readme-only", action="store_true", help="only rewrite README.md from the manifests")
    args = parser.parse_args(argv)
    names = list(WORKLOADS) if args.workloads == "all" else [n.strip() for n in args.workloads.split(",")]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads: {', '.join(unknown)}")
    args.out.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    if not args.readme_only:
        results = capture_all(args.out, names, args.threads, args.frameworks, args.modes)
        failed = [f"{n} {o.label}: {o.error}" for n, outs in results.items() for o in outs if o.error]
    readme = write_readme(args.out)
    print(f"wrote {readme} ({_size(args.out) / 1e6:.1f} MB under {args.out})", file=sys.stderr)
    for line in failed:
        print(f"failed: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
