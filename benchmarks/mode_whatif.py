"""Eager → compiled, predicted from the eager trace: every sample workload's eager capture replayed
with its launch/dispatch cut to what the compiled mode's capture of the same step spends, beside
that capture's measured step.

    python -m benchmarks.mode_whatif [--markdown]

Per workload and compiled mode (tf.function, graph-v1, XLA; TorchScript, torch.compile):

- **eager**: the eager capture's mean steady step;
- **no dispatch**: the eager trace replayed without launch/dispatch (``--without launch_overhead``):
  the floor no compiler of the same ops reaches;
- every replay is also without the step thread's pauses (``idle.paused``: another process took
  the CPU), and the measured step less its own: the machine's, not the mode's;
- **its dispatch**: replayed with the compiled capture's launch/dispatch per step spread over the
  eager ops (``--dispatch-per-op``: the compiled capture's launch/dispatch time per steady step /
  the eager trace's framework ops per step);
- **measured**: the compiled capture's mean steady step; **ratio** predicted (its dispatch) /
  measured;
- **kernel eager / compiled**: the math per step on each side. A compiler that fuses ops changes
  it (fewer, larger kernels), which no replay of the eager trace can see: where the two differ,
  the ratio misses by about that difference.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import traceview
from traceview.loader import trace_paths

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
GPU_CAPTURES = Path(__file__).resolve().parent / "gpu" / "captures"
# The machine's, not the program's: the step thread stopped for another process (docs/attribution.md).
PAUSES = ["idle.paused"]
# The eager mode of each framework and the sample modes that compile its step (sample_traces/README.md).
COMPILED = {"tf-eager": ("tf-function", "tf-graph-v1", "tf-xla"),
            "torch-eager": ("torch-torchscript", "torch-compile")}
# On the GPU (benchmarks/gpu/captures, an H200): torch eager against the same step compiled and
# replayed as CUDA graphs (torch.compile(mode='reduce-overhead')).
GPU_COMPILED = {"torch-eager": ("torch-cudagraphs",)}
# Where the captures are, what their workloads are called in the table, and which pairs they hold.
SOURCES = ((SAMPLES, "{}", COMPILED), (GPU_CAPTURES, "{} (H200)", GPU_COMPILED))


def rows() -> tuple[list[list[str]], list[tuple[float, float]]]:
    """The table's rows, and per row the prediction's miss and the kernel difference (ns)."""
    out, misses = [], []
    pairs = [(workload, label, eager, modes) for root, label, table in SOURCES if root.is_dir()
             for workload in sorted(p for p in root.iterdir() if p.is_dir()) for eager, modes in table.items()]
    for workload, label, eager, compiled_modes in pairs:
        if not (workload / eager).is_dir():
            continue
        eager_path = trace_paths(workload / eager)[0]
        eager_diag = traceview.diagnose(eager_path)
        floor = traceview.whatif(eager_path, without=["launch_overhead", *PAUSES])
        ops = eager_diag.launch.ops_per_step
        for mode in compiled_modes:
            if not (workload / mode).is_dir():
                continue
            measured = traceview.diagnose(trace_paths(workload / mode)[0])
            dispatch_ns = measured.steady_attribution().get("launch_overhead", 0.0)
            per_op_us = dispatch_ns / ops / 1e3 if ops > 0 else 0.0
            predicted = traceview.whatif(eager_path, without=PAUSES, dispatch_per_op_us=per_op_us)
            kernels = (eager_diag.steady_attribution()["kernel"], measured.steady_attribution()["kernel"])
            step = float(measured.steps.table["duration"][measured.steady_positions].mean()) \
                - sum(measured.steady_details().get(detail, 0.0) for detail in PAUSES)
            out.append([label.format(workload.name), f"{eager} → {mode}", _ms(predicted.steady_step_ns),
                        _ms(floor.predicted_step_ns), f"{_ms(predicted.predicted_step_ns)} ({per_op_us:.1f} µs/op)",
                        _ms(step), f"{predicted.predicted_step_ns / step:.2f}" if step > 0 else "—",
                        f"{_ms(kernels[0])} / {_ms(kernels[1])}"])
            misses.append((predicted.predicted_step_ns - step, kernels[0] - kernels[1]))
    return out, misses


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a markdown table (for benchmarks/truth/README.md)")
    args = parser.parse_args()
    head = ["workload", "eager → compiled", "eager", "no dispatch", "its dispatch", "measured", "ratio",
            "kernel eager / compiled"]
    table, misses = rows()
    within = sum(abs(miss) <= max(0.15 * float(row[5].split()[0]) * 1e6, 1e5) for row, (miss, _) in zip(table, misses))
    kernel = sum(abs(miss - math) <= max(0.1 * abs(miss), 1e5) for miss, math in misses)
    summary = (f"{within}/{len(table)} within ±15 % (or ±0.1 ms) of the measured step; the miss is the "
               f"kernel difference (within 10 % or 0.1 ms) in {kernel}/{len(table)}")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in table:
            print("| " + " | ".join(row) + " |")
        print(f"\n{summary}")
        return
    widths = [max(len(head[i]), *(len(r[i]) for r in table)) for i in range(len(head))]
    for row in [head, *table]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(f"\n{summary}")


if __name__ == "__main__":
    main()
