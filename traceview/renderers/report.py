"""The report, built once from the results: the sections every text format lays out.

Rows of cells and the sentences around them are written here once; the terminal, markdown and
HTML renderers only lay them out (and escape trace text as their format needs).
"""

from __future__ import annotations

from typing import Any

from traceview.text import distinct_shortened, fmt_bytes, fmt_count, fmt_ns, fmt_pct, trace_label, visible

# A cause of a gap is listed when it explains more than this share of it.
LISTED_CAUSE_SHARE = 0.005


def listed_causes(cmp: Any) -> list[Any]:
    """The bucket deltas worth naming as causes of the gap, largest first; none where the gap is
    within the steady steps' noise, or where a step holds a different number of batches on each
    side (the per-step gap is then no slowdown to explain)."""
    gap = cmp.gap_ns
    if not cmp.significant or cmp.batch_ratio is not None or cmp.run_to_run:
        return []
    return [d for d in cmp.ranked() if gap and d.delta_ns / gap > LISTED_CAUSE_SHARE]


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
