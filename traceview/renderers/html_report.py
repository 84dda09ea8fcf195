"""``--format html``: one self-contained HTML page per report (inline CSS and SVG, no scripts, no
fonts): the report's sections (renderers/report.py) laid out.

One section per trace: what the trace is, where the steady-state step time goes (stacked bar
and table), a timeline picture of a representative step (renderers/html_timeline.py), the
findings, the per-step table, the top kernels and framework ops, and the launch statistics.
Every name from a trace is escaped (``html.escape``); the output holds no generation time, so
the same traces give the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from traceview.renderers.base import Renderer
from traceview.renderers.html_base import BUCKET_COLOR, coordinate, esc, swatch, text_color
from traceview.renderers.html_timeline import timeline_block
from traceview.renderers.report import (CAUSE_COLUMNS, ComparisonReport, DiagnosisReport, FindingLine, Grid,
                                        QualitySection, RanksReport, SteadyState, StepTable, TopTable,
                                        comparison_report, diagnosis_report, left_out_section, ranks_report,
                                        reported_traces, shortened)
from traceview.results import BUCKETS, Comparison, Diagnosis, LeftOut, MultiRank
from traceview.text import BUCKET_LABEL, fmt_count, fmt_ns, fmt_pct, trace_label

BAR_PX = 1150  # the page's content width, for fitting labels into the stacked bar
BAR_CHAR_PX = 7.2
_NAME_WIDTH = 100

_CSS = """
:root { --fg: #212529; --muted: #6c757d; --line: #dee2e6; --bg-alt: #f8f9fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; color: var(--fg);
       margin: 0 auto; padding: 20px 28px 40px; max-width: 1320px; background: #fff; }
h1 { font-size: 22px; margin: 4px 0 12px; }
h2 { font-size: 19px; margin: 30px 0 8px; padding-top: 14px; border-top: 2px solid var(--line); word-break: break-all; }
h3 { font-size: 15px; margin: 22px 0 6px; }
p.sub, .muted { color: var(--muted); margin: 2px 0 8px; }
nav ul { margin: 4px 0; padding-left: 20px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; word-break: break-word; }
table { border-collapse: collapse; margin: 4px 0 8px; font-size: 13px; }
th, td { padding: 3px 9px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--bg-alt); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; word-break: break-all; }
tr.detail td { color: var(--muted); font-size: 12px; }
tr.detail td:first-child { padding-left: 30px; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px;
          vertical-align: -1px; border: 1px solid rgba(0,0,0,.15); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 6px 0 4px; font-size: 12px; }
.legend b { font-weight: 600; margin-right: 4px; }
.grade { font-weight: 700; font-size: 11px; padding: 1px 6px; border-radius: 3px; white-space: nowrap; }
.grade.high { background: #ffe3e3; color: #c92a2a; }
.grade.moderate { background: #fff3bf; color: #a06000; }
.grade.none { background: #ebfbee; color: #2b8a3e; }
.grade.skipped { background: #f1f3f5; color: #868e96; }
.advice { color: var(--muted); font-size: 12px; }
.fix { font-weight: 600; font-size: 12px; }
.badge { font-size: 11px; padding: 0 5px; border-radius: 3px; background: #e7f5ff; color: #1971c2; margin-left: 4px; }
svg { display: block; }
svg.timeline { width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
svg text { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
"""


# ---------------------------------------------------------------------------------------------
# Page


def render(diagnoses: list[Diagnosis], comparisons: list[Comparison] | None = None, title: str | None = None,
           multi_rank: list[MultiRank] | None = None, left_out: list[LeftOut] | None = None, per_rank: bool = False,
           rank_rows: int | None = None, **_: Any) -> str:
    """The whole HTML page for one or more diagnoses (and comparisons between them, first)."""
    if title is None:
        # Named after the capture (mlp2/torch-eager, the logdir above plugins/profile), not the file
        # name a profiler makes up (vm_27927.1795319437029376727.pt.trace.json.gz).
        labels = [_capture_name(d.timeline.meta.source) for d in diagnoses]
        title = (f"traceview report: {labels[0]}" if len(labels) == 1
                 else f"traceview report: {len(labels)} traces in {_common_folder(diagnoses)}")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(title)}</h1>",
    ]
    section = left_out_section(left_out, len(diagnoses))
    if section is not None:
        parts.append(f'<h2 class="left-out">{esc(section.headline)}</h2><ul>'
                     + "".join(f"<li><b>{esc(source)}</b>: {esc(why)}</li>" for source, why in section.rows) + "</ul>")
    for cmp in comparisons or []:
        parts.append(_comparison(comparison_report(cmp), cmp))
    for run in multi_rank or []:
        parts.append(_multi_rank(ranks_report(run, per_rank, rank_rows)))
    # Every trace's own section: the page's index links them, so that its length costs no scrolling.
    shown, notes = reported_traces(diagnoses, multi_rank, per_rank, comparisons, per_trace=True)
    parts.extend(f'<p class="sub">note: {esc(note)}</p>' for note in notes)
    reports = [diagnosis_report(diag) for diag in shown]
    if len(shown) > 1:
        parts.append(_index(reports))
    for i, (diag, report) in enumerate(zip(shown, reports), start=1):
        parts.append(_section(diag, report, i))
    parts.append("<footer>Written by traceview. Times are per step; shares are of the mean steady step. "
                 "Colours: see the legends.</footer>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _comparison(report: ComparisonReport, cmp: Comparison) -> str:
    """The gap between two traces: headline, per-bucket deltas, op families, ops by name, findings."""
    base, cand = (Path(side.source).name for side in report.sides)
    causes = f" {report.causes}" if report.causes else ""
    families = (f"<h3>{esc(report.families.title)}</h3>" + _grid(report.families)
                if report.families is not None else "")
    op_diff = (f"<h3>{esc(report.op_diff.title)}</h3>" + _grid(report.op_diff)
               if report.op_diff is not None else "")
    return (
        f"<section><h2>{esc(cand)} vs {esc(base)}</h2>"
        f"<p><strong>{esc(report.lead)}</strong>{esc(report.rest)}{esc(causes)}</p>"
        + _grid(report.buckets) + families + op_diff
        + f"<p>Cold start: {esc(report.cold_start)}</p>"
        + _findings(report.findings, "Gap findings") + "</section>"
    )


def _capture_name(source: str) -> str:
    """The capture a trace belongs to, as its folder and the folder above (``mlp2/torch-eager``)."""
    label = trace_label(source)
    parts = str(source).replace("\\", "/").split("/")
    if label in parts:
        at = len(parts) - 1 - parts[::-1].index(label)
        if at >= 1 and parts[at - 1]:
            return f"{parts[at - 1]}/{label}"
    return label


def _common_folder(diagnoses: list[Diagnosis]) -> str:
    folders = [Path(d.timeline.meta.source).parent for d in diagnoses]
    common = Path(os.path.commonpath([str(f) for f in folders])) if folders else Path(".")
    return common.name or str(common)


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0,),
                bold: Sequence[bool] = (), names: Sequence[int] = (), swatches: Sequence[str] = ()) -> str:
    """A table of text cells (escaped here); columns not in ``left`` are numbers, ``bold`` rows
    strong, columns in ``names`` hold trace names (monospace, broken anywhere to fit the page);
    a row with a bucket in ``swatches`` shows its colour before its first cell."""
    align = [' class="name"' if i in names else "" if i in left else ' class="num"' for i in range(len(headers))]
    head = "".join(f"<th{a}>{esc(h)}</th>" for a, h in zip(align, headers))

    def content(r: int, i: int, value: str) -> str:
        text = f"<strong>{esc(value)}</strong>" if r < len(bold) and bold[r] else esc(value)
        colour = swatches[r] if i == 0 and r < len(swatches) else ""
        return (swatch(BUCKET_COLOR[colour]) if colour in BUCKET_COLOR else "") + text

    body = "".join("<tr>" + "".join(f"<td{a}>{content(r, i, v)}</td>" for i, (a, v) in enumerate(zip(align, row)))
                   + "</tr>" for r, row in enumerate(rows))
    return f"<table><tr>{head}</tr>{body}</table>"


def _grid(grid: Grid) -> str:
    return _html_table(grid.headers, grid.rows, left=grid.left, bold=grid.flagged, names=grid.names,
                       swatches=grid.buckets)


def _multi_rank(report: RanksReport) -> str:
    """The ranks of one run: per-rank steady step, stragglers per step, spread of each cause."""
    stragglers = (f"<h3>{esc(report.stragglers.title)}</h3>" + _grid(report.stragglers)
                  if report.stragglers is not None else "")
    notes = "".join(f'<p class="sub">note: {esc(note)}</p>' for note in report.notes)
    return (f"<section><h2>{esc(report.title)}</h2><p>{esc(report.headline)}</p>"
            f"<h3>{esc(report.ranks.title)}</h3>" + _grid(report.ranks)
            + stragglers + f"<h3>{esc(report.spread.title)}</h3>" + _grid(report.spread) + notes + "</section>")


def render_comparison(cmp: Comparison, **options: Any) -> str:
    """Both traces on one page, the comparison first."""
    title = (f"traceview compare: {_capture_name(cmp.candidate.timeline.meta.source)} vs "
             f"{_capture_name(cmp.baseline.timeline.meta.source)}")
    return render([cmp.baseline, cmp.candidate], comparisons=[cmp], title=title)


def _index(reports: list[DiagnosisReport]) -> str:
    rows = []
    for i, report in enumerate(reports, start=1):
        steady = report.steady
        top = max(report.buckets, key=lambda b: (steady.buckets[b], -BUCKETS.index(b)))
        rows.append(
            f'<tr><td><a href="#trace-{i}">{esc(Path(report.facts.source).name)}</a></td>'
            f'<td>{esc(report.facts.framework)}</td><td class="num">{esc(fmt_ns(steady.median_ns))}</td>'
            f"<td>{swatch(BUCKET_COLOR[top])}{esc(BUCKET_LABEL[top])} "
            f"({esc(fmt_pct(steady.buckets[top] / steady.mean_ns if steady.mean_ns else 0.0))})</td></tr>"
        )
    return ("<nav><table><tr><th>trace</th><th>framework</th><th class=\"num\">steady step</th>"
            "<th>largest cause</th></tr>" + "".join(rows) + "</table></nav>")


def _section(diag: Diagnosis, report: DiagnosisReport, index: int) -> str:
    out = [f'<section id="trace-{index}">', f"<h2>{esc(Path(report.facts.source).name)}</h2>", _facts(report),
           _steady(report.steady, report.buckets)]
    if report.critical is not None:
        out.append(f'<p class="sub">{esc(report.critical.sentence)}</p>')
    out.append(timeline_block(diag))
    if report.findings:
        out.append(_findings(report.findings))
    out.append(_quality(report.quality))
    out.append(_per_step(report))
    out += [_top(top) for top in (report.kernels, report.ops) if top is not None]
    out.append(f"<h3>{esc(report.launch.title)}</h3><table>"
               + "".join(f'<tr><td>{esc(k)}</td><td class="num">{esc(v)}</td></tr>' for k, v in report.launch.rows)
               + "</table>")
    if report.device is not None:
        out.append(f"<h3>{esc(report.device.title)}</h3>" + _grid(report.device))
    if report.communication is not None:
        grid = report.communication
        out.append(f"<h3>{esc(grid.title)}</h3>" f'<p class="sub">{esc(grid.note)}</p>' + _grid(grid))
    for grid in report.memory:
        out.append(f"<h3>{esc(grid.title)}</h3>" + (f'<p class="sub">{esc(grid.note)}</p>' if grid.note else "")
                   + _grid(grid))
    out.append("</section>")
    return "\n".join(out)


def _facts(report: DiagnosisReport) -> str:
    facts = report.facts
    reasons = "; ".join(f"{r}: {fmt_count(c)}" for r, c in facts.dropped_by_reason)
    kinds = ", ".join(f"{k} {fmt_count(c)}" for k, c in facts.kept_by_kind)
    rows = [("trace", facts.source), ("format", facts.format_line), ("devices", facts.devices),
            ("events", facts.events), ("kept", kinds or "none")]
    if reasons:
        rows.append(("dropped", reasons))
    rows.append(("steps", facts.steps))
    rows += [("note", note) for note in facts.notes]
    body = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
    return f'<dl class="facts">{body}</dl>'


def _stacked_bar(values: dict[str, float], height: int, labels: bool) -> str:
    """A horizontal stacked bar in percentages of the width (so it scales without distorting text)."""
    total = sum(values.values())
    if total <= 0:
        return f'<svg width="100%" height="{height}" role="img" aria-label="no time"></svg>'
    parts = [f'<svg width="100%" height="{height}" role="img" aria-label="attribution">']
    x = 0.0
    for b in BUCKETS:
        share = values.get(b, 0.0) / total
        if share <= 0:
            continue
        w = share * 100
        tip = f"{BUCKET_LABEL[b]}: {fmt_ns(values[b])} ({fmt_pct(share)})"
        parts.append(f'<rect x="{coordinate(x)}%" y="0" width="{coordinate(w)}%" height="{height}" '
                     f'fill="{BUCKET_COLOR[b]}"><title>{esc(tip)}</title></rect>')
        text = _bar_label(BUCKET_LABEL[b], share) if labels else ""
        if text:
            color = text_color(BUCKET_COLOR[b])
            parts.append(f'<text x="{coordinate(x + w / 2)}%" y="{coordinate(height / 2 + 4)}" text-anchor="middle" '
                         f'font-size="12" fill="{color}">{esc(text)}</text>')
        x += w
    parts.append("</svg>")
    return "".join(parts)


def _bar_label(label: str, share: float) -> str:
    """The label that fits a bar segment of ``share`` (assuming a bar about BAR_PX wide): name and
    share, the share alone, or nothing."""
    room = share * BAR_PX - 8
    for text in (f"{label} {fmt_pct(share)}", fmt_pct(share)):
        if len(text) * BAR_CHAR_PX <= room:
            return text
    return ""


def _steady(steady: SteadyState, buckets: tuple[str, ...]) -> str:
    rows = []
    for row in steady.rows:
        if row.detail:
            rows.append(f'<tr class="detail"><td>{esc(row.label)}</td><td class="num">{esc(fmt_ns(row.ns))}</td>'
                        f'<td class="num">{esc(fmt_pct(row.share))}</td></tr>')
        else:
            rows.append(f"<tr><td>{swatch(BUCKET_COLOR[row.bucket])}{esc(row.label)}</td>"
                        f'<td class="num">{esc(fmt_ns(row.ns))}</td><td class="num">{esc(fmt_pct(row.share))}</td></tr>')
    inferred = f'<p class="sub">{esc(steady.inferred_note)}</p>' if steady.inferred_note else ""
    return (
        f"<h3>Steady-state step: {esc(fmt_ns(steady.median_ns))}</h3>"
        f'<p class="sub">{esc(steady.summary)}</p>'
        + _stacked_bar(steady.buckets, 30, labels=True)
        + '<table><tr><th>{}</th><th class="num">{}</th><th class="num">{}</th></tr>'.format(
            *map(esc, CAUSE_COLUMNS))
        + "".join(rows) + "</table>" + inferred
    )


def _findings(findings: tuple[FindingLine, ...], title: str = "Findings") -> str:
    """In the analysis's order: problems by what fixing them saves, then passed rules, then skipped."""
    if not findings:
        return ""
    rows = []
    for f in findings:
        advice = (f'<div class="fix">{esc(f.fix)}</div>' if f.fix else "") + (
            f'<div class="advice">→ {esc(f.advice)}</div>' if f.advice else "")
        rows.append(f'<tr><td><span class="grade {esc(f.grade)}">{esc(f.label)}</span></td>'
                    f"<td><b>{esc(f.rule)}</b>: {esc(f.text)}{advice}</td></tr>")
    return f"<h3>{esc(title)}</h3><table>" + "".join(rows) + "</table>"


def _quality(section: QualitySection) -> str:
    """The trace-quality section: its headline alone for a clean trace."""
    rows = "".join(f'<tr><td class="num">{esc(count)}</td><td>{esc(text)}</td></tr>' for count, text in section.rows)
    return f"<h3>{esc(section.headline)}</h3>" + (f"<table>{rows}</table>" if rows else "")


def _per_step(report: DiagnosisReport) -> str:
    steps: StepTable = report.steps
    head = "".join(f'<th class="num">{swatch(BUCKET_COLOR[b])}{esc(BUCKET_LABEL[b])}</th>' for b in steps.shown)
    rows = []
    for row in steps.rows:
        if row.after_gap:
            rows.append(f'<tr><td colspan="{len(steps.shown) + 3}">…</td></tr>')
        label = (f"#{row.number}" + ('<span class="badge">cold</span>' if row.cold else "")
                 + ('<span class="badge">partial</span>' if row.partial else ""))
        cells = "".join(f'<td class="num">{esc(fmt_ns(row.buckets[b]))}</td>' for b in steps.shown)
        bar = _stacked_bar({b: float(row.buckets[b]) for b in BUCKETS}, 10, labels=False)
        rows.append(f'<tr><td>{label}</td><td class="num">{esc(fmt_ns(row.duration_ns))}</td>{cells}'
                    f'<td style="width:160px;vertical-align:middle">{bar}</td></tr>')
    cold = ("<p><b>Cold step(s)</b></p><ul>" + "".join(f"<li>{esc(step.sentence)}</li>" for step in report.cold)
            + "</ul>" if report.cold else "")
    left_out = f"<p>{esc(steps.left_out_note)}</p>" if steps.left_out else ""
    return ("<h3>Per step</h3>" + f'<table><tr><th>step</th><th class="num">time</th>{head}<th></th></tr>'
            + "".join(rows) + "</table>" + left_out + cold)


def _top(top: TopTable) -> str:
    rows = []
    for name, full, cells in zip(shortened(top.names, _NAME_WIDTH), top.names, top.rows):
        rows.append(f'<tr><td class="name" title="{esc(full)}">{esc(name)}</td>'
                    + "".join(f'<td class="num">{esc(value)}</td>' for value in cells) + "</tr>")
    head = "".join(f"<th>{esc(h)}</th>" if i == 0 else f'<th class="num">{esc(h)}</th>' for i, h in enumerate(top.headers))
    return f"<h3>{esc(top.title)}</h3><table><tr>{head}</tr>" + "".join(rows) + "</table>"


RENDERER = Renderer(name="html", extension=".html", render_diagnoses=render,
                    description="self-contained HTML page with a timeline picture of a representative step",
                    render_comparison=render_comparison)
