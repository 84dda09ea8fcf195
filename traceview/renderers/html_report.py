"""``--format html``: one self-contained HTML page per report (inline CSS and SVG, no scripts, no fonts).

One section per trace: what the trace is, where the steady-state step time goes (stacked bar
and table), the findings, the per-step table, a **timeline picture of a representative step**,
the top kernels and framework ops, and the launch statistics.

The timeline shows the steady step whose duration is closest to the median: one row per host
thread (one sub-row per nesting level) and per device stream, events coloured by kind, and on
top the attribution of that step (the same segments as the ``traceview: attribution`` track of
``traceview export``). To keep huge steps small, events narrower than a few pixels are not
drawn one by one: each row is rasterized into half-pixel columns, a column takes the colour of
the kind that covers most of it, and its opacity says how much of it is covered; runs of equal
columns become one rectangle. Wide events are drawn exactly, with their name as a tooltip.

Every name from a trace is escaped (``html.escape``); the output holds no generation time, so
the same traces give the same bytes.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from traceview.analyzers.attribution import attribution_segments, leaf_compute_ops
from traceview.renderers.base import Renderer
from traceview.renderers.report import listed_causes
from traceview.text import BUCKET_LABEL, gap_cause, gap_caveats, gap_headline
from traceview.renderers.report import RANKS_HEADERS, RANKS_TITLE, SPREAD_HEADERS, SPREAD_TITLE, STRAGGLERS_TITLE, rank_rows, ranks_headline, ranks_title, spread_rows, straggler_rows
from traceview.renderers.report import MEMORY_OPS_TITLE, MEMORY_OP_HEADERS, MEMORY_STEP_HEADERS, MEMORY_TITLE, memory_op_rows, memory_step_rows
from traceview.renderers.report import COMM_HEADERS, COMM_TITLE, OP_DIFF_HEADERS, OP_DIFF_TITLE, comm_rows, op_diff_rows
from traceview.text import fmt_count, fmt_ns, fmt_pct, shorten, trace_label, visible
from traceview.renderers.report import quality_headline, quality_rows
from traceview.text import distinct_shortened
from traceview.results import BUCKETS
from traceview.roles import Role
from traceview.schema import Kind

# Bucket colours: the terminal's BUCKET_STYLE hues, tuned for a white page.
BUCKET_COLOR: dict[str, str] = {
    "kernel": "#2f9e44",
    "communication": "#66d9e8",
    "memcpy": "#1098ad",
    "graph_build": "#ae3ec9",
    "sync_wait": "#e03131",
    "launch_overhead": "#f59f00",
    "input": "#3b5bdb",
    "host_compute": "#868e96",
    "idle": "#dee2e6",
}

# Event groups drawn on the timeline: (key, legend label, colour, kinds). The colour is the one
# of the bucket the kind usually lands in; framework ops and Python get their own pale tones so
# the launch calls under them stand out.
EVENT_GROUPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("kernel", "kernel", BUCKET_COLOR["kernel"], (Kind.KERNEL.value,)),
    ("communication", "communication kernel", BUCKET_COLOR["communication"], ()),  # role device_communication
    ("leaf", "compute op (CPU leaf op)", "#69db7c", ()),  # CPU-only traces: host ops counted as kernel time
    ("memcpy", "memcpy / memset", BUCKET_COLOR["memcpy"], (Kind.MEMCPY.value, Kind.MEMSET.value)),
    ("launch", "launch call", BUCKET_COLOR["launch_overhead"], (Kind.LAUNCH.value,)),
    ("runtime", "other runtime call", "#ffd43b", (Kind.RUNTIME.value,)),
    ("sync", "sync wait", BUCKET_COLOR["sync_wait"], (Kind.SYNC.value, Kind.DEVICE_SYNC.value)),
    ("graph_build", "graph build / compile", BUCKET_COLOR["graph_build"], (Kind.GRAPH_BUILD.value,
                                                                           Kind.COMPILE.value)),
    ("input", "input pipeline", BUCKET_COLOR["input"], (Kind.INPUT.value,)),
    ("host_op", "framework op", "#ffc9a9", (Kind.HOST_OP.value,)),
    ("python", "python", "#d0bfff", (Kind.PYTHON.value,)),
    ("annotation", "annotation / step marker", "#ced4da", (Kind.ANNOTATION.value, Kind.STEP.value)),
)
_GROUP_INDEX = {key: i for i, (key, _, _, _) in enumerate(EVENT_GROUPS)}
_KIND_GROUP = {kind: _GROUP_INDEX[key] for key, _, _, kinds in EVENT_GROUPS for kind in kinds}

GRADE_LABEL = {"high": "HIGH", "moderate": "MODERATE", "none": "ok", "skipped": "skipped"}

# Timeline geometry (px).
SVG_WIDTH = 1200
LABEL_WIDTH = 250
PLOT_WIDTH = SVG_WIDTH - LABEL_WIDTH - 12
RESOLUTION = 0.5  # raster column width
WIDE_PX = 3.0  # events at least this wide are drawn one by one
MAX_WIDE_PER_LEVEL = 400
MAX_LEVELS = 8  # host nesting levels drawn per thread (deeper ones share the last)
LEVEL_HEIGHT = 10
DEVICE_ROW_HEIGHT = 24
ATTRIBUTION_ROW_HEIGHT = 24
ROW_GAP = 5
AXIS_HEIGHT = 26
TEXT_MIN_PX = 70  # wide rects at least this wide get their name written inside
CHAR_PX = 6.2
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
.badge { font-size: 11px; padding: 0 5px; border-radius: 3px; background: #e7f5ff; color: #1971c2; margin-left: 4px; }
svg { display: block; }
svg.timeline { width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
svg text { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
"""


def esc(value: Any) -> str:
    """Text safe inside HTML content and attribute values (control characters dropped)."""
    return html.escape(visible(value), quote=True)


def _n(value: float) -> str:
    """A coordinate with at most two decimals and no trailing zeros (stable, compact)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


# ---------------------------------------------------------------------------------------------
# Page


def render(diagnoses: list[Any], comparisons: list[Any] | None = None, title: str | None = None,
           multi_rank: list[Any] | None = None, **_: Any) -> str:
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
    for cmp in comparisons or []:
        parts.append(_comparison(cmp))
    for run in multi_rank or []:
        parts.append(_multi_rank(run))
    if len(diagnoses) > 1:
        parts.append(_index(diagnoses))
    for i, diag in enumerate(diagnoses, start=1):
        parts.append(_section(diag, i))
    parts.append("<footer>Written by traceview. Times are per step; shares are of the mean steady step. "
                 "Colours: see the legends.</footer>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _comparison(cmp: Any) -> str:
    """The gap between two traces: headline, per-bucket deltas, op families."""
    gap = cmp.gap_ns
    lead, rest = gap_headline(cmp)
    rest += gap_caveats(cmp)
    base = Path(cmp.baseline.timeline.meta.source).name
    cand = Path(cmp.candidate.timeline.meta.source).name
    rows = "".join(
        f"<tr><td>{_swatch(BUCKET_COLOR[d.bucket])}{esc(BUCKET_LABEL[d.bucket])}</td>"
        f'<td class="num">{esc(fmt_ns(d.baseline_ns))}</td><td class="num">{esc(fmt_ns(d.candidate_ns))}</td>'
        f'<td class="num">{esc(fmt_ns(d.delta_ns))}</td>'
        f'<td class="num">{esc(fmt_pct(d.delta_ns / gap) if gap else "-")}</td></tr>'
        for d in cmp.buckets
    )
    families = "".join(
        f"<tr><td>{esc(family)}</td>"
        f'<td class="num">{row["baseline_ops_per_step"]:.1f}</td><td class="num">{row["candidate_ops_per_step"]:.1f}</td>'
        f'<td class="num">{esc(fmt_ns(row["baseline_compute_ns"]))}</td>'
        f'<td class="num">{esc(fmt_ns(row["candidate_compute_ns"]))}</td>'
        f'<td class="num">{esc(fmt_ns(row["baseline_dispatch_ns_per_op"]))}</td>'
        f'<td class="num">{esc(fmt_ns(row["candidate_dispatch_ns_per_op"]))}</td></tr>'
        for family, row in cmp.families.iterrows()
    )
    named = "; ".join(esc(gap_cause(d, gap)) for d in listed_causes(cmp))
    causes = f" Where the gap comes from: {named}." if named else ""
    op_diff = (f"<h3>{esc(OP_DIFF_TITLE)}</h3>" + _html_table(OP_DIFF_HEADERS, op_diff_rows(cmp), left=(0, 1), names=(0,))
               if len(cmp.op_diff) else "")
    return (
        f"<section><h2>{esc(cand)} vs {esc(base)}</h2>"
        f"<p><strong>{esc(lead)}</strong>{esc(rest)}{causes} "
        f"Named causes explain {esc(fmt_pct(cmp.explained_share))}.</p>"
        "<table><tr><th>cause</th><th class=\"num\">baseline</th><th class=\"num\">candidate</th>"
        f"<th class=\"num\">delta</th><th class=\"num\">of gap</th></tr>{rows}</table>"
        "<h3>Op families per steady step</h3><table><tr><th>family</th><th class=\"num\">ops base</th>"
        "<th class=\"num\">ops cand</th><th class=\"num\">compute base</th><th class=\"num\">compute cand</th>"
        f"<th class=\"num\">host/op base</th><th class=\"num\">host/op cand</th></tr>{families}</table>"
        f"{op_diff}<p>Cold start: {esc(cmp.cold.payback_note)}.</p>"
        f"<h3>Gap findings</h3>{_findings(cmp.findings)}</section>"
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


def _common_folder(diagnoses: list[Any]) -> str:
    folders = [Path(d.timeline.meta.source).parent for d in diagnoses]
    common = Path(os.path.commonpath([str(f) for f in folders])) if folders else Path(".")
    return common.name or str(common)


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0,),
                bold: Sequence[bool] = (), names: Sequence[int] = ()) -> str:
    """A table of text cells (escaped here); columns not in ``left`` are numbers, ``bold`` rows
    strong, columns in ``names`` hold trace names (monospace, broken anywhere to fit the page)."""
    align = [' class="name"' if i in names else "" if i in left else ' class="num"' for i in range(len(headers))]
    head = "".join(f"<th{a}>{esc(h)}</th>" for a, h in zip(align, headers))
    body = "".join(
        "<tr>" + "".join(f"<td{a}>{f'<strong>{esc(v)}</strong>' if i < len(bold) and bold[i] else esc(v)}</td>"
                         for a, v in zip(align, row)) + "</tr>"
        for i, row in enumerate(rows))
    return f"<table><tr>{head}</tr>{body}</table>"


def _multi_rank(run: Any) -> str:
    """The ranks of one run: per-rank steady step, stragglers per step, spread of each cause."""
    headers, rows = straggler_rows(run)
    stragglers = (f"<h3>{esc(STRAGGLERS_TITLE)}</h3>"
                  + _html_table(headers, [cells for _, cells in rows], bold=[f for f, _ in rows]) if rows else "")
    spread = spread_rows(run, BUCKET_LABEL)
    notes = "".join(f'<p class="sub">note: {esc(note)}</p>' for note in run.notes)
    return (f"<section><h2>{esc(ranks_title(run))}</h2><p>{esc(ranks_headline(run))}</p>"
            f"<h3>{esc(RANKS_TITLE)}</h3>" + _html_table(RANKS_HEADERS, rank_rows(run), left=(1,))
            + stragglers + f"<h3>{esc(SPREAD_TITLE)}</h3>"
            + _html_table(SPREAD_HEADERS, [cells for _, cells in spread]) + notes + "</section>")


def render_comparison(cmp: Any, **options: Any) -> str:
    """Both traces on one page, the comparison first."""
    title = (f"traceview compare: {_capture_name(cmp.candidate.timeline.meta.source)} vs "
             f"{_capture_name(cmp.baseline.timeline.meta.source)}")
    return render([cmp.baseline, cmp.candidate], comparisons=[cmp], title=title)


def _index(diagnoses: list[Any]) -> str:
    rows = []
    for i, diag in enumerate(diagnoses, start=1):
        meta = diag.timeline.meta
        buckets = diag.steady_attribution()
        top = max(diag.buckets, key=lambda b: (buckets[b], -BUCKETS.index(b)))
        total = sum(buckets.values())
        rows.append(
            f'<tr><td><a href="#trace-{i}">{esc(Path(meta.source).name)}</a></td><td>{esc(meta.framework)}</td>'
            f'<td class="num">{esc(fmt_ns(diag.steady_step_ns))}</td>'
            f"<td>{_swatch(BUCKET_COLOR[top])}{esc(BUCKET_LABEL[top])} "
            f"({esc(fmt_pct(buckets[top] / total if total else 0.0))})</td></tr>"
        )
    return ("<nav><table><tr><th>trace</th><th>framework</th><th class=\"num\">steady step</th>"
            "<th>largest cause</th></tr>" + "".join(rows) + "</table></nav>")


def _section(diag: Any, index: int) -> str:
    meta = diag.timeline.meta
    out = [f'<section id="trace-{index}">', f"<h2>{esc(Path(meta.source).name)}</h2>", _facts(diag)]
    out.append(_steady(diag))
    out.append(_timeline_block(diag))
    findings = _findings(getattr(diag, "findings", None) or [])
    if findings:
        out.append(findings)
    out.append(_quality(diag.quality))
    out.append(_per_step(diag))
    kernel_title = "Top kernels" if diag.timeline.has_device else "Top compute ops (leaf ops doing the math)"
    ops_title = "Top framework ops (top level, inclusive host time)"
    for title, frame in ((kernel_title, diag.kernels), (ops_title, diag.ops)):
        block = _top(frame, title)
        if block:
            out.append(block)
    out.append(_launch(diag))
    for block in (_device(diag), _communication(diag), _memory(diag)):
        if block:
            out.append(block)
    out.append("</section>")
    return "\n".join(out)


def _swatch(color: str, opacity: float = 1.0) -> str:
    style = f"background:{color}" + (f";opacity:{opacity}" if opacity < 1 else "")
    return f'<span class="swatch" style="{style}"></span>'


def _facts(diag: Any) -> str:
    meta = diag.timeline.meta
    devices = ", ".join(f"{d.index}: {d.name or 'device'}" for d in meta.devices) or "none (CPU-only trace)"
    kept = sum(meta.kept.values())
    dropped = sum(meta.dropped.values())
    reasons = "; ".join(f"{r}: {fmt_count(c)}" for r, c in sorted(meta.dropped.items(), key=lambda x: (-x[1], x[0])))
    kinds = ", ".join(f"{k} {fmt_count(c)}" for k, c in sorted(meta.kept.items(), key=lambda x: (-x[1], x[0])) if c)
    table = diag.steps.table
    cold = [f"#{n}" for n in table["number"][table["cold"]].tolist()]
    rows = [
        ("trace", meta.source),
        ("format", f"{meta.framework} · {meta.format}" + (f" · host {meta.host_name}" if meta.host_name else "")),
        ("devices", devices),
        ("events", f"{fmt_count(meta.input_events)} in file · {fmt_count(kept)} kept · {fmt_count(dropped)} dropped"),
        ("kept", kinds or "none"),
    ]
    if reasons:
        rows.append(("dropped", reasons))
    rows.append(("steps", f"{len(table)} found by rule '{diag.steps.rule}': {diag.steps.rule_detail}"
                 + (f" · cold: {', '.join(cold)}" if cold else "") + f" · steady: {len(diag.steady_positions)}"))
    rows += [("note", note) for note in diag.trace_notes]
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
        parts.append(f'<rect x="{_n(x)}%" y="0" width="{_n(w)}%" height="{height}" fill="{BUCKET_COLOR[b]}">'
                     f"<title>{esc(tip)}</title></rect>")
        text = _bar_label(BUCKET_LABEL[b], share) if labels else ""
        if text:
            color = _text_colors([BUCKET_COLOR[b]])[0]
            parts.append(f'<text x="{_n(x + w / 2)}%" y="{_n(height / 2 + 4)}" text-anchor="middle" '
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


def _steady(diag: Any) -> str:
    buckets = diag.steady_attribution()
    total = sum(buckets.values())
    details = diag.steady_details()
    where = "device + host" if diag.attribution.mode == "device" else "host threads (CPU-only)"
    rows = []
    for b in diag.buckets:
        value = buckets[b]
        share = value / total if total else 0.0
        rows.append(f"<tr><td>{_swatch(BUCKET_COLOR[b])}{esc(BUCKET_LABEL[b])}</td>"
                    f'<td class="num">{esc(fmt_ns(value))}</td><td class="num">{esc(fmt_pct(share))}</td></tr>')
        for key in sorted(k for k in details if k.startswith(b + ".")):
            rows.append(f'<tr class="detail"><td>{esc(key.split(".", 1)[1])}</td>'
                        f'<td class="num">{esc(fmt_ns(details[key]))}</td>'
                        f'<td class="num">{esc(fmt_pct(details[key] / total if total else 0.0))}</td></tr>')
    return (
        f"<h3>Steady-state step: {esc(fmt_ns(diag.steady_step_ns))}</h3>"
        f'<p class="sub">median of {len(diag.steady_positions)} steady steps; mean {esc(fmt_ns(total))}; '
        f"attribution on {esc(where)}</p>"
        + _stacked_bar(buckets, 30, labels=True)
        + '<table><tr><th>cause</th><th class="num">per step</th><th class="num">share</th></tr>'
        + "".join(rows) + "</table>"
    )


def _findings(findings: list[Any]) -> str:
    if not findings:
        return ""
    rows = []
    # In the analysis's order: problems by the time they explain, then passed rules, then skipped.
    for f in findings:
        advice = (f'<div class="advice">→ {esc(f.advice)}</div>'
                  if f.grade in ("high", "moderate") and f.advice else "")
        summary = f.summary if f.grade != "none" else f"no problem: {f.summary}"
        rows.append(f'<tr><td><span class="grade {esc(f.grade)}">{esc(GRADE_LABEL.get(f.grade, f.grade))}</span></td>'
                    f"<td><b>{esc(f.rule)}</b>: {esc(summary)}{advice}</td></tr>")
    return "<h3>Findings</h3><table>" + "".join(rows) + "</table>"


def _quality(quality: Any) -> str:
    """The trace-quality section: its headline alone for a clean trace."""
    rows = "".join(f'<tr><td class="num">{esc(count)}</td><td>{esc(text)}</td></tr>'
                   for count, text in quality_rows(quality))
    return f"<h3>{esc(quality_headline(quality))}</h3>" + (f"<table>{rows}</table>" if rows else "")


def _per_step(diag: Any) -> str:
    per = diag.attribution.per_step
    table = diag.steps.table
    shown = [b for b in BUCKETS if per[b].any()]
    head = "".join(f'<th class="num">{_swatch(BUCKET_COLOR[b])}{esc(BUCKET_LABEL[b])}</th>' for b in shown)
    rows = []
    per_bucket = {b: per[b].tolist() for b in BUCKETS}
    for i, row in enumerate(table.tuples()):
        label = f"#{row.number}" + ('<span class="badge">cold</span>' if row.cold else "")
        cells = "".join(f'<td class="num">{esc(fmt_ns(per_bucket[b][i]))}</td>' for b in shown)
        bar = _stacked_bar({b: float(per_bucket[b][i]) for b in BUCKETS}, 10, labels=False)
        rows.append(f'<tr><td>{label}</td><td class="num">{esc(fmt_ns(row.duration))}</td>{cells}'
                    f'<td style="width:160px;vertical-align:middle">{bar}</td></tr>')
    cold = _cold(diag)
    return ("<h3>Per step</h3>" + f'<table><tr><th>step</th><th class="num">time</th>{head}<th></th></tr>'
            + "".join(rows) + "</table>" + cold)


def _cold(diag: Any) -> str:
    table = diag.steps.table
    cold = np.flatnonzero(table["cold"])
    if not len(cold):
        return ""
    steady = diag.steady_step_ns
    per = diag.attribution.per_step
    items = []
    for i in cold.tolist():
        row = table.take([i]).records()[0]
        extra = float(row["duration"]) - steady
        text = (f"#{row['number']}: {fmt_ns(row['duration'])} ({fmt_ns(extra)} over steady) · graph build/compile "
                f"{fmt_ns(int(per['graph_build'][i]))} in {row['graph_build_events']} events")
        if extra > 0 and steady > 0:
            text += f" · {extra / steady:.1f} steady steps' worth"
        items.append(f"<li>{esc(text)}</li>")
    return "<p><b>Cold step(s)</b></p><ul>" + "".join(items) + "</ul>"


def _top(frame: Any, title: str) -> str:
    if frame is None or not len(frame):
        return ""
    rows = []
    for name, row in zip(distinct_shortened(frame["name"].tolist(), _NAME_WIDTH), frame.tuples()):
        rows.append(f'<tr><td class="name" title="{esc(row.name)}">{esc(name)}</td>'
                    f'<td class="num">{row.count_per_step:.1f}</td>'
                    f'<td class="num">{esc(fmt_ns(row.time_per_step_ns))}</td>'
                    f'<td class="num">{esc(fmt_ns(row.mean_ns))}</td>'
                    f'<td class="num">{esc(fmt_pct(row.share))}</td></tr>')
    return (f"<h3>{esc(title)}</h3><table><tr><th>name</th><th class=\"num\">n/step</th>"
            "<th class=\"num\">time/step</th><th class=\"num\">mean</th><th class=\"num\">share</th></tr>"
            + "".join(rows) + "</table>")


def _launch(diag: Any) -> str:
    s = diag.launch
    rows = [("framework ops dispatched per step", f"{s.ops_per_step:.1f}"),
            ("host time per op (inclusive)", fmt_ns(s.host_ns_per_op))]
    if diag.timeline.has_device:
        rows += [("kernel launches per step", f"{s.launches_per_step:.1f}"),
                 ("launch call median / p95", f"{fmt_ns(s.launch_call_median_ns)} / {fmt_ns(s.launch_call_p95_ns)}"),
                 ("launch delay median / p95",
                  f"{fmt_ns(s.launch_delay_median_ns)} / {fmt_ns(s.launch_delay_p95_ns)}"),
                 ("device time per kernel (mean)", fmt_ns(s.device_ns_per_kernel)),
                 ("short kernels (device < launch call)", fmt_pct(s.short_kernel_share))]
    body = "".join(f'<tr><td>{esc(k)}</td><td class="num">{esc(v)}</td></tr>' for k, v in rows)
    return f"<h3>Launch / dispatch</h3><table>{body}</table>"


def _device(diag: Any) -> str:
    frame = diag.device
    if frame is None or not len(frame):
        return ""
    rows = []
    for row in frame.tuples():
        rows.append(f'<tr><td class="num">{row.device}</td><td class="num">{esc(fmt_ns(row.span_ns))}</td>'
                    f'<td class="num">{esc(fmt_ns(row.busy_ns))}</td>'
                    f'<td class="num">{esc(fmt_ns(row.idle_ns))} ({esc(fmt_pct(row.idle_share))})</td>'
                    f'<td class="num">{esc(fmt_ns(row.compute_ns))} ({esc(fmt_pct(row.compute_share))})</td></tr>')
    return ("<h3>Device time, whole trace</h3><table><tr><th class=\"num\">device</th><th class=\"num\">span</th>"
            "<th class=\"num\">busy</th><th class=\"num\">idle</th><th class=\"num\">compute</th></tr>"
            + "".join(rows) + "</table>")


def _communication(diag: Any) -> str:
    """Collective kernels per step and the part compute hides (only for traces with collectives)."""
    if diag.communication is None:
        return ""
    return (f"<h3>{esc(COMM_TITLE)}</h3>"
            '<p class="sub">comm: time in which a collective kernel runs; overlapped: a compute kernel runs too; '
            "exposed: the communication bucket; overlap = overlapped / comm (HTA's comm/comp overlap)</p>"
            + _html_table(COMM_HEADERS, comm_rows(diag)))


def _memory(diag: Any) -> str:
    """Peak memory per step and the ops that allocate most (only for traces with allocator samples)."""
    if diag.memory is None:
        return ""
    return (f"<h3>{esc(MEMORY_TITLE)}</h3>"
            '<p class="sub">peak allocated: the most the allocator held at once inside the step</p>'
            + _html_table(MEMORY_STEP_HEADERS, memory_step_rows(diag), left=(0, 1))
            + f"<h3>{esc(MEMORY_OPS_TITLE)}</h3>" + _html_table(MEMORY_OP_HEADERS, memory_op_rows(diag), left=(0, 1)))


# ---------------------------------------------------------------------------------------------
# Timeline of a representative step


def representative_step(diag: Any) -> int:
    """Position of the steady step whose duration is closest to the median (earliest on ties)."""
    positions = diag.steady_positions
    if not len(positions):
        return 0
    durations = diag.steps.table["duration"][positions].astype(np.float64)
    median = float(np.median(durations))
    return int(positions[int(np.argmin(np.abs(durations - median)))])


def _timeline_block(diag: Any) -> str:
    table = diag.steps.table
    if not len(table):
        return ""
    pos = representative_step(diag)
    row = table.take([pos]).records()[0]
    svg, groups_used = timeline_svg(diag, pos)
    legend_events = "".join(
        f"<span>{_swatch(EVENT_GROUPS[g][2])}{esc(EVENT_GROUPS[g][1])}</span>" for g in sorted(groups_used)
    )
    legend_buckets = "".join(f"<span>{_swatch(BUCKET_COLOR[b])}{esc(BUCKET_LABEL[b])}</span>" for b in diag.buckets)
    return (
        f"<h3>Timeline of step #{esc(row['number'])} ({esc(fmt_ns(row['duration']))})</h3>"
        f'<p class="sub">the steady step closest to the median; top row: what each stretch of the step is '
        f"attributed to; below: one row per host thread (a sub-row per nesting level) and per device stream. "
        f"Faded columns are only partly covered by events too short to draw one by one.</p>"
        + svg
        + f'<div class="legend"><b>events</b>{legend_events}</div>'
        + f'<div class="legend"><b>attribution</b>{legend_buckets}</div>'
    )


def _event_groups(diag: Any) -> np.ndarray:
    """Colour group of every event (-1: not drawn)."""
    ev = diag.timeline.table
    kind = ev["kind"]
    lookup = np.array([_KIND_GROUP.get(k, -1) for k in kind.categories.tolist()] + [-1], dtype=np.int64)
    groups = lookup[kind.codes] if len(kind) else np.array([], dtype=np.int64)
    if not diag.timeline.has_device and len(kind):
        host_op = kind.isin([Kind.HOST_OP.value]) & (ev["device"] < 0)
        groups = np.where(leaf_compute_ops(ev, host_op), _GROUP_INDEX["leaf"], groups)
    communication = ev["role"].isin([Role.DEVICE_COMMUNICATION.value])
    return np.where(communication, _GROUP_INDEX["communication"], groups)


def timeline_svg(diag: Any, position: int) -> tuple[str, set[int]]:
    """The SVG picture of one step window, and the event groups it shows (for the legend)."""
    ev = diag.timeline.table
    table = diag.steps.table
    start = int(table["start"][position])
    end = int(table["end"][position])
    span = max(end - start, 1)
    scale = PLOT_WIDTH / span
    ts = ev["ts"].astype(np.int64)
    te = ts + ev["dur"].astype(np.int64)
    groups = _event_groups(diag)
    inside = (ts < end) & ((te > start) | ((te == ts) & (ts >= start))) & (groups >= 0)
    rows_idx = np.flatnonzero(inside)
    x0 = (np.clip(ts[rows_idx], start, end) - start) * scale
    x1 = (np.clip(te[rows_idx], start, end) - start) * scale
    grp = groups[rows_idx]
    names = ev["name"].at(rows_idx)
    durs = (te - ts)[rows_idx]
    tracks = ev["track"].at(rows_idx)
    device = ev["device"][rows_idx]
    depth = ev["depth"][rows_idx]

    # Rows: host threads first (by pid, tid), then device streams (by device, stream).
    key_a = np.where(device >= 0, device, ev["pid"][rows_idx])
    key_b = np.where(device >= 0, ev["stream"][rows_idx], ev["tid"][rows_idx])
    track_keys: dict[str, tuple[int, int, int, str]] = {}
    for t, d, a, b in zip(tracks.tolist(), device.tolist(), key_a.tolist(), key_b.tolist()):
        if t not in track_keys:
            track_keys[t] = (int(d >= 0), int(a), int(b), str(t))
    ordered = sorted(track_keys, key=lambda t: track_keys[t])

    colors = [g[2] for g in EVENT_GROUPS]
    body: list[str] = []
    y = 6.0
    # Attribution row.
    segments = attribution_segments(diag.timeline, diag.steps, diag.attribution)
    segments = segments.take(segments["step"] == position)
    bucket_index = {b: i for i, b in enumerate(BUCKETS)}
    s0 = (segments["start"] - start) * scale
    s1 = (segments["end"] - start) * scale
    sb = np.array([bucket_index[b] for b in segments["bucket"].tolist()], dtype=np.int64)
    seg_names = [BUCKET_LABEL[b] for b in segments["bucket"].tolist()]
    seg_durs = (segments["end"] - segments["start"])
    body.append(_row_label("attribution", y, ATTRIBUTION_ROW_HEIGHT, bold=True))
    body.extend(_draw_level(s0, s1, sb, seg_names, seg_durs, [BUCKET_COLOR[b] for b in BUCKETS], y,
                            ATTRIBUTION_ROW_HEIGHT, text_colors=_text_colors([BUCKET_COLOR[b] for b in BUCKETS])))
    y += ATTRIBUTION_ROW_HEIGHT + ROW_GAP + 2
    body.append(f'<line x1="0" x2="{SVG_WIDTH}" y1="{_n(y - ROW_GAP / 2 - 1)}" y2="{_n(y - ROW_GAP / 2 - 1)}" '
                f'stroke="#adb5bd" stroke-width="1"/>')
    used: set[int] = set()
    for t in ordered:
        sel = np.flatnonzero(tracks == t)
        is_device = track_keys[t][0] == 1
        if is_device:
            levels = np.zeros(len(sel), dtype=np.int64)
            n_levels, height = 1, DEVICE_ROW_HEIGHT
        else:
            levels = np.clip(depth[sel].astype(np.int64), 0, MAX_LEVELS - 1)
            n_levels = int(levels.max()) + 1 if len(levels) else 1
            height = LEVEL_HEIGHT
        row_height = n_levels * height
        body.append(f'<rect x="0" y="{_n(y - 2)}" width="{SVG_WIDTH}" height="{_n(row_height + 4)}" '
                    f'fill="{"#f8f9fa" if is_device else "#ffffff"}"/>')
        body.append(_row_label(str(t), y, min(row_height, 18)))
        for level in range(n_levels):
            part = sel[levels == level]
            if not len(part):
                continue
            used.update(int(g) for g in np.unique(grp[part]))
            body.extend(_draw_level(x0[part], x1[part], grp[part], names[part], durs[part], colors,
                                    y + level * height, height - 1, text_colors=_text_colors(colors)))
        y += row_height + ROW_GAP
        body.append(f'<line x1="0" x2="{SVG_WIDTH}" y1="{_n(y - ROW_GAP / 2)}" y2="{_n(y - ROW_GAP / 2)}" '
                    f'stroke="#e9ecef" stroke-width="1"/>')
    plot_bottom = y
    axis = _axis(span, plot_bottom)
    height = plot_bottom + AXIS_HEIGHT
    svg = (f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SVG_WIDTH} {_n(height)}" '
           f'width="{SVG_WIDTH}" height="{_n(height)}" role="img" aria-label="timeline of one step">'
           + "".join(axis[0]) + "".join(body) + "".join(axis[1]) + "</svg>")
    return svg, used


def _text_colors(colors: Sequence[str]) -> list[str]:
    """Dark text on light fills, white on dark ones."""
    out = []
    for c in colors:
        r, g, b = (int(c[i:i + 2], 16) for i in (1, 3, 5))
        out.append("#212529" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff")
    return out


def _row_label(text: str, y: float, height: float, bold: bool = False) -> str:
    label = shorten(text, 40)
    weight = ' font-weight="600"' if bold else ""
    return (f'<text x="6" y="{_n(y + min(height, 18) / 2 + 4)}" font-size="11"{weight} fill="#343a40">'
            f"<title>{esc(text)}</title>{esc(label)}</text>")


def _draw_level(x0: np.ndarray, x1: np.ndarray, group: np.ndarray, names: Sequence[Any], durs: np.ndarray,
                colors: Sequence[str], y: float, height: float, text_colors: Sequence[str]) -> list[str]:
    """Rects for one row level: all events rasterized into columns, wide ones also drawn one by one."""
    out: list[str] = []
    widths = x1 - x0
    wide = np.flatnonzero(widths >= WIDE_PX)
    if len(wide) > MAX_WIDE_PER_LEVEL:
        keep = np.argsort(-widths[wide], kind="stable")[:MAX_WIDE_PER_LEVEL]
        wide = np.sort(wide[keep])
    # Everything is rasterized (so column opacities are right at the edges of wide events); wide
    # events are then drawn on top, exactly, with a tooltip.
    out.extend(_raster(x0, x1, group, colors, y, height))
    ox = LABEL_WIDTH
    for i in wide.tolist():
        g = int(group[i])
        tip = f"{names[i]} · {fmt_ns(durs[i])}"
        rect = (f'<rect x="{_n(ox + x0[i])}" y="{_n(y)}" width="{_n(widths[i])}" height="{_n(height)}" '
                f'fill="{colors[g]}"><title>{esc(tip)}</title></rect>')
        out.append(rect)
        if widths[i] >= TEXT_MIN_PX and height >= 12:
            chars = int((widths[i] - 6) / CHAR_PX)
            label = shorten(str(names[i]), max(chars, 4))
            out.append(f'<text x="{_n(ox + x0[i] + 3)}" y="{_n(y + height / 2 + 4)}" font-size="10.5" '
                       f'fill="{text_colors[g]}" pointer-events="none">{esc(label)}</text>')
    return out


def _raster(x0: np.ndarray, x1: np.ndarray, group: np.ndarray, colors: Sequence[str], y: float,
            height: float) -> list[str]:
    """Columns of RESOLUTION px: the colour covering most of each, opacity = covered share; runs merged."""
    if not len(x0):
        return []
    n_cols = int(math.ceil(PLOT_WIDTH / RESOLUTION))
    grid = np.arange(n_cols + 1, dtype=np.float64) * RESOLUTION
    n_groups = len(colors)
    coverage = np.zeros((n_groups, n_cols), dtype=np.float64)
    for g in np.unique(group).tolist():
        mask = group == g
        a = np.sort(x0[mask])
        b = np.sort(x1[mask])
        coverage[g] = np.diff(_covered_upto(a, grid) - _covered_upto(b, grid))
    total = np.minimum(coverage.sum(axis=0) / RESOLUTION, 1.0)
    best = coverage.argmax(axis=0)
    # Opacity in quarters so neighbouring columns merge; anything covered shows at least faintly.
    level = np.where(total > 0, np.maximum(np.ceil(total * 4 - 1e-9), 1), 0).astype(np.int64)
    code = np.where(level > 0, best * 8 + level, -1)
    out: list[str] = []
    change = np.flatnonzero(np.diff(code)) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [n_cols]))
    for s, e in zip(starts.tolist(), ends.tolist()):
        c = int(code[s])
        if c < 0:
            continue
        g, lvl = divmod(c, 8)
        opacity = "" if lvl == 4 else f' fill-opacity="{lvl / 4:g}"'
        out.append(f'<rect x="{_n(LABEL_WIDTH + s * RESOLUTION)}" y="{_n(y)}" width="{_n((e - s) * RESOLUTION)}" '
                   f'height="{_n(height)}" fill="{colors[g]}"{opacity} shape-rendering="crispEdges"/>')
    return out


def _covered_upto(sorted_points: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """For each grid value g: Σ max(0, g − p) over the points (a piecewise-linear running sum)."""
    count = np.searchsorted(sorted_points, grid, side="left")
    prefix = np.concatenate(([0.0], np.cumsum(sorted_points)))
    return count * grid - prefix[count]


def _axis(span: int, bottom: float) -> tuple[list[str], list[str]]:
    """Grid lines (drawn under the rows) and tick labels (drawn at the bottom)."""
    step = _nice_step(span / 8)
    unit, unit_name = next((u, name) for u, name in ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))
                           if step >= u)
    grid: list[str] = []
    labels: list[str] = [f'<line x1="{LABEL_WIDTH}" x2="{LABEL_WIDTH + PLOT_WIDTH}" y1="{_n(bottom)}" '
                         f'y2="{_n(bottom)}" stroke="#495057" stroke-width="1"/>']
    scale = PLOT_WIDTH / span
    t = 0
    while t <= span:
        x = LABEL_WIDTH + t * scale
        grid.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="2" y2="{_n(bottom)}" stroke="#e9ecef" stroke-width="1"/>')
        value = t / unit
        text = f"{value:g} {unit_name}" if t else "0"
        anchor = "start" if t == 0 else "middle"
        labels.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(bottom)}" y2="{_n(bottom + 4)}" stroke="#495057"/>')
        labels.append(f'<text x="{_n(x)}" y="{_n(bottom + 16)}" font-size="11" text-anchor="{anchor}" '
                      f'fill="#495057">{esc(text)}</text>')
        t += step
    return grid, labels


def _nice_step(raw: float) -> int:
    """The 1-2-5 step (integer ns) at or above ``raw``."""
    if raw <= 1:
        return 1
    exponent = 10 ** int(math.floor(math.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * exponent >= raw:
            return int(m * exponent)
    return int(10 * exponent)


RENDERER = Renderer(name="html", extension=".html", render_diagnoses=render,
                    description="self-contained HTML page with a timeline picture of a representative step",
                    render_comparison=render_comparison)
