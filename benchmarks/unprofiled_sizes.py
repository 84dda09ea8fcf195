"""Cause sizes without the profiler, estimated, against the ground-truth cases' measured costs.

    python -m benchmarks.unprofiled_sizes [--markdown]

For every steady cause case in ``benchmarks/truth/cases``: the expected bucket's growth from the
clean to the injected capture, as profiled and as estimated without the profiler
(``traceview.analyzers.unprofiled``: each side's profiler excess over its unprofiled median,
from ``ground_truth.json``, taken off the causes by the recorded events' boundaries in each),
both held against the cost measured without the profiler (injected − clean unprofiled median).
The last lines count the cases within the scorer's 0.75–1.25 and the mean |log(ratio)|.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import traceview
from traceview.analyzers.unprofiled import unprofiled_buckets

CASES = Path(__file__).resolve().parent / "truth" / "cases"
BAND = (0.75, 1.25)  # the truth scorer's band for a cause's size


def rows() -> list[tuple[str, str, float, float, float]]:
    """(case, bucket, measured cost, profiled growth, estimated growth), ns, per steady cause case."""
    out = []
    for truth in sorted(CASES.glob("*/ground_truth.json")):
        facts = json.loads(truth.read_text())
        case, unprofiled = facts["case"], facts.get("unprofiled") or {}
        if case["kind"] != "cause" or case["window"] != "steady" or "clean" not in unprofiled:
            continue
        bucket = case["expected_bucket"]
        sides = {}
        for variant in ("clean", "injected"):
            diag = traceview.diagnose(truth.parent / variant)
            if bucket not in diag.buckets:
                break
            profiled = diag.steady_attribution()
            estimate = unprofiled_buckets(diag, unprofiled[variant]["median_ns"]) or profiled
            sides[variant] = (profiled[bucket], estimate[bucket])
        if len(sides) < 2:
            continue
        cost = unprofiled["injected"]["median_ns"] - unprofiled["clean"]["median_ns"]
        out.append((case["name"], bucket, cost, sides["injected"][0] - sides["clean"][0],
                    sides["injected"][1] - sides["clean"][1]))
    return out


def _in_band(ratio: float) -> bool:
    return BAND[0] <= ratio <= BAND[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a markdown table (for the truth README)")
    args = parser.parse_args()
    table = rows()
    lines = ["| case | bucket | measured cost | profiled growth | ratio | estimated growth | ratio |",
             "|---|---|---|---|---|---|---|"] if args.markdown else []
    for name, bucket, cost, profiled, estimate in table:
        cells = [name, bucket, f"{cost / 1e6:.2f} ms", f"{profiled / 1e6:.2f} ms", f"{profiled / cost:.2f}",
                 f"{estimate / 1e6:.2f} ms", f"{estimate / cost:.2f}"]
        lines.append("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))
    n = len(table)
    for label, column in (("profiled", 3), ("estimated without the profiler", 4)):
        ratios = [max(row[column] / row[2], 1e-3) for row in table]
        lines.append(f"\n{label}: within {BAND[0]}–{BAND[1]} of the measured cost in "
                     f"{sum(map(_in_band, ratios))}/{n}, mean |log(ratio)| "
                     f"{sum(abs(math.log(r)) for r in ratios) / n:.3f}" if n else f"\n{label}: no case")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
