"""Number formatting shared by the text renderers; fixed rules so output is byte-stable."""

from __future__ import annotations

import re
from typing import Any


def fmt_ns(ns: float, compact: bool = False) -> str:
    """A duration with a unit chosen by size: 850 ns, 12.3 µs, 4.56 ms, 1.23 s."""
    value = float(ns)
    sign = "-" if value < 0 else ""
    value = abs(value)
    sep = "" if compact else " "
    if value == 0:
        return "0" if compact else "0 ns"
    if value < 1_000:
        return f"{sign}{value:.0f}{sep}ns"
    if value < 1_000_000:
        return f"{sign}{value / 1e3:.3g}{sep}µs" if value < 10_000 else f"{sign}{value / 1e3:.1f}{sep}µs"
    if value < 1_000_000_000:
        return f"{sign}{value / 1e6:.3g}{sep}ms" if value < 10_000_000 else f"{sign}{value / 1e6:.1f}{sep}ms"
    return f"{sign}{value / 1e9:.2f}{sep}s"


def fmt_pct(share: float) -> str:
    return f"{share * 100:.1f} %"


def fmt_count(n: int | float) -> str:
    return f"{int(n):,}"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: Any) -> str:
    """A trace-derived string without control characters (ESC sequences, bells, C1 codes), so it
    cannot move the cursor or recolour the terminal in any output format."""
    return _CONTROL.sub("", str(text))


def shorten(name: str, width: int) -> str:
    """Cut a long (C++ template) name in the middle so both its start and end stay readable."""
    name = " ".join(visible(name).split())
    if len(name) <= width:
        return name
    head = (width - 1) * 2 // 3
    tail = width - 1 - head
    return name[:head] + "…" + name[-tail:]


def trace_label(source: str) -> str:
    """A short name for a trace in tables: the capture folder (``torch-eager``, the folder above
    ``plugins/profile/<run>/`` for TensorBoard logdirs), else the file name."""
    parts = str(source).replace("\\", "/").split("/")
    if "plugins" in parts:
        i = len(parts) - 1 - parts[::-1].index("plugins")
        if i >= 1:
            return parts[i - 1]
    if len(parts) >= 2 and parts[-2]:
        return parts[-2]
    return parts[-1]


def gap_headline(cmp: Any, labels: dict[str, str]) -> tuple[str, str]:
    """The compare report's first line, written once for every format: (lead, rest). The lead
    says which trace is slower and by how much; the rest names the largest cause of the gap."""
    gap = cmp.gap_ns
    slower = "candidate" if gap >= 0 else "baseline"
    ratio = cmp.ratio if gap >= 0 else (1 / cmp.ratio if cmp.ratio else 0.0)
    lead = f"The {slower} is {ratio:.2f}× slower"
    rest = (f": {fmt_ns(cmp.candidate_step_ns)} vs {fmt_ns(cmp.baseline_step_ns)} per steady step (mean), "
            f"gap {fmt_ns(abs(gap))}")
    causes = cmp.ranked()
    if gap and causes and causes[0].delta_ns / gap > 0:
        top = causes[0]
        rest += (f"; the largest cause is {labels.get(top.bucket, top.bucket)}: {fmt_ns(abs(top.delta_ns))} per step "
                 f"({fmt_pct(top.delta_ns / gap)} of the gap)")
    return lead, rest + "."
