"""Number formatting shared by the text renderers; fixed rules so output is byte-stable."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from traceview.errors import BIDI_CONTROLS, one_line


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


# Control characters, and the Unicode bidirectional controls (a name could make a report line
# read other than it is).
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]")


def visible(text: Any) -> str:
    """A trace-derived string without control characters (ESC sequences, bells, C1 codes), so it
    cannot move the cursor or recolour the terminal in any output format; see also :func:`encodable`."""
    return encodable(_CONTROL.sub("", str(text)))


_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """Text that encodes as UTF-8: the bytes of a file name that are not UTF-8 (which Python keeps
    as surrogate escapes) written as ``\\xNN``, any other lone surrogate as U+FFFD."""
    return _SURROGATE.sub(_byte_escape, text) if _SURROGATE.search(text) else text


def _byte_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"


def _one_line_name(name: Any) -> str:
    """A name on one line (:func:`traceview.errors.one_line`, as the terminal writes any trace
    text): its newlines and tabs written as ``\\n`` / ``\\t`` (docs/bad_input.md), other control
    characters dropped, runs of spaces as one."""
    return " ".join(one_line(visible(name)).split())


def shorten(name: str, width: int) -> str:
    """Cut a long (C++ template) name in the middle so both its start and end stay readable."""
    name = _one_line_name(name)
    if len(name) <= width:
        return name
    head = (width - 1) * 2 // 3
    tail = width - 1 - head
    return name[:head] + "…" + name[-tail:]


# A name cut to show its distinct end keeps at least this many characters of its start.
_MIN_HEAD = 4


def _cut(name: str, width: int, keep_from: int) -> str:
    """``name`` in ``width`` characters: its start, "…", and everything from ``keep_from`` on when
    that fits, else cut in the middle (:func:`shorten`)."""
    if len(name) <= width:
        return name
    tail = len(name) - keep_from
    if 0 < tail <= width - 1 - _MIN_HEAD:
        return name[: width - 1 - tail] + "…" + name[keep_from:]
    return shorten(name, width)


def distinct_shortened(names: Sequence[Any], width: int) -> list[str]:
    """Each name cut to ``width`` (:func:`shorten`), where no two different names may read the same.
    Names that would keep their start and show the end from where they stop sharing it
    (``autograd::…AddmmBackward0``, ``autograd::…ReluBackward0``), then are cut less and less until
    they differ; names that differ only in characters no report shows (control characters, runs
    of spaces) are numbered."""
    full = [_one_line_name(n) for n in names]
    widths = [width] * len(full)
    keep_from = [len(f) for f in full]  # no distinct end chosen yet: cut in the middle
    while True:
        labels = [_cut(f, w, k) for f, w, k in zip(full, widths, keep_from)]
        groups: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            groups.setdefault(label, []).append(i)
        changed = False
        for members in groups.values():
            if len({full[i] for i in members}) < 2:
                continue
            shared = len(os.path.commonprefix([full[i] for i in members]))
            for i in members:
                if keep_from[i] > shared:
                    keep_from[i] = shared
                    changed = True
                elif widths[i] < len(full[i]):
                    widths[i] = min(len(full[i]), widths[i] + max(4, widths[i] // 4))
                    changed = True
        if not changed:
            break
    # Different names that still read the same: the second, third … get [2], [3] … (a number no
    # other label takes), the same name keeps one label wherever it appears.
    taken = set(labels)
    numbered: dict[tuple[str, str], str] = {}
    first: dict[str, str] = {}
    for i, label in enumerate(labels):
        name = str(names[i])
        owner = first.setdefault(label, name)
        if owner == name:
            continue
        if (label, name) not in numbered:
            n = 2
            while f"{label} [{n}]" in taken:
                n += 1
            numbered[(label, name)] = f"{label} [{n}]"
            taken.add(numbered[(label, name)])
        labels[i] = numbered[(label, name)]
    return labels


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


OP_DIFF_TITLE = ("Ops and kernels per steady step, aligned by name (A = baseline, B = candidate; kernel: device "
                 "kernels, or compute ops by self time on CPU; op: top-level framework ops)")
OP_DIFF_HEADERS = ("name", "kind", "n A", "n B", "time A", "time B", "delta")


def op_diff_rows(cmp: Any, width: int | None = None) -> list[list[str]]:
    """The cells of a comparison's per-op diff, written once for every format; a side without the
    name has empty cells. With ``width`` the names are cut to it (:func:`distinct_shortened`), else
    they are whole (each format escapes them)."""
    frame = cmp.op_diff
    names = distinct_shortened(list(frame["name"]), width) if width else [visible(n) for n in frame["name"]]

    def count(value: float) -> str:
        return "" if value != value else f"{value:.1f}"  # NaN: the name is not on that side

    def time(value: float) -> str:
        return "" if value != value else fmt_ns(value)

    return [[name, r.kind, count(r.baseline_count_per_step), count(r.candidate_count_per_step),
             time(r.baseline_time_per_step_ns), time(r.candidate_time_per_step_ns), fmt_ns(r.delta_ns)]
            for name, r in zip(names, frame.itertuples(index=False))]


COMM_TITLE = "Communication vs compute (collective kernels)"
COMM_HEADERS = ("step", "collectives", "comm", "overlapped", "exposed", "overlap")


def comm_rows(diag: Any) -> list[list[str]]:
    """The cells of the communication table, written once for every format: one row per step,
    the steady mean, and the whole trace (the scope of HTA's comm/comp overlap)."""
    comm = diag.communication
    rows = [[f"#{step.number}" + (" (cold)" if step.cold else ""), f"{r.collectives:d}", fmt_ns(r.comm_ns),
             fmt_ns(r.overlapped_ns), fmt_ns(r.exposed_ns), fmt_pct(r.overlap_share)]
            for step, r in zip(diag.steps.table.tuples(), comm.per_step.tuples())]
    steady = comm.steady(diag.steady_positions)
    rows.append(["steady mean", f"{steady['collectives']:.1f}", fmt_ns(steady["comm_ns"]),
                 fmt_ns(steady["overlapped_ns"]), fmt_ns(steady["exposed_ns"]), fmt_pct(steady["overlap_share"])])
    rows.append(["whole trace", "", fmt_ns(comm.trace_comm_ns), fmt_ns(comm.trace_overlapped_ns),
                 fmt_ns(comm.trace_comm_ns - comm.trace_overlapped_ns), fmt_pct(comm.trace_overlap_share)])
    return rows


def ranks_headline(run: Any, most: int = 10) -> str:
    """The multi-rank section's first lines, written once for every format: which rank is slowest
    how often, the largest excess over the median of the ranks, and the straggler steps."""
    steps = run.stragglers
    ranks = run.ranks
    fastest = ranks.iloc[int(ranks["steady_step_ns"].to_numpy().argmin())]
    slowest = ranks.iloc[int(ranks["steady_step_ns"].to_numpy().argmax())]
    text = (f"Steady step from {fmt_ns(fastest['steady_step_ns'])} (rank {fastest['rank']}) to "
            f"{fmt_ns(slowest['steady_step_ns'])} (rank {slowest['rank']})."
            if slowest["steady_step_ns"] > fastest["steady_step_ns"]
            else f"Steady step {fmt_ns(fastest['steady_step_ns'])} on every rank.")
    if steps.empty:
        return text + " No step number is on every rank, so steps are not compared."
    if not (steps["slowest_rank"] >= 0).any():
        return text + f" Every rank took the same time in each of the {len(steps)} steps they share."
    top = ranks.iloc[int(ranks["slowest_steps"].to_numpy().argmax())]
    worst = steps.iloc[int(steps["over_median_share"].to_numpy().argmax())]
    flagged = [f"#{n}" for n in steps.loc[steps["straggler"], "number"]]
    listed = ", ".join(flagged[:most]) + (f" … ({len(flagged)} in all)" if len(flagged) > most else "")
    return (text + f" Slowest rank per step: rank {top['rank']} in {top['slowest_steps']} of {len(steps)} steps. "
            f"Largest excess: step #{worst['number']}, rank {worst['slowest_rank']}, {fmt_ns(worst['over_median_ns'])} "
            f"({fmt_pct(worst['over_median_share'])}) above the median of the ranks. Straggler steps (slowest rank more "
            f"than {fmt_pct(run.threshold)} above the median): {listed or 'none'}.")


# The multi-rank section's tables, the same cells in every text format. Runs wider than this show
# the per-rank step times only in --format json (and in `traceview query`).
MAX_RANK_COLUMNS = 8
RANKS_TITLE = "Per rank"
RANKS_HEADERS = ("rank", "trace", "steady step", "vs median", "slowest in")
STRAGGLERS_TITLE = "Stragglers: step time per rank, the slowest vs the median"
SPREAD_TITLE = "Spread of each cause across the ranks (mean per steady step)"
SPREAD_HEADERS = ("cause", "min", "median", "max", "max rank", "min rank")


def ranks_title(run: Any) -> str:
    return f"Across the ranks: {visible(run.label)} ({len(run.ranks)} ranks; rank from {run.rank_origin})"


def rank_rows(run: Any) -> list[list[str]]:
    n_steps = len(run.stragglers)
    return [[str(r.rank), r.trace, fmt_ns(r.steady_step_ns), f"{r.vs_median * 100:+.1f} %",
             f"{r.slowest_steps} of {n_steps}"] for r in run.ranks.itertuples(index=False)]


def straggler_rows(run: Any) -> tuple[list[str], list[tuple[bool, list[str]]]]:
    """Headers, then per step: (straggler?, cells); per-rank columns up to MAX_RANK_COLUMNS ranks."""
    shown = list(run.step_ns.columns) if len(run.step_ns.columns) <= MAX_RANK_COLUMNS else []
    headers = ["step", "median", "slowest", "rank", "over median", *(f"r{rank}" for rank in shown)]
    rows = []
    for s in run.stragglers.itertuples(index=False):
        times = [fmt_ns(v, compact=True) for v in run.step_ns.loc[s.number, shown]] if shown else []
        rows.append((bool(s.straggler), [f"#{s.number}" + (" cold" if s.cold else ""), fmt_ns(s.median_ns),
                                         fmt_ns(s.max_ns), str(s.slowest_rank) if s.slowest_rank >= 0 else "-",
                                         f"+{fmt_ns(s.over_median_ns)} ({fmt_pct(s.over_median_share)})", *times]))
    return headers, rows


def spread_rows(run: Any, labels: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Per bucket that some rank has: (bucket, cells)."""
    return [(b.bucket, [labels.get(b.bucket, b.bucket), fmt_ns(b.min_ns), fmt_ns(b.median_ns), fmt_ns(b.max_ns),
                        str(b.max_rank), str(b.min_rank)])
            for b in run.spread.itertuples(index=False) if b.max_ns > 0]


MEMORY_TITLE = "Memory (allocator samples)"
MEMORY_STEP_HEADERS = ("step", "device", "peak allocated", "allocated", "freed", "samples")
MEMORY_OPS_TITLE = "Ops that allocate most (steady steps; the allocator's op, else the op the code called)"
MEMORY_OP_HEADERS = ("op", "device", "allocations", "bytes per step")


def fmt_bytes(n: float) -> str:
    """Bytes in binary units: 512 B, 1.5 KiB, 64.0 MiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _device_label(device: int) -> str:
    return "host" if device < 0 else f"GPU {device}"


def memory_step_rows(diag: Any) -> list[list[str]]:
    """Per step and device: the most the allocator held at once, and what the step allocated and freed."""
    cold = dict(enumerate(diag.steps.table["cold"].tolist()))
    return [[f"#{r.number}" + (" (cold)" if cold.get(r.step) else ""), _device_label(r.device),
             fmt_bytes(r.peak_allocated), fmt_bytes(r.allocated), fmt_bytes(r.freed), fmt_count(r.samples)]
            for r in diag.memory.steps.tuples()]


def memory_op_rows(diag: Any, width: int | None = None) -> list[list[str]]:
    """Ops charged with the steady steps' allocations, largest first."""
    ops = diag.memory.ops
    names = distinct_shortened(ops["op"].tolist(), width) if width else [visible(op) for op in ops["op"].tolist()]
    return [[name, _device_label(r.device), fmt_count(r.allocations), fmt_bytes(r.bytes_per_step)]
            for name, r in zip(names, ops.tuples())]


QUALITY_TITLE = "Trace quality"
_MOST_STEPS = 10


def quality_headline(quality: Any, title: str = QUALITY_TITLE) -> str:
    """The trace-quality section's title line, written once for every format."""
    n = len(quality.problems())
    return f"{title}: " + ("no problems found" if not n else f"{n} problem" + ("s" if n > 1 else ""))


def quality_rows(quality: Any) -> list[tuple[str, str]]:
    """The trace-quality section below its headline, written once for every format: (count,
    sentence) per problem, then ("note", text) per reader note; none for a clean trace. Drop
    reasons and notes hold trace text: each format escapes the sentence as it escapes names."""
    counts = quality.counts()
    rows = []
    for check in quality.problems():
        detail = ""
        if check.key == "dropped":
            reasons = sorted(quality.dropped.items(), key=lambda x: (-x[1], x[0]))
            detail = ", ".join(f"{r} {fmt_count(c)}" for r, c in reasons)
        elif check.key == "clock_skew":
            detail = "median launch → device start " + ", ".join(
                f"{fmt_ns(quality.launch_offset_ns[d])} on device {d}" for d in quality.skewed_devices)
        elif check.key == "duplicate_correlation":
            detail = (f"{fmt_count(quality.duplicate_host_ids)} on host calls, "
                      f"{fmt_count(quality.duplicate_device_ids)} on device activities")
        elif check.key == "empty_steps":
            numbers = [f"#{n}" for n in quality.empty_steps]
            detail = ", ".join(numbers[:_MOST_STEPS]) + (" …" if len(numbers) > _MOST_STEPS else "")
        label = f"{check.label} ({detail})" if detail else check.label
        rows.append((fmt_count(counts[check.key]), f"{label}: {check.meaning}."))
    rows += [("note", note) for note in quality.notes]
    return rows


def by_baseline(comparisons: list[Any]) -> list[list[Any]]:
    """A folder's comparisons grouped by their baseline (one per workload), in their order."""
    groups: dict[int, list[Any]] = {}
    for cmp in comparisons:
        groups.setdefault(id(cmp.baseline), []).append(cmp)
    return list(groups.values())


def baseline_label(cmp: Any) -> str:
    """The baseline of a folder's comparisons: its capture, after its workload when the capture's
    manifest names one (``mlp2: torch-eager``)."""
    label = trace_label(cmp.baseline.timeline.meta.source)
    workload = (cmp.baseline.timeline.meta.extra.get("capture") or {}).get("workload")
    return f"{workload}: {label}" if workload else label
