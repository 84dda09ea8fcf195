"""The default terminal report (rich): what the trace is, its steps, where the time goes.

Fits an 80-column terminal; colours come only from styles, so ``NO_COLOR`` or a pipe gives plain
text. Kernel and op names are shortened in the middle to fit their column.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np

from rich.console import Console, Group
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from traceview.errors import one_line
from traceview.renderers.base import Renderer
from traceview.renderers.report import listed_causes
from traceview.text import BUCKET_LABEL, gap_cause, gap_caveats, gap_headline
from traceview.renderers.report import COMM_HEADERS, COMM_TITLE, OP_DIFF_HEADERS, OP_DIFF_TITLE, comm_rows, op_diff_rows
from traceview.text import fmt_count, fmt_ns, fmt_pct, shorten, trace_label, visible
from traceview.renderers.report import RANKS_HEADERS, RANKS_TITLE, SPREAD_HEADERS, SPREAD_TITLE, STRAGGLERS_TITLE, rank_rows, ranks_headline, ranks_title, spread_rows, straggler_rows
from traceview.renderers.report import QUALITY_TITLE, baseline_label, by_baseline, quality_headline, quality_rows
from traceview.text import distinct_shortened
from traceview.renderers.report import MEMORY_OPS_TITLE, MEMORY_OP_HEADERS, MEMORY_STEP_HEADERS, MEMORY_TITLE, memory_op_rows, memory_step_rows
from traceview.results import BUCKETS

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
_BAR_CHARS = "█"


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


def _header(diag: Any) -> Table:
    meta = diag.timeline.meta
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    devices = ", ".join(f"{d.index}: {_flat(d.name) or 'device'}" for d in meta.devices) or "none (CPU-only trace)"
    grid.add_row("trace", _flat(meta.source))
    grid.add_row("format", f"{meta.framework} · {meta.format}" + (f" · host {_flat(meta.host_name)}" if meta.host_name else ""))
    grid.add_row("devices", devices)
    dropped = sum(meta.dropped.values())
    reasons = " · ".join(f"{r} {fmt_count(c)}" for r, c in sorted(meta.dropped.items(), key=lambda x: (-x[1], x[0])))
    grid.add_row(
        "events",
        f"{fmt_count(meta.input_events)} in file · {fmt_count(sum(meta.kept.values()))} kept · "
        f"{fmt_count(dropped)} dropped" + (f" ({reasons})" if reasons else ""),
    )
    table = diag.steps.table
    cold = [f"#{n}" for n in table["number"][table["cold"]].tolist()]
    grid.add_row(
        "steps",
        f"{len(table)} found by rule '{diag.steps.rule}': {_flat(diag.steps.rule_detail)}"
        + (f" · cold: {', '.join(cold)}" if cold else "") + f" · steady: {len(diag.steady_positions)}",
    )
    for note in diag.trace_notes:
        grid.add_row("note", _flat(note))
    return grid


def _steady(diag: Any, width: int) -> Group:
    buckets = diag.steady_attribution()
    total = sum(buckets.values())
    title = Text.assemble(
        ("Steady-state step ", "bold"),
        (fmt_ns(diag.steady_step_ns), "bold cyan"),
        (f"  (median of {len(diag.steady_positions)}; mean {fmt_ns(total)}; "
         + (f"unprofiled {fmt_ns(diag.unprofiled_step_ns)}, profiler ×{diag.profiler_inflation:.2f}; "
            if diag.profiler_inflation is not None else "")
         +
         f"attribution on {'device + host' if diag.attribution.mode == 'device' else 'host threads (CPU-only)'})", ""),
    )
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("cause")
    table.add_column("per step", justify="right")
    table.add_column("share", justify="right")
    table.add_column("", no_wrap=True)
    bar_width = max(10, width - 48)
    details = diag.steady_details()
    for b in diag.buckets:
        value = buckets[b]
        share = value / total if total else 0.0
        cells = int(round(share * bar_width))
        table.add_row(Text(BUCKET_LABEL[b], style=BUCKET_STYLE[b]), fmt_ns(value), fmt_pct(share),
                      Text(_BAR_CHARS * cells, style=BUCKET_STYLE[b]))
        for key in sorted(k for k in details if k.startswith(b + ".")):
            table.add_row(Text(f"  {key.split('.', 1)[1]}", style="dim"), Text(fmt_ns(details[key]), style="dim"),
                          Text(fmt_pct(details[key] / total if total else 0.0), style="dim"), "")
    parts: list[Any] = [title, attribution_bar(buckets, width), _legend(diag.buckets), table]
    if any(k.endswith(".inferred") for k in details):
        parts.append(Text(f"inferred = unrecorded gaps on the step's thread; {diag.attribution.gap_rule}", style="dim"))
    return Group(*parts)


def _per_step(diag: Any) -> Table:
    per = diag.attribution.per_step
    table = Table(title="Per step", title_justify="left", title_style="bold", box=None, header_style="bold")
    table.add_column("step", no_wrap=True)
    table.add_column("time", justify="right")
    short = {"kernel": "kern", "communication": "comm", "memcpy": "copy", "graph_build": "build", "sync_wait": "sync",
             "launch_overhead": "launch", "input": "input", "host_compute": "host", "idle": "idle"}
    shown = [b for b in BUCKETS if per[b].any()]
    for b in shown:
        table.add_column(short[b], justify="right", style=BUCKET_STYLE[b])
    partial = set(diag.steps.partial)
    per_bucket = {b: per[b].tolist() for b in shown}
    for i, row in enumerate(diag.steps.table.tuples()):
        label = f"#{row.number}" + (" cold" if row.cold else "") + (" partial" if i in partial else "")
        table.add_row(label, fmt_ns(row.duration), *[fmt_ns(per_bucket[b][i], compact=True) for b in shown])
    return table


def _cold(diag: Any, width: int) -> Group | None:
    """Each cold step with its own attribution bar, so cold and steady read side by side."""
    table = diag.steps.table
    cold = np.flatnonzero(table["cold"])
    if not len(cold):
        return None
    steady = diag.steady_step_ns
    parts: list[Any] = [Text("Cold step(s)", style="bold")]
    per = diag.attribution.per_step
    for i in cold.tolist():
        row = table.take([i]).records()[0]
        extra = row["duration"] - steady
        builds = int(per["graph_build"][i])
        line = Text(f"  #{row['number']}: {fmt_ns(row['duration'])} ({fmt_ns(extra)} over steady) · graph "
                    f"build/compile {fmt_ns(builds)} in {row['graph_build_events']} events")
        if extra > 0 and steady > 0:
            line.append(f" · {extra / steady:.1f} steady steps' worth")
        parts.append(line)
        parts.append(attribution_bar({b: float(per[b][i]) for b in BUCKETS}, width))
    return Group(*parts)


def _legend(buckets: tuple[str, ...]) -> Text:
    text = Text()
    for b in buckets:
        text.append("█ ", style=BUCKET_STYLE[b])
        text.append(f"{BUCKET_LABEL[b]}  ")
    return text


def _top(frame: Any, title: str, width: int, unit_label: str) -> Table | None:
    if frame is None or not len(frame):
        return None
    table = Table(title=title, title_justify="left", title_style="bold", box=None, header_style="bold")
    name_width = max(20, width - 40)
    # The name column folds rather than cut: its cells are already shortened to be told apart.
    table.add_column("name", max_width=name_width, overflow="fold")
    table.add_column(unit_label, justify="right")
    table.add_column("time/step", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("share", justify="right")
    # Names cut so that no two rows read the same (two layers' MatMul:_MklMatMul differ in the middle).
    for name, row in zip(distinct_shortened(frame["name"].tolist(), name_width), frame.tuples()):
        table.add_row(name, f"{row.count_per_step:.1f}", fmt_ns(row.time_per_step_ns), fmt_ns(row.mean_ns),
                      fmt_pct(row.share))
    return table


def _launch(diag: Any) -> Table:
    s = diag.launch
    table = Table(title="Launch / dispatch", title_justify="left", title_style="bold", box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("framework ops dispatched per step", f"{s.ops_per_step:.1f}")
    table.add_row("host time per op (inclusive)", fmt_ns(s.host_ns_per_op))
    if diag.timeline.has_device:
        table.add_row("kernel launches per step", f"{s.launches_per_step:.1f}")
        table.add_row("launch call median / p95", f"{fmt_ns(s.launch_call_median_ns)} / {fmt_ns(s.launch_call_p95_ns)}")
        table.add_row("launch delay median / p95", f"{fmt_ns(s.launch_delay_median_ns)} / {fmt_ns(s.launch_delay_p95_ns)}")
        table.add_row("device time per kernel (mean)", fmt_ns(s.device_ns_per_kernel))
        table.add_row("short kernels (device < launch call)", f"{fmt_pct(s.short_kernel_share)}")
    return table


def _device(diag: Any) -> Table | None:
    frame = diag.device
    if frame is None or not len(frame):
        return None
    table = Table(title="Device time, whole trace (HTA temporal-breakdown definitions)", title_justify="left",
                  title_style="bold", box=None, header_style="bold")
    for col in ("device", "span", "busy", "idle", "compute"):
        table.add_column(col, justify="right")
    for row in frame.tuples():
        table.add_row(str(row.device), fmt_ns(row.span_ns), fmt_ns(row.busy_ns),
                      f"{fmt_ns(row.idle_ns)} ({fmt_pct(row.idle_share)})",
                      f"{fmt_ns(row.compute_ns)} ({fmt_pct(row.compute_share)})")
    return table


def _table_block(title: str, headers: tuple[str, ...], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", box=None, header_style="bold")
    for i, col in enumerate(headers):
        table.add_column(col, justify="right" if i else "left", no_wrap=not i)
    for row in rows:
        table.add_row(*row)
    return table


def _memory(diag: Any, width: int) -> list[Table]:
    """Peak memory per step and the ops that allocate most (only for traces with allocator samples)."""
    if diag.memory is None:
        return []
    return [_table_block(MEMORY_TITLE, MEMORY_STEP_HEADERS, memory_step_rows(diag)),
            _table_block(MEMORY_OPS_TITLE, MEMORY_OP_HEADERS, memory_op_rows(diag, max(30, width - 40)))]


def _communication(diag: Any) -> Table | None:
    """Collective kernels per step: how much compute hides (only for traces with collectives)."""
    if diag.communication is None:
        return None
    table = Table(title=COMM_TITLE, title_justify="left", title_style="bold", box=None, header_style="bold")
    for i, col in enumerate(COMM_HEADERS):
        table.add_column(col, justify="right" if i else "left", no_wrap=not i)
    for row in comm_rows(diag):
        table.add_row(*row)
    return table


GRADE_STYLE = {"high": "bold red", "moderate": "yellow", "none": "green", "skipped": "bright_black"}
GRADE_LABEL = {"high": "HIGH", "moderate": "MODERATE", "none": "ok", "skipped": "skipped"}


def findings_block(findings: list[Any], title: str = "Findings") -> Table | None:
    """In the analysis's order (analyzers/findings/diagnosis.py ``ranked``): problems first, the largest
    cause first whatever its grade (a high grade on a small share does not outrank it), then
    passed rules, then skipped ones."""
    if not findings:
        return None
    table = Table(title=title, title_justify="left", title_style="bold", box=None, show_header=False,
                  pad_edge=False)
    table.add_column(no_wrap=True, justify="right")
    table.add_column(ratio=1)
    for f in findings:
        body = Text()
        body.append(f"{f.rule}: ", style="bold")
        body.append(_flat(f.summary) if f.grade != "none" else f"no problem: {_flat(f.summary)}")
        if f.grade in ("high", "moderate") and f.advice:
            body.append(f"\n→ {_flat(f.advice)}", style="dim")
        table.add_row(Text(GRADE_LABEL.get(f.grade, f.grade), style=GRADE_STYLE.get(f.grade, "")), body)
    return table


def quality_block(quality: Any, title: str = QUALITY_TITLE) -> Text | Table:
    """The trace-quality section: one line for a clean trace, else a count and a sentence per
    problem (and the readers' notes)."""
    headline = quality_headline(quality, title)
    rows = quality_rows(quality)
    if not rows:
        return Text(headline)
    table = Table(title=headline, title_justify="left", title_style="bold", box=None, show_header=False,
                  pad_edge=False)
    table.add_column(no_wrap=True, justify="right")
    table.add_column(ratio=1)
    for count, sentence in rows:
        table.add_row(Text(count, style="dim" if count == "note" else "bold red"), _flat(sentence))
    return table


def render_one(diag: Any, width: int) -> list[Any]:
    parts: list[Any] = [Panel(_header(diag), title="traceview diagnose", title_align="left", width=width)]
    parts.append(_steady(diag, width))
    parts.append(_per_step(diag))
    cold = _cold(diag, width)
    if cold is not None:
        parts.append(cold)
    kernel_title = "Top kernels" if diag.timeline.has_device else "Top compute ops (self time of ops doing the math)"
    for block in (_top(diag.kernels, kernel_title, width, "n/step"),
                  _top(diag.ops, "Top framework ops (top level, inclusive host time)", width, "n/step"),
                  _launch(diag), _device(diag), _communication(diag), *_memory(diag, width),
                  findings_block(diag.findings), quality_block(diag.quality)):
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


def render(diagnoses: list[Any], width: int = 100, color: bool = False, comparisons: list[Any] | None = None,
           multi_rank: list[Any] | None = None, **_: Any) -> str:
    text = "\n".join(_print_all(render_one(diag, width), width, color) for diag in diagnoses)
    if comparisons:
        text += "\n" + _print_all([_across(group, width) for group in by_baseline(comparisons)], width, color)
    for run in multi_rank or []:
        text += "\n" + _print_all(multi_rank_parts(run, width), width, color)
    return text


def multi_rank_parts(run: Any, width: int) -> list[Any]:
    """The ranks of one run: per-rank steady step, stragglers per step, spread of each cause."""
    parts: list[Any] = [Group(Text(ranks_title(run), style="bold"), Text(ranks_headline(run)))]
    ranks = Table(title=RANKS_TITLE, title_justify="left", title_style="bold", box=None, header_style="bold")
    for header in RANKS_HEADERS:
        ranks.add_column(header, justify="left" if header == "trace" else "right", no_wrap=True,
                         max_width=max(20, width - 50) if header == "trace" else None)
    for row in rank_rows(run):
        row[1] = shorten(row[1], max(20, width - 50))
        ranks.add_row(*row)
    parts.append(ranks)
    headers, rows = straggler_rows(run)
    if rows:
        table = Table(title=STRAGGLERS_TITLE, title_justify="left", title_style="bold", box=None, header_style="bold")
        for header in headers:
            table.add_column(header, justify="right", no_wrap=True)
        for flagged, cells in rows:
            table.add_row(*cells[:4], Text(cells[4], style="bold red" if flagged else ""), *cells[5:])
        parts.append(table)
    spread = Table(title=SPREAD_TITLE, title_justify="left", title_style="bold", box=None, header_style="bold")
    for header in SPREAD_HEADERS:
        spread.add_column(header, justify="left" if header == "cause" else "right", no_wrap=True)
    for bucket, cells in spread_rows(run, BUCKET_LABEL):
        spread.add_row(Text(cells[0], style=BUCKET_STYLE.get(bucket, "")), *cells[1:])
    parts.append(spread)
    parts.extend(Text(f"note: {_flat(note)}", style="dim") for note in run.notes)
    return parts


def _across(comparisons: list[Any], width: int) -> Group:
    """One line per trace compared with the folder's torch baseline, under a title as wide as
    the report (a table's own title wraps at the table's width)."""
    title = Text(f"Across the traces: each compared with {_flat(baseline_label(comparisons[0]))} "
                 f"({fmt_ns(comparisons[0].baseline_step_ns)} per steady step)", style="bold")
    table = Table(box=None, header_style="bold")
    table.add_column("trace", no_wrap=True)
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("×", justify="right", no_wrap=True)
    table.add_column("largest cause of the gap", no_wrap=True)
    table.add_column("expl.", justify="right", no_wrap=True)
    for cmp in comparisons:
        top = cmp.ranked()[0]
        cause = f"{'+' if top.delta_ns >= 0 else '-'}{fmt_ns(abs(top.delta_ns))} {BUCKET_LABEL[top.bucket]}"
        table.add_row(_flat(trace_label(cmp.candidate.timeline.meta.source)), fmt_ns(cmp.candidate_step_ns),
                      f"{cmp.ratio:.2f}", cause,
                      fmt_pct(cmp.explained_share))
    return Group(title, table)


def _comparison_parts(cmp: Any, width: int) -> list[Any]:
    base, cand = cmp.baseline, cmp.candidate
    gap = cmp.gap_ns
    header = Table.grid(padding=(0, 1))
    header.add_column(style="bold", no_wrap=True)
    header.add_column()
    for label, diag in (("baseline", base), ("candidate", cand)):
        m = diag.timeline.meta
        header.add_row(label, f"{_flat(m.source)} · {m.framework} · {len(diag.steady_positions)} steady steps")
    parts: list[Any] = [Panel(header, title="traceview compare", title_align="left", width=width)]
    lead, rest = gap_headline(cmp)
    rest += gap_caveats(cmp)
    headline = Text()
    headline.append(lead, style="bold")
    headline.append(f"{rest} Medians: candidate {fmt_ns(cand.steady_step_ns)}, baseline {fmt_ns(base.steady_step_ns)}.")
    parts.append(headline)
    causes = listed_causes(cmp)
    if causes:
        sentence = Text("Where the gap comes from: ", style="bold")
        sentence.append("; ".join(gap_cause(d, gap) for d in causes))
        paused = (f"; pauses of the step's thread (the machine took the core) {fmt_ns(cmp.paused_delta_ns)}"
                  if cmp.paused_delta_ns else "")
        sentence.append(f". Named causes explain {fmt_pct(cmp.explained_share)}{paused}; unexplained (nothing "
                        f"recorded) {fmt_ns(cmp.unexplained_ns)}.")
        parts.append(sentence)
    table = Table(box=None, header_style="bold")
    table.add_column("cause")
    table.add_column("baseline", justify="right")
    table.add_column("candidate", justify="right")
    table.add_column("delta", justify="right")
    table.add_column("of gap", justify="right")
    for d in cmp.buckets:
        table.add_row(Text(BUCKET_LABEL[d.bucket], style=BUCKET_STYLE[d.bucket]), fmt_ns(d.baseline_ns),
                      fmt_ns(d.candidate_ns), fmt_ns(d.delta_ns), fmt_pct(d.delta_ns / gap) if gap else "-")
    table.add_row(Text("step", style="bold"), fmt_ns(cmp.baseline_step_ns), fmt_ns(cmp.candidate_step_ns),
                  fmt_ns(gap), "100.0 %" if gap else "-")
    parts.append(table)
    fam = cmp.families
    if not fam.empty:
        ft = Table(title="Op families per steady step (A = baseline, B = candidate; host = dispatch per op)",
                   title_justify="left", title_style="bold", box=None, header_style="bold")
        ft.add_column("family")
        for header in ("ops A", "ops B", "compute A", "compute B", "host A", "host B"):
            ft.add_column(header, justify="right", no_wrap=True)
        for family in fam.index:
            row = fam.loc[family]
            ft.add_row(family, f"{row['baseline_ops_per_step']:.1f}", f"{row['candidate_ops_per_step']:.1f}",
                       fmt_ns(row["baseline_compute_ns"]), fmt_ns(row["candidate_compute_ns"]),
                       fmt_ns(row["baseline_dispatch_ns_per_op"]), fmt_ns(row["candidate_dispatch_ns_per_op"]))
        parts.append(ft)
    if len(cmp.op_diff):
        parts.append(_op_diff(cmp, width))
    c = cmp.cold
    cold = Text("Cold start: ", style="bold")
    cold.append(f"baseline {fmt_ns(c.baseline_cold_ns) if c.baseline_cold_ns is not None else 'no cold step'}"
                f" (graph build {fmt_ns(c.baseline_graph_build_ns)}), candidate "
                f"{fmt_ns(c.candidate_cold_ns) if c.candidate_cold_ns is not None else 'no cold step'}"
                f" (graph build {fmt_ns(c.candidate_graph_build_ns)}); {_flat(c.payback_note)}.")
    parts.append(cold)
    block = findings_block(cmp.findings, "Gap findings")
    if block is not None:
        parts.append(block)
    for label, diag in (("baseline", base), ("candidate", cand)):
        block = findings_block(diag.findings, f"Findings: {label} ({diag.timeline.meta.framework})")
        if block is not None:
            parts.append(block)
    parts += [quality_block(diag.quality, f"{QUALITY_TITLE}, {label}") for label, diag in (("baseline", base),
                                                                                            ("candidate", cand))]
    return parts


def _op_diff(cmp: Any, width: int) -> Table:
    """Ops and kernels aligned by name: names cut to fit, never so that two read the same."""
    table = Table(title=OP_DIFF_TITLE, title_justify="left", title_style="bold", box=None, header_style="bold")
    for i, header in enumerate(OP_DIFF_HEADERS):
        # The name column folds rather than cut: its cells are already shortened to be told apart.
        table.add_column(header, justify="right" if i > 1 else "left", no_wrap=i > 0,
                         overflow="fold" if i == 0 else "ellipsis")
    for row in op_diff_rows(cmp, max(16, width - 56)):
        table.add_row(*row)
    return table


def render_comparison(comparison: Any, width: int = 100, color: bool = False, **_: Any) -> str:
    return _print_all(_comparison_parts(comparison, width), width, color)


RENDERER = Renderer(name="terminal", extension=".txt", render_diagnoses=render,
                    description="rich terminal report (default)", render_comparison=render_comparison)
