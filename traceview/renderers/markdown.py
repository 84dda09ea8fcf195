"""``--format md``: GitHub-flavoured markdown to paste into an issue: the report's sections
(renderers/report.py) laid out.

Summary first (step time, attribution, findings that are problems), details in a collapsible
``<details>`` block. Every name from a trace goes through :func:`cell`, so a C++ kernel name
with ``|``, ``<`` or backticks cannot break a table.
"""

from __future__ import annotations

from typing import Any

from traceview.renderers.base import Renderer
from traceview.renderers.report import (CAUSE_COLUMNS, ComparisonReport, DiagnosisReport, FindingLine, Grid,
                                        QualitySection, RanksReport, TopTable, across_grid, by_baseline,
                                        comparison_report, diagnosis_report, left_out_section, ranks_report,
                                        reported_traces, shortened, traces_grid, whatif_report)
from traceview.results import Comparison, Diagnosis, LeftOut, MultiRank, WhatIf
from traceview.text import BUCKET_LABEL, fmt_count, fmt_ns, fmt_pct, shorten, visible

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


def _table(headers: list[str] | tuple[str, ...], rows: list[list[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(headers) - 1)
    marks = {"l": ":---", "r": "---:"}
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _grid(grid: Grid, width: int | None = None) -> list[str]:
    """A grid under its bold title: text columns left, numbers right, every text cell escaped
    (trace names cut to ``width``, so that no two read the same)."""
    names = {i: shortened([row[i] for row in grid.rows], width) for i in grid.names} if width else {}
    rows = [[cell(names[i][r] if i in names else value) if i in grid.left or i in grid.names else value
             for i, value in enumerate(row)] for r, row in enumerate(grid.rows)]
    for r, row in enumerate(rows):
        if grid.is_flagged(r):
            row[grid.emphasis] = f"**{row[grid.emphasis]}**"
    align = "".join("l" if i in grid.left else "r" for i in range(len(grid.headers)))
    title = [f"**{grid.title}**", ""] if grid.title else []
    return title + _table(grid.headers, rows, align) + [""]


def _findings(findings: tuple[FindingLine, ...], heading: str) -> list[str]:
    problems = [f for f in findings if f.problem]
    lines = [f"**{heading}**", ""]
    if not problems:
        lines.append("- no problem found by any rule")
    # In the ranking order: the largest saving first; then the causes whose share alone would be a
    # problem but whose fix saves too little (they carry what it saves).
    for f in problems + [f for f in findings if not f.problem and f.fix]:
        lines.append(f"- **{f.label}** `{f.rule}`: {cell(f.text)}." + (f" **{cell(f.fix)}**." if f.fix else "")
                     + (f" *Try:* {cell(f.advice)}" if f.advice else ""))
    return lines + [""]


def _quality(section: QualitySection) -> list[str]:
    """The trace-quality section: its headline alone for a clean trace."""
    lines = [f"**{section.headline}**", ""]
    if section.rows:
        lines += [f"- note: {cell(text)}" if count == "note" else f"- **{count}** {cell(text)}"
                  for count, text in section.rows]
        lines.append("")
    return lines


def _top(top: TopTable | None) -> list[str]:
    if top is None:
        return []
    rows = [[cell(name), *cells] for name, cells in zip(shortened(top.names, _NAME_WIDTH), top.rows)]
    return [f"**{top.title}**", ""] + _table(top.headers, rows) + [""]


def diagnosis_markdown(report: DiagnosisReport) -> list[str]:
    facts, steady = report.facts, report.steady
    lines = [
        f"### traceview diagnose: {cell(facts.source)}",
        "",
        f"**Steady-state step: {fmt_ns(steady.median_ns)}** ({steady.summary}; {facts.framework}, {facts.format}"
        + (f", host {cell(facts.host)}" if facts.host else "") + f"; devices: {cell(facts.devices)})",
        "",
    ]
    if facts.notes:
        lines += [f"- note: {cell(note)}" for note in facts.notes] + [""]
    lines += _table(list(CAUSE_COLUMNS),
                    [[f"· {cell(row.label)}" if row.detail else row.label, fmt_ns(row.ns), fmt_pct(row.share)]
                     for row in steady.rows])
    if steady.inferred:
        parts = ", ".join(f"{BUCKET_LABEL[bucket]} {fmt_ns(ns)}" for bucket, ns in steady.inferred)
        lines += ["", f"Inferred from unrecorded gaps on the step's thread: {parts}; {cell(steady.gap_rule)}."]
    if report.communication_summary:
        lines += ["", report.communication_summary]
    if report.critical is not None:
        lines += ["", cell(report.critical.sentence)]
    lines.append("")
    lines += _findings(report.findings, "Findings")
    lines += _quality(report.quality)
    lines += ["<details><summary>Details: steps, top kernels and ops, launch statistics, event accounting</summary>", ""]
    lines.append(f"Steps: {facts.step_count} found by rule `{facts.step_rule}` — {cell(facts.step_rule_detail)}.")
    lines.append("")
    steps = report.steps
    rows = []
    for r in steps.rows:
        if r.after_gap:
            rows.append(["…", ""] + ["" for _ in steps.shown])
        rows.append([f"#{r.number}" + (" (cold)" if r.cold else "") + (" (partial)" if r.partial else ""),
                     fmt_ns(r.duration_ns)] + [fmt_ns(r.buckets[b]) for b in steps.shown])
    lines += _table(["step", "time"] + [BUCKET_LABEL[b] for b in steps.shown], rows)
    lines.append("")
    if steps.left_out:
        lines += [cell(steps.left_out_note), ""]
    if report.cold:
        lines += ["**Cold step(s)**", ""] + [f"- {cell(step.sentence)}" for step in report.cold] + [""]
    if report.communication is not None:
        lines += _grid(report.communication)
    for grid in report.memory:
        lines += _grid(grid)
    lines += _top(report.kernels) + _top(report.ops)
    lines += _grid(report.launch)
    if report.device is not None:
        lines += _grid(report.device)
    lines.append(f"Events: {fmt_count(facts.events_in_file)} in file, {fmt_count(facts.kept)} kept, "
                 f"{fmt_count(facts.dropped)} dropped.")
    lines.append("")
    if facts.dropped_by_reason:
        lines += _table(["dropped because", "events"], [[cell(r), fmt_count(c)] for r, c in facts.dropped_by_reason])
        lines.append("")
    lines += ["</details>", ""]
    return lines


def multi_rank_markdown(report: RanksReport) -> list[str]:
    """The ranks of one run: per-rank steady step, stragglers per step, spread of each cause."""
    lines = [f"### traceview: {cell(report.title)}", "", report.headline, ""]
    lines += _grid(report.ranks)
    if report.stragglers is not None:
        lines += _grid(report.stragglers)
    lines += _grid(report.spread)
    if report.notes:
        lines += [f"- note: {cell(note)}" for note in report.notes] + [""]
    return lines


def render(diagnoses: list[Diagnosis], comparisons: list[Comparison] | None = None,
           multi_rank: list[MultiRank] | None = None, left_out: list[LeftOut] | None = None, per_rank: bool = False,
           per_trace: bool = False, rank_rows: int | None = None, **_: Any) -> str:
    lines: list[str] = []
    section = left_out_section(left_out, len(diagnoses))
    if section is not None:
        lines += [f"**{cell(section.headline)}**", ""] + [f"- `{cell(source)}`: {cell(why)}"
                                                         for source, why in section.rows] + [""]
    for run in multi_rank or []:
        lines += multi_rank_markdown(ranks_report(run, per_rank, rank_rows))
    for group in by_baseline(comparisons or []):
        grid = across_grid(group)
        lines += ["### traceview: across the traces", "", f"{cell(grid.title)}.", ""]
        lines += _grid(Grid("", grid.headers, grid.rows, grid.left, grid.names))
    summary = traces_grid(diagnoses, multi_rank)
    if summary is not None:
        lines += _grid(summary)
    shown, notes = reported_traces(diagnoses, multi_rank, per_rank, comparisons, per_trace)
    lines += [f"- note: {cell(note)}" for note in notes] + ([""] if notes else [])
    for diag in shown:
        lines += diagnosis_markdown(diagnosis_report(diag))
    return "\n".join(lines).rstrip() + "\n"


def comparison_markdown(report: ComparisonReport) -> list[str]:
    lines = ["### traceview compare", ""]
    lines += [f"- {side.role}: {cell(side.source)} ({side.framework})" for side in report.sides]
    lines += ["", f"**{report.lead}**{report.rest}", ""]
    if report.causes:
        lines += [cell(report.causes), ""]
    lines += _grid(report.buckets)
    lines += _findings(report.findings, "Gap findings")
    lines += ["<details><summary>Op families, ops and kernels by name, cold start, findings, and both diagnoses"
              "</summary>", ""]
    if report.families is not None:
        lines += _grid(report.families)
    if report.op_diff is not None:
        lines += _grid(report.op_diff)
    lines += [f"Cold start: {cell(report.cold_start)}", ""]
    for side, diag in zip(report.sides, (report.baseline, report.candidate)):
        lines += _findings(diag.findings, f"Findings: {side.role} ({side.framework})")
    lines += diagnosis_markdown(report.baseline) + diagnosis_markdown(report.candidate)
    lines += ["</details>", ""]
    return lines


def render_comparison(cmp: Comparison, **_: Any) -> str:
    return "\n".join(comparison_markdown(comparison_report(cmp))).rstrip() + "\n"


def render_whatif(result: WhatIf, **_: Any) -> str:
    report = whatif_report(result)
    lines = ["### traceview whatif", "", f"- trace: {cell(report.source)}", f"- replay: {report.transform}", "",
             f"**{report.headline}**", ""]
    if report.path:
        lines += [report.path, ""]
    lines += _grid(report.steps)
    if report.fixes is not None:
        lines += _grid(report.fixes)
    lines += [f"- note: {cell(note)}" for note in report.notes]
    return "\n".join(lines).rstrip() + "\n"


RENDERER = Renderer(name="md", extension=".md", render_diagnoses=render, description="GitHub markdown for bug reports",
                    render_comparison=render_comparison, render_whatif=render_whatif)
