"""The default terminal report (rich): the report's sections (renderers/report.py) laid out.

Fits an 80-column terminal; colours come only from styles, so ``NO_COLOR`` or a pipe gives plain
text. Kernel and op names are shortened in the middle to fit their column.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from traceview.errors import one_line
from traceview.renderers.base import Renderer
from traceview.renderers.report import (CAUSE_COLUMNS, ComparisonReport, DiagnosisReport, FindingLine, Grid,
                                        LeftOutSection, QualitySection, RanksReport, SteadyState, StepTable, TopTable,
                                        across_grid, by_baseline, comparison_report, diagnosis_report,
                                        left_out_section, ranks_report, reported_traces, shortened, traces_grid,
                                        whatif_report)
from traceview.results import BUCKETS, Comparison, Diagnosis, LeftOut, MultiRank, WhatIf
from traceview.text import BUCKET_LABEL, fmt_count, fmt_ns, fmt_pct, shorten, visible

BUCKET_STYLE: dict[str, str] = {
    "kernel": "green",
    "communication": "bright_cyan",
    "memcpy": "cyan",
    "graph_build": "magenta",
    "sync_wait": "red",
    "launch_overhead": "yellow",
    "input": "blue",
    "host_compute": "bright_white",
    "idle": "bright_black",
}
# The per-step table's column headers (the bucket labels do not fit 80 columns).
BUCKET_SHORT: dict[str, str] = {"kernel": "kern", "communication": "comm", "memcpy": "copy", "graph_build": "build",
                                "sync_wait": "sync", "launch_overhead": "launch", "input": "input",
                                "host_compute": "host", "idle": "idle"}
_BAR_CHARS = "█"
GRADE_STYLE = {"high": "bold red", "moderate": "yellow", "none": "green", "skipped": "bright_black"}


def attribution_bar(buckets: dict[str, float], width: int) -> Text:
    """One line of coloured blocks proportional to each bucket (largest remainders rounding)."""
    total = sum(buckets.values())
    text = Text()
    if total <= 0:
        return text
    raw = {b: buckets.get(b, 0.0) / total * width for b in BUCKETS}
    cells = {b: int(v) for b, v in raw.items()}
    leftover = width - sum(cells.values())
    for b in sorted(BUCKETS, key=lambda k: (-(raw[k] - cells[k]), BUCKETS.index(k)))[:leftover]:
        cells[b] += 1
    for b in BUCKETS:
        if cells[b]:
            text.append(_BAR_CHARS * cells[b], style=BUCKET_STYLE[b])
    return text


def _flat(text: Any) -> str:
    """Trace-derived text (a file, track or op name, or a sentence holding one) on one line: its
    newlines and tabs written as ``\\n`` / ``\\t``, other control characters dropped."""
    return one_line(visible(text))


def _header(report: DiagnosisReport) -> Table:
    facts = report.facts
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("trace", _flat(facts.source))
    grid.add_row("format", f"{facts.framework} · {facts.format}" + (f" · host {_flat(facts.host)}" if facts.host else ""))
    grid.add_row("devices", _flat(facts.devices))
    reasons = " · ".join(f"{r} {fmt_count(c)}" for r, c in facts.dropped_by_reason)
    grid.add_row("events", facts.events + (f" ({reasons})" if reasons else ""))
    grid.add_row("steps", _flat(facts.steps))
    for note in facts.notes:
        grid.add_row("note", _flat(note))
    return grid


def _steady(steady: SteadyState, buckets: tuple[str, ...], width: int) -> Group:
    title = Text.assemble(("Steady-state step ", "bold"), (fmt_ns(steady.median_ns), "bold cyan"),
                          (f"  ({steady.summary})", ""))
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    cause, per_step, share = CAUSE_COLUMNS
    table.add_column(cause)
    table.add_column(per_step, justify="right")
    table.add_column(share, justify="right")
    table.add_column("", no_wrap=True)
    bar_width = max(10, width - 48)
    for row in steady.rows:
        if row.detail:
            table.add_row(Text(f"  {row.label}", style="dim"), Text(fmt_ns(row.ns), style="dim"),
                          Text(fmt_pct(row.share), style="dim"), "")
        else:
            style = BUCKET_STYLE[row.bucket]
            table.add_row(Text(row.label, style=style), fmt_ns(row.ns), fmt_pct(row.share),
                          Text(_BAR_CHARS * int(round(row.share * bar_width)), style=style))
    parts: list[Any] = [title, attribution_bar(steady.buckets, width), _legend(buckets), table]
    if steady.inferred_note:
        parts.append(Text(steady.inferred_note, style="dim"))
    return Group(*parts)


def _critical(report: DiagnosisReport) -> Text | None:
    return Text(report.critical.sentence) if report.critical is not None else None


def _per_step(steps: StepTable) -> Table | Group:
    table = Table(title="Per step", title_justify="left", title_style="bold", box=None, header_style="bold")
    table.add_column("step", no_wrap=True)
    table.add_column("time", justify="right")
    for b in steps.shown:
        table.add_column(BUCKET_SHORT[b], justify="right", style=BUCKET_STYLE[b])
    for row in steps.rows:
        if row.after_gap:
            table.add_row("…", style="dim")
        label = f"#{row.number}" + (" cold" if row.cold else "") + (" partial" if row.partial else "")
        table.add_row(label, fmt_ns(row.duration_ns), *[fmt_ns(row.buckets[b], compact=True) for b in steps.shown])
    return Group(table, Text(steps.left_out_note, style="dim")) if steps.left_out else table


def _cold(report: DiagnosisReport, width: int) -> Group | None:
    """Each cold step with its own attribution bar, so cold and steady read side by side."""
    if not report.cold:
        return None
    parts: list[Any] = [Text("Cold step(s)", style="bold")]
    for step in report.cold:
        parts.append(Text(f"  {step.sentence}"))
        parts.append(attribution_bar(step.buckets, width))
    return Group(*parts)


def _legend(buckets: tuple[str, ...]) -> Text:
    text = Text()
    for b in buckets:
        text.append("█ ", style=BUCKET_STYLE[b])
        text.append(f"{BUCKET_LABEL[b]}  ")
    return text


def _top(top: TopTable | None, width: int) -> Table | None:
    if top is None:
        return None
    table = Table(title=top.title, title_justify="left", title_style="bold", box=None, header_style="bold")
    name_width = max(20, width - 40)
    # The name column folds rather than cut: its cells are already shortened to be told apart.
    table.add_column(top.headers[0], max_width=name_width, overflow="fold")
    for header in top.headers[1:]:
        table.add_column(header, justify="right")
    for name, cells in zip(shortened(top.names, name_width), top.rows):
        table.add_row(name, *cells)
    return table


def _key_values(grid: Grid) -> Table:
    table = Table(title=grid.title, title_justify="left", title_style="bold", box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for row in grid.rows:
        table.add_row(*row)
    return table


def _grid(grid: Grid, width: int, name_width: int | None = None) -> Table:
    """A grid as a rich table: text columns left, numbers right; names cut to ``name_width``."""
    table = Table(title=grid.title or None, title_justify="left", title_style="bold", box=None, header_style="bold")
    for i, header in enumerate(grid.headers):
        table.add_column(header, justify="left" if i in grid.left else "right", no_wrap=not i)
    columns = {i: shortened([row[i] for row in grid.rows], name_width) for i in grid.names} if name_width else {}
    for r, row in enumerate(grid.rows):
        cells: list[Any] = [columns[i][r] if i in columns else cell for i, cell in enumerate(row)]
        if grid.bucket_of(r):
            cells[0] = Text(cells[0], style=BUCKET_STYLE.get(grid.bucket_of(r), ""))
        table.add_row(*cells)
    return table


def findings_block(findings: tuple[FindingLine, ...], title: str = "Findings") -> Table | None:
    """In the analysis's order (analyzers/findings/diagnosis.py ``ranked``): problems first, the
    largest cause first whatever its grade (a high grade on a small share does not outrank it),
    then passed rules, then skipped ones."""
    if not findings:
        return None
    table = Table(title=title, title_justify="left", title_style="bold", box=None, show_header=False,
                  pad_edge=False)
    table.add_column(no_wrap=True, justify="right")
    table.add_column(ratio=1)
    for f in findings:
        body = Text()
        body.append(f"{f.rule}: ", style="bold")
        body.append(_flat(f.text))
        if f.fix:
            body.append(f"\n{f.fix}", style="bold")
        if f.advice:
            body.append(f"\n→ {_flat(f.advice)}", style="dim")
        table.add_row(Text(f.label, style=GRADE_STYLE.get(f.grade, "")), body)
    return table


def quality_block(section: QualitySection) -> Text | Table:
    """The trace-quality section: one line for a clean trace, else a count and a sentence per
    problem (and the readers' notes)."""
    if not section.rows:
        return Text(section.headline)
    table = Table(title=section.headline, title_justify="left", title_style="bold", box=None, show_header=False,
                  pad_edge=False)
    table.add_column(no_wrap=True, justify="right")
    table.add_column(ratio=1)
    for count, sentence in section.rows:
        table.add_row(Text(count, style="dim" if count == "note" else "bold red"), _flat(sentence))
    return table


def render_one(report: DiagnosisReport, width: int) -> list[Any]:
    parts: list[Any] = [Panel(_header(report), title="traceview diagnose", title_align="left", width=width),
                        _steady(report.steady, report.buckets, width), _per_step(report.steps)]
    memory = [_grid(grid, width, max(30, width - 40)) for grid in report.memory]
    for block in (_critical(report), _cold(report, width), _top(report.kernels, width), _top(report.ops, width),
                  _key_values(report.launch), _grid(report.device, width) if report.device else None,
                  _grid(report.communication, width) if report.communication else None, *memory,
                  findings_block(report.findings), quality_block(report.quality)):
        if block is not None:
            parts.append(block)
    return parts


def _print_all(parts: list[Any], width: int, color: bool) -> str:
    """Render rich parts to a string: fixed width, colour only when asked, no emoji or highlighting."""
    buffer = io.StringIO()
    # markup=False: text from the trace (op names, file names) is printed as is, never read as rich
    # markup; the report's own styling is carried by Text styles, not markup.
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      color_system="standard" if color else None, highlight=False, emoji=False, legacy_windows=False,
                      markup=False)
    for part in parts:
        console.print(_Visible(part))
        console.print()
    text = buffer.getvalue()
    if color:
        return text
    # Rich pads every line to the width; piped into a file or a diff, the padding is noise.
    return "\n".join(line.rstrip() for line in text.split("\n"))


class _Visible:
    """A part whose text reaches the terminal without control characters, wherever the trace text
    sits in it (a name inside a finding's sentence, a track label in the step rule): an escape
    sequence in an op or file name cannot move the cursor, recolour or retitle the terminal. Rich
    gives those characters no width, so dropping them leaves the layout as it was measured."""

    def __init__(self, part: Any) -> None:
        self.part = part

    def __rich_console__(self, console: Console, options: Any) -> Iterator[Segment]:
        for segment in console.render(self.part, options):
            yield segment if segment.control else Segment(visible(segment.text), segment.style)


def render(diagnoses: list[Diagnosis], width: int = 100, color: bool = False,
           comparisons: list[Comparison] | None = None, multi_rank: list[MultiRank] | None = None,
           left_out: list[LeftOut] | None = None, per_rank: bool = False, per_trace: bool = False,
           rank_rows: int | None = None, **_: Any) -> str:
    """A folder's report, the summary first: the traces left out, each run of several ranks
    (bounded: report.ranks_in_view), the traces compared within their workload, a line per
    trace, then the traces' own reports (a large run's typical and outlying ranks only, unless
    ``per_rank``; of a workload's traces its baseline's only, unless ``per_trace``:
    report.reported_traces)."""
    parts: list[str] = []
    section = left_out_section(left_out, len(diagnoses))
    if section is not None:
        parts.append(_print_all([_left_out(section)], width, color))
    for run in multi_rank or []:
        parts.append(_print_all(multi_rank_parts(ranks_report(run, per_rank, rank_rows), width), width, color))
    if comparisons:
        parts.append(_print_all([_across(across_grid(group)) for group in by_baseline(comparisons)], width, color))
    summary = traces_grid(diagnoses, multi_rank)
    if summary is not None:
        parts.append(_print_all([_across(summary)], width, color))
    shown, notes = reported_traces(diagnoses, multi_rank, per_rank, comparisons, per_trace)
    if notes:
        parts.append(_print_all([Text(f"note: {_flat(note)}", style="dim") for note in notes], width, color))
    parts.extend(_print_all(render_one(diagnosis_report(diag), width), width, color) for diag in shown)
    return "\n".join(parts)


def _left_out(section: LeftOutSection) -> Text:
    text = Text(section.headline, style="bold red")
    for source, why in section.rows:
        text.append(f"\n  {visible(source)}: ", style="bold")
        text.append(visible(why))
    return text


def multi_rank_parts(report: RanksReport, width: int) -> list[Any]:
    """The ranks of one run: per-rank steady step, stragglers per step, spread of each cause."""
    parts: list[Any] = [Group(Text(report.title, style="bold"), Text(report.headline))]
    trace_width = max(20, width - 50)
    ranks = Table(title=report.ranks.title, title_justify="left", title_style="bold", box=None, header_style="bold")
    for header in report.ranks.headers:
        ranks.add_column(header, justify="left" if header == "trace" else "right", no_wrap=True,
                         max_width=trace_width if header == "trace" else None)
    for row in report.ranks.rows:
        ranks.add_row(row[0], shorten(row[1], trace_width), *row[2:])
    parts.append(ranks)
    if report.stragglers is not None:
        grid = report.stragglers
        kept = _columns_that_fit(grid, width, fixed=STRAGGLER_FIXED_COLUMNS)
        table = Table(title=grid.title, title_justify="left", title_style="bold", box=None, header_style="bold")
        for i in kept:
            table.add_column(grid.headers[i], justify="right", no_wrap=True)
        for r, cells in enumerate(grid.rows):
            shown = [Text(cells[i], style="bold red" if i == grid.emphasis and grid.is_flagged(r) else "")
                     for i in kept]
            table.add_row(*shown)
        parts.append(table)
        left_out = [grid.headers[i] for i in range(len(grid.headers)) if i not in kept]
        if left_out:
            parts.append(Text(f"note: the per-rank columns {', '.join(left_out)} do not fit in {width} columns "
                              "(--width shows them; --format json holds every rank's step times)", style="dim"))
    spread = Table(title=report.spread.title, title_justify="left", title_style="bold", box=None, header_style="bold")
    for header in report.spread.headers:
        spread.add_column(header, justify="left" if header == "cause" else "right", no_wrap=True)
    for r, cells in enumerate(report.spread.rows):
        spread.add_row(Text(cells[0], style=BUCKET_STYLE.get(report.spread.bucket_of(r), "")), *cells[1:])
    parts.append(spread)
    parts.extend(Text(f"note: {_flat(note)}", style="dim") for note in report.notes)
    return parts


# The stragglers table's columns before its per-rank ones: step, median, slowest, rank, over median
# (report.ranks_report); "rank" names the step's slowest rank, whose own column is kept first.
STRAGGLER_FIXED_COLUMNS = 5
STRAGGLER_SLOWEST_RANK = 3


def _columns_that_fit(grid: Grid, width: int, fixed: int) -> list[int]:
    """The columns of ``grid`` to show in ``width`` cells without cutting a cell: the first
    ``fixed``, then as many of the others as fit — those of the ranks slowest in some step first
    (a straggler's own time), the rest in order — shown in their order."""
    def natural(i: int) -> int:  # (box=None: one cell of padding on each side)
        return max(cell_len(grid.headers[i]), *(cell_len(row[i]) for row in grid.rows)) + 2

    slowest = {f"r{row[STRAGGLER_SLOWEST_RANK]}" for row in grid.rows}
    optional = sorted(range(fixed, len(grid.headers)), key=lambda i: (grid.headers[i] not in slowest, i))
    kept, used = list(range(fixed)), sum(natural(i) for i in range(fixed))
    for i in optional:
        if used + natural(i) <= width:
            kept.append(i)
            used += natural(i)
    return sorted(kept)


def _across(grid: Grid) -> Group:
    """One line per trace (compared with its workload's baseline, or summarised), under a title as
    wide as the report (a table's own title wraps at the table's width)."""
    title = Text(_flat(grid.title), style="bold")
    table = Table(box=None, header_style="bold")
    for i, header in enumerate(grid.headers):
        table.add_column(header, justify="left" if i in grid.left else "right", no_wrap=True)
    for row in grid.rows:
        table.add_row(_flat(row[0]), *row[1:])
    return Group(title, table)


def _comparison_parts(report: ComparisonReport, width: int) -> list[Any]:
    header = Table.grid(padding=(0, 1))
    header.add_column(style="bold", no_wrap=True)
    header.add_column()
    for side in report.sides:
        header.add_row(side.role, f"{_flat(side.source)} · {side.framework} · {side.steady_steps} steady steps")
    parts: list[Any] = [Panel(header, title="traceview compare", title_align="left", width=width)]
    headline = Text()
    headline.append(report.lead, style="bold")
    headline.append(report.rest)
    parts.append(headline)
    if report.causes:
        lead, _, rest = report.causes.partition(": ")
        sentence = Text(f"{lead}: ", style="bold")
        sentence.append(rest)
        parts.append(sentence)
    buckets = Table(box=None, header_style="bold")
    for i, header in enumerate(report.buckets.headers):
        buckets.add_column(header, justify="left" if i in report.buckets.left else "right")
    for r, row in enumerate(report.buckets.rows):
        style = "bold" if report.buckets.is_flagged(r) else BUCKET_STYLE[report.buckets.bucket_of(r)]
        buckets.add_row(Text(row[0], style=style), *row[1:])
    parts.append(buckets)
    if report.families is not None:
        families = _grid(report.families, width)
        for column in families.columns[1:]:
            column.no_wrap = True
        parts.append(families)
    if report.op_diff is not None:
        parts.append(_op_diff(report.op_diff, width))
    cold = Text("Cold start: ", style="bold")
    cold.append(_flat(report.cold_start))
    parts.append(cold)
    for block in (findings_block(report.findings, "Gap findings"),
                  *(findings_block(d.findings, f"Findings: {side.role} ({side.framework})")
                    for side, d in zip(report.sides, (report.baseline, report.candidate)))):
        if block is not None:
            parts.append(block)
    parts += [quality_block(section) for section in report.qualities]
    return parts


def _op_diff(grid: Grid, width: int) -> Table:
    """Ops and kernels aligned by name: names cut to fit, never so that two read the same."""
    table = Table(title=grid.title, title_justify="left", title_style="bold", box=None, header_style="bold")
    for i, header in enumerate(grid.headers):
        # The name column folds rather than cut: its cells are already shortened to be told apart.
        table.add_column(header, justify="right" if i > 1 else "left", no_wrap=i > 0,
                         overflow="fold" if i == 0 else "ellipsis")
    names = shortened([row[0] for row in grid.rows], max(16, width - 56))
    for name, row in zip(names, grid.rows):
        table.add_row(name, *row[1:])
    return table


def render_comparison(comparison: Comparison, width: int = 100, color: bool = False, **_: Any) -> str:
    return _print_all(_comparison_parts(comparison_report(comparison), width), width, color)


def render_whatif(result: WhatIf, width: int = 100, color: bool = False, **_: Any) -> str:
    report = whatif_report(result)
    header = Table.grid(padding=(0, 1))
    header.add_column(style="bold", no_wrap=True)
    header.add_column()
    header.add_row("trace", _flat(report.source))
    header.add_row("replay", report.transform)
    parts: list[Any] = [Panel(header, title="traceview whatif", title_align="left", width=width),
                        Text(report.headline, style="bold"), _grid(report.steps, width)]
    if report.path:
        parts.append(Text(report.path))
    if report.fixes is not None:
        parts.append(_grid(report.fixes, width))
    parts.extend(Text(f"note: {note}", style="dim") for note in report.notes)
    return _print_all(parts, width, color)


RENDERER = Renderer(name="terminal", extension=".txt", render_diagnoses=render,
                    description="rich terminal report (default)", render_comparison=render_comparison,
                    render_whatif=render_whatif)
