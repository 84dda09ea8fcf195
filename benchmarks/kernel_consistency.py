"""Same math, same kernel time? Kernel time per steady step of every TensorFlow mode that runs
TF op kernels (eager, tf.function, fit, graph-v1) of each sample workload, side by side, with
what the trace says about the op kernels that ran: compute ops per step, their mean time, and
the op types only one side ran (fusions such as ``_FusedMatMul``, eager-only casts).

    python -m benchmarks.kernel_consistency

Prints a markdown table, one row per workload and mode, and for every pair more than 2× apart the op-type
difference that explains it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from traceview.loader import diagnose
from traceview.loader import trace_paths
from traceview.normalize import compute_ops, op_name_codes, self_time

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
MODES = ("tf-eager", "tf-function", "tf-fit", "tf-graph-v1")


def op_type(name: str) -> str:
    """The op type: "dense/MatMul:MatMul" → "MatMul"; eager ops are named by their type already."""
    return name.rsplit(":", 1)[-1] if ":" in name and "::" not in name else name


def profile(folder: Path) -> dict[str, object]:
    diag = diagnose(trace_paths(folder)[0])
    ev = diag.timeline.events
    steady = diag.steps.in_steady(ev) & compute_ops(ev)
    n = max(len(diag.steady_positions), 1)
    codes, values = op_name_codes(ev)
    names = [str(values[code]) if code >= 0 else "nan" for code in codes[steady].tolist()]
    times = self_time(ev)[steady]
    types: dict[str, float] = {}
    calls: dict[str, int] = {}
    for name, t in zip(names, times):
        key = op_type(name)
        types[key] = types.get(key, 0.0) + float(t) / n
        calls[key] = calls.get(key, 0) + 1
    threads = (diag.timeline.meta.extra.get("capture") or {}).get("intra_op_threads")
    return {"kernel_ns": diag.steady_attribution()["kernel"], "ops": len(names) / n,
            "mean_op_ns": float(np.mean(times)) if len(times) else 0.0, "types": types, "threads": threads,
            "per_call": {k: types[k] * n / calls[k] for k in types}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    lines = ["| workload | mode | kernel / step | compute ops / step | mean op | intra-op threads |",
             "|---|---|---|---|---|---|"]
    notes: list[str] = []
    for workload in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        rows = {m: profile(workload / m) for m in MODES if (workload / m).is_dir()}
        for mode, r in rows.items():
            lines.append(f"| {workload.name} | {mode} | {r['kernel_ns'] / 1e3:.0f} µs | {r['ops']:.0f} | "
                         f"{r['mean_op_ns'] / 1e3:.1f} µs | {r['threads'] or '?'} |")
        modes = list(rows)
        for i, a in enumerate(modes):
            for b in modes[i + 1:]:
                ka, kb = rows[a]["kernel_ns"], rows[b]["kernel_ns"]
                if min(ka, kb) > 0 and max(ka, kb) / min(ka, kb) > 2:
                    ta, tb = rows[a]["types"], rows[b]["types"]
                    only_a = sorted((t for t in ta if t not in tb), key=lambda t: -ta[t])[:4]
                    only_b = sorted((t for t in tb if t not in ta), key=lambda t: -tb[t])[:4]
                    common = [t for t in rows[a]["per_call"] if t in rows[b]["per_call"]]
                    ratio = float(np.median([rows[a]["per_call"][t] / max(rows[b]["per_call"][t], 1.0)
                                             for t in common])) if common else float("nan")
                    notes.append(
                        f"- {workload.name}: {a} {ka / 1e3:.0f} µs vs {b} {kb / 1e3:.0f} µs "
                        f"({max(ka, kb) / min(ka, kb):.1f}×): {rows[a]['ops']:.0f} vs {rows[b]['ops']:.0f} compute "
                        f"ops per step at {rows[a]['mean_op_ns'] / 1e3:.1f} vs {rows[b]['mean_op_ns'] / 1e3:.1f} µs "
                        f"each; the {len(common)} op types both ran take {ratio:.1f}× as long per call in {a} (median); "
                        f"only in {a}: {', '.join(only_a) or '—'}; only in {b}: {', '.join(only_b) or '—'}")
    print("\n".join(lines))
    print()
    print("\n".join(notes) if notes else "every pair within 2×")


if __name__ == "__main__":
    main()
