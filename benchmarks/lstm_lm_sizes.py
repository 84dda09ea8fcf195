"""A real script's size changes, profiled and without the profiler: does a comparison's cause size
fit in the gap the unprofiled steps measure?

    python -m benchmarks.lstm_lm_sizes [--markdown] [--out DIR]

``benchmarks/lstm_lm/train.py`` (pytorch/examples' word_language_model shape on random tokens) is
run under ``traceview run --calibrate`` four ways — batch 2 and 20 (2 threads), 2 threads and 1
(batch 20) — and each pair compared: the gap of the unprofiled steps (the calibration run's
medians: the measured cost of the change), the profiled gap, and per cause the profiled delta and
the delta estimated without the profiler (``comparison.unprofiled_buckets``). A cause's delta
larger than the whole unprofiled gap is the profiler's: the check is that the estimated deltas
sum to the unprofiled gap and that none exceeds it by more than the other causes' opposite
deltas allow. The captures are kept under ``--out`` (default: a temporary folder); ``--reuse``
compares the ones already there.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import traceview

SCRIPT = Path(__file__).resolve().parent / "lstm_lm" / "train.py"
# (name, train.py arguments): the pairs compare the first with each change.
CONFIGS = {"batch2": ["--batch", "2", "--threads", "2"], "batch20": ["--batch", "20", "--threads", "2"],
           "threads1": ["--batch", "20", "--threads", "1"]}
PAIRS = [("batch2", "batch20"), ("batch20", "threads1")]
STEPS = ["--steps", "10-25"]  # profiled (and calibrated) after 9 warm-up steps
SCRIPT_STEPS = ["--steps", "30"]


def capture(out: Path, name: str) -> Path:
    folder = out / name
    subprocess.run([sys.executable, "-m", "traceview", "run", "--calibrate", *STEPS, "-o", str(folder), "--overwrite",
                    "--format", "json", "--report", str(out / f"{name}.json"), "--",
                    sys.executable, str(SCRIPT), *CONFIGS[name], *SCRIPT_STEPS], check=True,
                   stdout=subprocess.DEVNULL)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="compare the captures already in --out")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lstm-lm-"))
    folders = {name: out / name if args.reuse else capture(out, name) for name in CONFIGS}
    lines = ["| change | cause | profiled delta | estimated without the profiler | unprofiled gap |",
             "|---|---|---|---|---|"] if args.markdown else []
    for base, cand in PAIRS:
        comparison = traceview.compare(folders[base], folders[cand])
        gap = comparison.candidate.unprofiled_step_ns - comparison.baseline.unprofiled_step_ns
        estimated = {d.bucket: d.delta_ns for d in comparison.unprofiled_buckets}
        for delta in comparison.buckets:
            if abs(delta.delta_ns) < 0.01 * abs(gap) and abs(estimated.get(delta.bucket, 0.0)) < 0.01 * abs(gap):
                continue
            cells = [f"{base} → {cand}", delta.bucket, f"{delta.delta_ns / 1e6:+.2f} ms",
                     f"{estimated.get(delta.bucket, float('nan')) / 1e6:+.2f} ms", f"{gap / 1e6:+.2f} ms"]
            lines.append("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))
        profiled_gap = comparison.candidate_step_ns - comparison.baseline_step_ns
        lines.append(("| " if args.markdown else "") + f"{base} → {cand}" + (" | **step** | " if args.markdown else "  step  ")
                     + f"{profiled_gap / 1e6:+.2f} ms" + (" | " if args.markdown else "  ")
                     + f"{sum(estimated.values()) / 1e6:+.2f} ms" + (" | " if args.markdown else "  ")
                     + f"{gap / 1e6:+.2f} ms" + (" |" if args.markdown else ""))
    print("\n".join(lines))
    print(f"\ncaptures: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
