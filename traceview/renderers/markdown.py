"""``--format md``: GitHub-flavoured markdown to paste into an issue.

Summary first (step time, attribution, findings that are problems), details in a collapsible
``<details>`` block. Every name from a trace goes through :func:`cell`, so a C++ kernel name
with ``|``, ``<`` or backticks cannot break a table.
"""

from __future__ import annotations

from typing import Any

from traceview.renderers.base import Renderer
from traceview.renderers.report import listed_causes
from traceview.text import BUCKET_LABEL, fmt_ratio, gap_cause, gap_caveats, gap_headline
from traceview.renderers.report import MEMORY_OPS_TITLE, MEMORY_OP_HEADERS, MEMORY_STEP_HEADERS, MEMORY_TITLE, memory_op_rows, memory_step_rows
from traceview.renderers.report import COMM_HEADERS, COMM_TITLE, OP_DIFF_HEADERS, OP_DIFF_TITLE, comm_rows, op_diff_rows
from traceview.text import fmt_count, fmt_ns, fmt_pct, shorten, trace_label, visible
from traceview.renderers.report import RANKS_HEADERS, RANKS_TITLE, SPREAD_HEADERS, SPREAD_TITLE, STRAGGLERS_TITLE, rank_rows, ranks_headline, ranks_title, spread_rows, straggler_rows
from traceview.renderers.report import baseline_label, by_baseline, quality_headline, quality_rows
from traceview.text import distinct_shortened

_NAME_WIDTH = 90


def cell(text: Any, width: int | None = None) -> str:
    """A value safe inside a markdown table cell."""
    value = " ".join(visible(text).split())
    if width:
        value = shorten(value, width)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # Backslash first, then every character markdown gives meaning to: no trace text becomes a
    # link, an image, emphasis, code or a table cell boundary.
    value = value.replace("\\", "\\\\")
    for ch in "|`*_[]!":
        value = value.replace(ch, "\\" + ch)
    return value


def _table(headers: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(headers) - 1)
    marks = {"l": ":---", "r": "---:"}
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _findings(findings: list[Any], heading: str) -> list[str]:
    problems = [f for f in findings if f.grade in ("high", "moderate")]
    lines = [f"**{heading}**", ""]
    if not problems:
        lines.append("- no problem found by any rule")
    for f in problems:  # in the ranking order: the largest cause first
        lines.append(f"- **{f.grade.upper()}** `{f.rule}`: {cell(f.summary)}. *Try:* {cell(f.advice)}")
    return lines + [""]


def _quality(quality: Any) -> list[str]:
    """The trace-quality section: its headline alone for a clean trace."""
    rows = quality_rows(quality)
    lines = [f"**{quality_headline(quality)}**", ""]
    if rows:
        lines += [f"- note: {cell(text)}" if count == "note" else f"- **{count}** {cell(text)}" for count, text in rows]
        lines.append("")
    return lines


def _attribution_rows(diag: Any) -> list[list[str]]:
    buckets = diag.steady_attribution()
    total = sum(buckets.values())
    return [[BUCKET_LABEL[b], fmt_ns(v), fmt_pct(v / total if total else 0.0)] for b, v in buckets.items()]


def diagnosis_markdown(diag: Any) -> list[str]:
    meta = diag.timeline.meta
    table = diag.steps.table
    devices = ", ".join(cell(d.name or f"device {d.index}") for d in meta.devices) or "none (CPU-only)"
    lines = [
        f"### traceview diagnose: {cell(meta.source)}",
        "",
        f"**Steady-state step: {fmt_ns(diag.steady_step_ns)}** (median of {len(diag.steady_positions)} steady steps; "
        + (f"unprofiled {fmt_ns(diag.unprofiled_step_ns)}, profiler ×{diag.profiler_inflation:.2f}; "
           if diag.profiler_inflation is not None else "") +
        f"{meta.framework}, {meta.format}" + (f", host {cell(meta.host_name)}" if meta.host_name else "")
        + f"; devices: {devices})",
        "",
    ]
    lines += _table(["cause", "per step", "share"], _attribution_rows(diag))
    inferred = {k: v for k, v in diag.steady_details().items() if k.endswith(".inferred")}
    if inferred:
        parts = ", ".join(f"{BUCKET_LABEL[k.split('.')[0]]} {fmt_ns(v)}" for k, v in sorted(inferred.items()))
        lines += ["", f"Inferred from unrecorded gaps on the step's thread: {parts}; {cell(diag.attribution.gap_rule)}."]
    if diag.communication is not None:
        steady = diag.communication.steady(diag.steady_positions)
        lines += ["", f"Collective communication: {fmt_ns(steady['comm_ns'])} per steady step in "
                      f"{steady['collectives']:.1f} collectives, {fmt_pct(steady['overlap_share'])} of it overlapped by "
                      f"compute kernels; the exposed {fmt_ns(steady['exposed_ns'])} is the communication row."]
    lines.append("")
    lines += _findings(diag.findings, "Findings")
    lines += _quality(diag.quality)
    lines += ["<details><summary>Details: steps, top kernels and ops, launch statistics, event accounting</summary>", ""]
    lines.append(f"Steps: {len(table)} found by rule `{diag.steps.rule}` — {cell(diag.steps.rule_detail)}.")
    lines.append("")
    per = diag.attribution.per_step
    rows = []
    partial = set(diag.steps.partial)
    per_bucket = {b: per[b].tolist() for b in diag.buckets}
    for i, r in enumerate(table.tuples()):
        rows.append([f"#{r.number}" + (" (cold)" if r.cold else "") + (" (partial)" if i in partial else ""),
                     fmt_ns(r.duration)]
                    + [fmt_ns(per_bucket[b][i]) for b in diag.buckets])
    lines += _table(["step", "time"] + [BUCKET_LABEL[b] for b in diag.buckets], rows)
    lines.append("")
    if diag.communication is not None:
        lines += [f"**{COMM_TITLE}**", ""]
        lines += _table(list(COMM_HEADERS), comm_rows(diag))
        lines.append("")
    if diag.memory is not None:
        op_rows = [[cell(row[0]), *row[1:]] for row in memory_op_rows(diag)]  # op names are trace text
        for title, headers, rows in ((MEMORY_TITLE, MEMORY_STEP_HEADERS, memory_step_rows(diag)),
                                     (MEMORY_OPS_TITLE, MEMORY_OP_HEADERS, op_rows)):
            lines += [f"**{title}**", ""]
            lines += _table(list(headers), rows)
            lines.append("")
    for title, frame in (("Top kernels" if diag.timeline.has_device else "Top compute ops", diag.kernels),
                         ("Top framework ops", diag.ops)):
        if frame is None or not len(frame):
            continue
        lines += [f"**{title}**", ""]
        lines += _table(["name", "n/step", "time/step", "mean", "share"],
                        [[cell(name), f"{r.count_per_step:.1f}", fmt_ns(r.time_per_step_ns), fmt_ns(r.mean_ns),
                          fmt_pct(r.share)]
                         for name, r in zip(distinct_shortened(frame["name"].tolist(), _NAME_WIDTH),
                                            frame.tuples())])
        lines.append("")
    s = diag.launch
    lines += ["**Launch / dispatch**", ""]
    rows = [["framework ops per step", f"{s.ops_per_step:.1f}"], ["host time per op", fmt_ns(s.host_ns_per_op)]]
    if diag.timeline.has_device:
        rows += [["kernel launches per step", f"{s.launches_per_step:.1f}"],
                 ["launch call median / p95", f"{fmt_ns(s.launch_call_median_ns)} / {fmt_ns(s.launch_call_p95_ns)}"],
                 ["launch delay median / p95", f"{fmt_ns(s.launch_delay_median_ns)} / {fmt_ns(s.launch_delay_p95_ns)}"],
                 ["short kernels", fmt_pct(s.short_kernel_share)]]
    lines += _table(["measure", "value"], rows)
    lines.append("")
    lines.append(f"Events: {fmt_count(meta.input_events)} in file, {fmt_count(sum(meta.kept.values()))} kept, "
                 f"{fmt_count(sum(meta.dropped.values()))} dropped.")
    lines.append("")
    if meta.dropped:
        lines += _table(["dropped because", "events"],
                        [[cell(r), fmt_count(c)] for r, c in sorted(meta.dropped.items(), key=lambda x: (-x[1], x[0]))])
        lines.append("")
    lines += ["</details>", ""]
    return lines


def multi_rank_markdown(run: Any) -> list[str]:
    """The ranks of one run: per-rank steady step, stragglers per step, spread of each cause."""
    lines = [f"### traceview: {cell(ranks_title(run))}", "", ranks_headline(run), ""]
    lines += [f"**{RANKS_TITLE}**", ""]
    lines += _table(list(RANKS_HEADERS), [[row[0], cell(row[1]), *row[2:]] for row in rank_rows(run)], "rlrrr")
    headers, rows = straggler_rows(run)
    if rows:
        lines += ["", f"**{STRAGGLERS_TITLE}**", ""]
        lines += _table(headers, [[*cells[:4], f"**{cells[4]}**" if flagged else cells[4], *cells[5:]]
                                  for flagged, cells in rows])
    lines += ["", f"**{SPREAD_TITLE}**", ""]
    lines += _table(list(SPREAD_HEADERS), [cells for _, cells in spread_rows(run, BUCKET_LABEL)])
    if run.notes:
        lines += [""] + [f"- note: {cell(note)}" for note in run.notes]
    return lines + [""]


def render(diagnoses: list[Any], comparisons: list[Any] | None = None, multi_rank: list[Any] | None = None,
           **_: Any) -> str:
    lines: list[str] = []
    for run in multi_rank or []:
        lines += multi_rank_markdown(run)
    for group in by_baseline(comparisons or []):
        lines += ["### traceview: across the traces", "",
                  f"Each compared with {cell(baseline_label(group[0]))} ({fmt_ns(group[0].baseline_step_ns)} "
                  "per steady step).", ""]
        rows = []
        for cmp in group:
            top = cmp.ranked()[0]
            rows.append([cell(trace_label(cmp.candidate.timeline.meta.source)), fmt_ns(cmp.candidate_step_ns), fmt_ratio(cmp.ratio),
                         f"{BUCKET_LABEL[top.bucket]} {fmt_ns(top.delta_ns)}", fmt_pct(cmp.explained_share)])
        lines += _table(["trace", "steady step", "vs baseline", "largest cause", "explained"], rows)
        lines.append("")
    for diag in diagnoses:
        lines += diagnosis_markdown(diag)
    return "\n".join(lines).rstrip() + "\n"


def render_comparison(cmp: Any, **_: Any) -> str:
    gap = cmp.gap_ns
    base, cand = cmp.baseline, cmp.candidate
    lead, rest = gap_headline(cmp)
    rest += gap_caveats(cmp)
    lines = [
        "### traceview compare",
        "",
        f"- baseline: {cell(base.timeline.meta.source)} ({base.timeline.meta.framework})",
        f"- candidate: {cell(cand.timeline.meta.source)} ({cand.timeline.meta.framework})",
        "",
        f"**{lead}**{rest} Named causes explain {fmt_pct(cmp.explained_share)} of the gap.",
        "",
    ]
    causes = listed_causes(cmp)
    for d in causes:
        lines.append(f"1. {gap_cause(d, gap)}")
    if causes:
        lines.append("")
    lines += _table(["cause", "baseline", "candidate", "delta", "of gap"],
                    [[BUCKET_LABEL[d.bucket], fmt_ns(d.baseline_ns), fmt_ns(d.candidate_ns), fmt_ns(d.delta_ns),
                      fmt_pct(d.delta_ns / gap) if gap else "-"] for d in cmp.buckets])
    lines.append("")
    lines += _findings(list(cmp.findings), "Gap findings")
    lines += ["<details><summary>Op families, ops and kernels by name, cold start, findings, and both diagnoses"
              "</summary>", ""]
    fam = cmp.families
    if not fam.empty:
        lines += _table(["family", "base ops/step", "cand ops/step", "base compute", "cand compute", "base host/op",
                         "cand host/op"],
                        [[f, f"{r['baseline_ops_per_step']:.1f}", f"{r['candidate_ops_per_step']:.1f}",
                          fmt_ns(r["baseline_compute_ns"]), fmt_ns(r["candidate_compute_ns"]),
                          fmt_ns(r["baseline_dispatch_ns_per_op"]), fmt_ns(r["candidate_dispatch_ns_per_op"])]
                         for f, r in fam.iterrows()])
        lines.append("")
    if len(cmp.op_diff):
        lines += [f"**{OP_DIFF_TITLE}**", ""]
        lines += _table(list(OP_DIFF_HEADERS), [[cell(row[0]), *row[1:]] for row in op_diff_rows(cmp)], "llrrrrr")
        lines.append("")
    lines += [f"Cold start: {cell(cmp.cold.payback_note)}.", ""]
    lines += _findings(base.findings, "Findings: baseline")
    lines += _findings(cand.findings, "Findings: candidate")
    lines += diagnosis_markdown(base) + diagnosis_markdown(cand)
    lines += ["</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


RENDERER = Renderer(name="md", extension=".md", render_diagnoses=render, description="GitHub markdown for bug reports",
                    render_comparison=render_comparison)
