"""How much separate runs of one unchanged program differ: A/A pairs of captures.

``python benchmarks/run_to_run.py --out /tmp/aa [--runs 4] [--workloads mlp2,cnn]``

Captures each workload in each framework mode ``--runs`` times with ``traceview collect``, every
capture its own process (the collector isolates them), a second apart (TensorFlow names its run
folders to the second); then compares every pair of captures of one workload and mode. Nothing
differs between the two sides of a pair but the run, so every gap is the runs' own: the table gives,
per mode, the ratio of the slower side's mean steady step to the faster's as profiled (median and
largest) and by the captures' own unprofiled timing (largest), how many pairs the ratio's 95 %
interval called significant, and how many traceview compare reports with no cause named (against
``analyzers.compare.RUN_TO_RUN_RATIO`` and ``UNPROFILED_RUN_TO_RUN_RATIO``). ``--compare-only`` compares the
captures already under ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MODES = ("torch-eager", "tf-eager", "tf-function", "tf-fit", "jax-jit")


def capture(out: Path, workloads: list[str], runs: int) -> None:
    """``runs`` captures of every workload in every mode, under ``out/<workload>/r<N>/<mode>``."""
    frameworks = sorted({mode.split("-")[0] for mode in MODES})
    modes = sorted({mode.split("-", 1)[1] for mode in MODES})
    for run in range(1, runs + 1):
        for workload in workloads:
            subprocess.run([sys.executable, "-m", "traceview", "collect", workload, "-f", ",".join(frameworks),
                            "-m", ",".join(modes), "-o", str(out / workload / f"r{run}"), "--overwrite"],
                           check=True, stdout=subprocess.DEVNULL)
            time.sleep(1.2)


Pair = tuple[str, str, float, float, bool, bool]


def compare_all(out: Path, workloads: list[str]) -> list[Pair]:
    """(workload, mode, slower / faster profiled, the same unprofiled, significant, a cause named) per pair."""
    import traceview

    rows = []
    for workload in workloads:
        for mode in MODES:
            runs = sorted(p for p in (out / workload).glob(f"r*/{mode}") if p.is_dir())
            for a, b in itertools.combinations(runs, 2):
                cmp = traceview.compare(a, b)
                named = any(f.grade in ("high", "moderate") for f in cmp.findings)
                unprofiled = cmp.unprofiled_ratio or 1.0
                rows.append((workload, mode, max(cmp.ratio, 1 / cmp.ratio), max(unprofiled, 1 / unprofiled),
                             cmp.significant, named))
    return rows


def render(rows: list[Pair]) -> str:
    lines = ["| workload | mode | pairs | median ratio | largest | largest unprofiled | interval significant | "
             "no cause named |", "|---|---|---|---|---|---|---|---|"]
    groups = sorted({(w, m) for w, m, *_ in rows}, key=lambda g: (g[0], MODES.index(g[1])))
    for group in groups + [("all", "all")]:
        sel = [r for r in rows if group == ("all", "all") or (r[0], r[1]) == group]
        ratios = np.array([r[2] for r in sel])
        lines.append(f"| {group[0]} | {group[1]} | {len(sel)} | {np.median(ratios):.2f}x | {ratios.max():.2f}x | "
                     f"{max(r[3] for r in sel):.2f}x | {sum(r[4] for r in sel)} | {sum(not r[5] for r in sel)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the captures")
    ap.add_argument("--runs", type=int, default=4, help="captures of each workload and mode")
    ap.add_argument("--workloads", default="mlp2,cnn", help="comma-separated traceview collect workloads")
    ap.add_argument("--compare-only", action="store_true", help="compare the captures already under --out")
    args = ap.parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    if not args.compare_only:
        capture(args.out, workloads, args.runs)
    print(render(compare_all(args.out, workloads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
