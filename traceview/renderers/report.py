"""The report, built once from the results: typed sections that every text format lays out.

:func:`diagnosis_report` and :func:`comparison_report` turn a result into sections — what the
trace is, the steady-state causes, the per-step and cold-step tables, the top kernels and ops,
launch statistics, device time, communication, memory, findings, trace quality; for a
comparison its verdict, causes, op tables and cold start; for several ranks the cross-rank
tables. The terminal, markdown and HTML renderers only lay these out (and escape trace text as
their format needs): a number, a label or a sentence is decided here once, so the formats cannot
drift apart. Numbers stay numbers where a format writes them its own way (the terminal's compact
per-step cells); the words come from :mod:`traceview.text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

from traceview.results import (BUCKETS, LANE_KEYS, LANES, Comparison, Diagnosis, Finding, LeftOut, MultiRank,
                               Quality, WhatIf)
from traceview.text import (BUCKET_LABEL, distinct_shortened, fmt_bytes, fmt_count, fmt_ns, fmt_pct, gap_cause,
                            gap_caveats, gap_headline, trace_label, visible)

# ---------------------------------------------------------------------------------------------
# Building blocks


@dataclass(frozen=True)
class Grid:
    """A table of text cells: its title, headers and rows, which columns hold numbers (right
    aligned) and which trace names (shortened, folded and escaped as names by each format)."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    left: tuple[int, ...] = (0,)  # columns of text, aligned left; the others hold numbers
    names: tuple[int, ...] = ()  # columns holding trace names
    buckets: tuple[str, ...] = ()  # per row: the bucket whose colour its first cell takes ("": none)
    flagged: tuple[bool, ...] = ()  # per row: whether it stands out (a straggler step, a total)
    emphasis: int = 0  # the column whose cell a flagged row emphasises
    note: str = ""  # what the columns mean, for a format with room to say it

    def bucket_of(self, row: int) -> str:
        return self.buckets[row] if row < len(self.buckets) else ""

    def is_flagged(self, row: int) -> bool:
        return row < len(self.flagged) and self.flagged[row]


# ---------------------------------------------------------------------------------------------
# One trace


@dataclass(frozen=True)
class Facts:
    """What the trace is."""

    source: str
    framework: str
    format: str
    host: str
    devices: str  # "0: NVIDIA A100, 1: …" or "none (CPU-only trace)"
    events_in_file: int
    kept: int
    dropped: int
    dropped_by_reason: tuple[tuple[str, int], ...]  # most first
    kept_by_kind: tuple[tuple[str, int], ...]  # most first
    steps: str  # "5 found by rule 'markers': … · cold: #0 · steady: 4"
    step_rule: str
    step_rule_detail: str
    step_count: int
    notes: tuple[str, ...]  # the readers' and the analyses' (Diagnosis.trace_notes)

    @property
    def format_line(self) -> str:
        return f"{self.framework} · {self.format}" + (f" · host {self.host}" if self.host else "")

    @property
    def events(self) -> str:
        return (f"{fmt_count(self.events_in_file)} in file · {fmt_count(self.kept)} kept · "
                f"{fmt_count(self.dropped)} dropped")


@dataclass(frozen=True)
class CauseRow:
    """A bucket's (or a detail's) mean time per steady step and its share of the mean step."""

    bucket: str  # the bucket (a detail row: the bucket it belongs to)
    label: str  # the bucket's label, or the detail's name
    ns: float
    share: float
    detail: bool = False


@dataclass(frozen=True)
class LeftOutSection:
    """A folder's traces that could not be read: at the top of its report, each named with why."""

    headline: str  # "Left out: 1 of 64 traces could not be read (the report is partial)"
    rows: tuple[tuple[str, str], ...]  # (trace, why)


def left_out_section(left_out: list[LeftOut] | tuple[LeftOut, ...] | None, read: int) -> LeftOutSection | None:
    """The section for ``left_out`` beside the ``read`` traces reported; None when none is left out."""
    if not left_out:
        return None
    total = read + len(left_out)
    return LeftOutSection(f"Left out: {len(left_out)} of {total} traces could not be read (the report is partial)",
                          tuple((item.source, item.reason) for item in left_out))


# The columns of the steady step's cause table in every format: the rows are means over the
# steady steps (they add up to the mean), the headline is the median.
CAUSE_COLUMNS = ("cause", "mean per step", "share")


@dataclass(frozen=True)
class SteadyState:
    """The steady-state step and where its time goes."""

    median_ns: float
    mean_ns: float
    summary: str  # "median of 4; mean 1.46 ms; …; attribution on host threads (CPU-only)"
    buckets: dict[str, float]  # mean ns per shown bucket (the bar)
    rows: tuple[CauseRow, ...]  # the buckets, each followed by its details
    inferred: tuple[tuple[str, float], ...]  # (bucket, ns) of the parts inferred from unrecorded gaps
    gap_rule: str  # how the inferred-gap threshold was chosen

    @property
    def inferred_note(self) -> str:
        return f"inferred = unrecorded gaps on the step's thread; {self.gap_rule}" if self.inferred else ""


@dataclass(frozen=True)
class StepRow:
    number: int
    cold: bool
    partial: bool
    duration_ns: int
    buckets: dict[str, int]  # ns per bucket (every bucket, shown or not)
    after_gap: bool = False  # steps before it, since the last row listed, are not listed


# A trace of more steps than STEP_ROWS_ALL lists some in the per-step table (40,000 rows are no
# report): the first STEP_ROWS_FIRST (the steady run's start), the STEP_ROWS_SLOWEST slowest of the
# others, and every cold and partial step; the JSON report has every step.
STEP_ROWS_ALL = 30
STEP_ROWS_FIRST = 10
STEP_ROWS_SLOWEST = 10


@dataclass(frozen=True)
class StepTable:
    """The steps' time and causes (every step, or those STEP_ROWS_ALL and below name); the
    columns of the buckets some step has time in."""

    shown: tuple[str, ...]  # buckets with time in some step, in BUCKETS order
    rows: tuple[StepRow, ...]
    left_out: int = 0  # steps not listed

    @property
    def left_out_note(self) -> str:
        return (f"{self.left_out:,} more steps not listed: the first {STEP_ROWS_FIRST}, the {STEP_ROWS_SLOWEST} "
                "slowest of the others and every cold or partial one are (every step: --format json)"
                ) if self.left_out else ""


@dataclass(frozen=True)
class ColdStep:
    number: int
    sentence: str  # "#0: 4.79 ms (3.43 ms over steady) · graph build/compile 0 ns in 0 events · …"
    buckets: dict[str, float]  # ns per bucket (its bar)


@dataclass(frozen=True)
class TopTable:
    """The top kernels (compute ops on CPU) or framework ops: whole names, shortened by each format."""

    title: str
    names: tuple[str, ...]
    rows: tuple[tuple[str, str, str, str], ...]  # n/step, time/step, mean, share
    headers: tuple[str, ...] = ("name", "n/step", "time/step", "mean", "share")


@dataclass(frozen=True)
class FindingLine:
    """A finding as every format shows it."""

    rule: str
    grade: str
    label: str  # HIGH, MODERATE, ok, skipped
    text: str  # the summary ("no problem: …" for a rule that found none)
    advice: str  # for a problem only
    fix: str = ""  # what fixing a problem buys, replayed ("fixing this: ~1.21 ms a step (−68.0 %)")

    @property
    def problem(self) -> bool:
        return self.grade in PROBLEM_GRADES


@dataclass(frozen=True)
class QualitySection:
    headline: str  # "Trace quality: no problems found"
    rows: tuple[tuple[str, str], ...]  # (count, sentence) per problem, ("note", text) per reader note


@dataclass(frozen=True)
class DiagnosisReport:
    """Every section of one trace's report."""

    facts: Facts
    steady: SteadyState
    steps: StepTable
    cold: tuple[ColdStep, ...]
    kernels: TopTable | None
    ops: TopTable | None
    launch: Grid
    device: Grid | None
    communication: Grid | None
    communication_summary: str  # one sentence: the steady step's collectives ("" without collectives)
    memory: tuple[Grid, ...]
    findings: tuple[FindingLine, ...]
    quality: QualitySection
    has_device: bool
    critical: CriticalPath | None = None  # None: the steps were not replayed
    buckets: tuple[str, ...] = field(default=BUCKETS)  # the buckets the report shows


GRADE_LABEL = {"high": "HIGH", "moderate": "MODERATE", "none": "ok", "skipped": "skipped"}
PROBLEM_GRADES = ("high", "moderate")


def finding_lines(findings: tuple[Finding, ...] | list[Finding], step_ns: float = 0.0) -> tuple[FindingLine, ...]:
    """Findings in the analysis's order (problems first, by what fixing them saves); ``step_ns``:
    the mean steady step the savings are shares of."""
    return tuple(FindingLine(f.rule, f.grade, GRADE_LABEL.get(f.grade, f.grade), _finding_text(f),
                             f.advice if f.grade in PROBLEM_GRADES else "",
                             fix_sentence(f, step_ns) if f.grade in PROBLEM_GRADES or f.measure_grade else "")
                 for f in findings)


def _finding_text(finding: Finding) -> str:
    if finding.grade != "none":
        return finding.summary
    # A cause whose fix saves too little to be a problem, though its share would make it one.
    return f"{'little to gain' if finding.measure_grade else 'no problem'}: {finding.summary}"


def fix_sentence(finding: Finding, step_ns: float) -> str:
    """What fixing a finding buys, as the reports say it: the step replayed without its cause."""
    if finding.predicted_step_ns is None or finding.predicted_saving_ns is None:
        return ""
    saving = finding.predicted_saving_ns
    sign = "−" if saving >= 0 else "+"  # (a replay that lengthens the step: no saving)
    share = f" ({sign}{fmt_pct(abs(saving) / step_ns)})" if step_ns > 0 else ""
    caveat = "; waits the trace cannot tie to their work kept as recorded" if "fewer edges" in finding.prediction else ""
    after = ""
    if (finding.predicted_saving_after_ns is not None and step_ns > 0
            and abs(finding.predicted_saving_after_ns - saving) >= AFTER_SHOWN_SHARE * step_ns):
        then = max(finding.predicted_saving_after_ns, 0.0)
        after = (f"; once {cause_label(finding.first_fix)} is removed, it saves ~{fmt_ns(then)} "
                 f"({fmt_pct(then / step_ns)})")
    graded = (f"; graded by that, not by its share ({GRADE_LABEL[finding.measure_grade]}): the rest of its "
              f"{fmt_ns(finding.explains_ns)} runs beside the work that sets the step's length"
              if finding.measure_grade else "")
    return f"fixing this: ~{fmt_ns(finding.predicted_step_ns)} a step{share}{after}{caveat}{graded}"


def cause_label(cause: str) -> str:
    """A cause a fix removes, named as the reports name it: a bucket by its label
    (``launch_overhead``: "launch/dispatch"), a detail of one by its row's name in the cause
    table (``idle.paused``: "paused") unless it has a label of its own."""
    return BUCKET_LABEL.get(cause) or cause.split(".", 1)[-1]


# What a fix saves once the first fix is made is said where it differs from what it saves alone by
# at least this share of the step (two lanes that each set the step's length; two fixes of one wait).
AFTER_SHOWN_SHARE = 0.01


# A cause is named with its share on the critical path where it holds at least this share of the step.
PATH_SHOWN_SHARE = 0.01


@dataclass(frozen=True)
class CriticalPath:
    """What sets the steady step's length: the lanes and causes on its critical path (the mean of
    the steady steps' paths, as recorded), and each cause's share of its own time on it."""

    lanes: tuple[tuple[str, float], ...]  # (lane, share of the step), the lanes that hold any of it
    # (bucket, label, ns on the path, share of the bucket's time on it, share of the step the bucket holds)
    rows: tuple[tuple[str, str, float, float, float], ...]
    unsupported_ns: float  # waits the trace cannot tie to the work they wait for

    @property
    def sentence(self) -> str:
        lanes = " · ".join(f"{lane} {fmt_pct(share)}" for lane, share in self.lanes)
        off = [f"{label} {fmt_pct(share)}" for _, label, _, share, held in self.rows
               if held >= PATH_SHOWN_SHARE and share < 0.995]
        text = f"Critical path: {lanes}"
        text += (f"; on it, of each cause's time: {', '.join(off)} (the rest runs beside the work that sets the "
                 "step's length: fixing it alone saves nothing)" if off else "; every cause's time lies on it")
        if self.unsupported_ns > 0:
            text += (f"; {fmt_ns(self.unsupported_ns)} of it is waits whose awaited work the trace does not record, "
                     "kept as recorded in every prediction")
        return text + "."


def _facts(diag: Diagnosis) -> Facts:
    meta = diag.timeline.meta
    table = diag.steps.table
    cold = [f"#{n}" for n in table["number"][table["cold"]].tolist()]
    steps = (f"{len(table)} found by rule '{diag.steps.rule}': {diag.steps.rule_detail}"
             + (f" · cold: {', '.join(cold)}" if cold else "") + f" · steady: {len(diag.steady_positions)}")
    return Facts(
        source=meta.source, framework=meta.framework, format=meta.format, host=meta.host_name,
        devices=", ".join(f"{d.index}: {d.name or 'device'}" for d in meta.devices) or "none (CPU-only trace)",
        events_in_file=meta.input_events, kept=sum(meta.kept.values()), dropped=sum(meta.dropped.values()),
        dropped_by_reason=tuple(sorted(meta.dropped.items(), key=lambda x: (-x[1], x[0]))),
        kept_by_kind=tuple(sorted(((k, c) for k, c in meta.kept.items() if c), key=lambda x: (-x[1], x[0]))),
        steps=steps, step_rule=diag.steps.rule, step_rule_detail=diag.steps.rule_detail, step_count=len(table),
        notes=diag.trace_notes)


def _steady(diag: Diagnosis) -> SteadyState:
    buckets = diag.steady_attribution()
    total = sum(buckets.values())
    details = diag.steady_details()
    rows: list[CauseRow] = []
    for b in diag.buckets:
        rows.append(CauseRow(b, BUCKET_LABEL[b], buckets[b], buckets[b] / total if total else 0.0))
        rows += [CauseRow(b, key.split(".", 1)[1], details[key], details[key] / total if total else 0.0, detail=True)
                 for key in sorted(k for k in details if k.startswith(b + "."))]
    where = "device + host" if diag.attribution.mode == "device" else "host threads (CPU-only)"
    summary = (f"median of {len(diag.steady_positions)}; mean {fmt_ns(total)}; "
               + (f"unprofiled {fmt_ns(diag.unprofiled_step_ns)}, profiler ×{diag.profiler_inflation:.2f}"
                  f"{_inflation_range(diag)}; " if diag.profiler_inflation is not None else "")
               + f"attribution on {where}")
    inferred = tuple((k.split(".")[0], v) for k, v in sorted(details.items()) if k.endswith(".inferred"))
    return SteadyState(diag.steady_step_ns, total, summary, buckets, tuple(rows), inferred, diag.attribution.gap_rule)


def _inflation_range(diag: Diagnosis) -> str:
    """`` (×1.10–1.41)`` after the inflation, or ``, unreliable: …`` where the calibration is in doubt."""
    if diag.calibration_doubt is not None:
        return " — unreliable, see the notes"
    interval = diag.profiler_inflation_range
    return f" (×{interval[0]:.2f}–{interval[1]:.2f})" if interval is not None else ""


def _steps(diag: Diagnosis) -> StepTable:
    per = diag.attribution.per_step
    partial = set(diag.steps.partial)
    table = diag.steps.table
    listed = _listed_steps(table["duration"], partial | set(np.flatnonzero(table["cold"]).tolist()))
    rows = tuple(StepRow(int(table["number"][i]), bool(table["cold"][i]), i in partial, int(table["duration"][i]),
                         {b: int(per[b][i]) for b in BUCKETS}, after_gap=bool(k and i != listed[k - 1] + 1))
                 for k, i in enumerate(listed))
    return StepTable(tuple(b for b in BUCKETS if per[b].any()), rows, left_out=len(table) - len(listed))


def _listed_steps(duration: np.ndarray, always: set[int]) -> list[int]:
    """The step positions the per-step table lists, in order (STEP_ROWS_ALL); ``always``: the
    positions listed however many steps there are (the cold and partial ones)."""
    n = len(duration)
    if n <= STEP_ROWS_ALL:
        return list(range(n))
    others = np.arange(STEP_ROWS_FIRST, n)
    # The slowest first; of equal ones, the earliest (a stable sort of the negated times).
    slowest = others[np.argsort(-duration[others].astype(np.int64), kind="stable")[:STEP_ROWS_SLOWEST]]
    return sorted(set(range(STEP_ROWS_FIRST)) | set(slowest.tolist()) | always)


def _cold(diag: Diagnosis) -> tuple[ColdStep, ...]:
    table = diag.steps.table
    steady = diag.steady_step_ns
    per = diag.attribution.per_step
    out = []
    for i in np.flatnonzero(table["cold"]).tolist():
        row = table.take([i]).records()[0]
        extra = float(row["duration"]) - steady
        sentence = (f"#{row['number']}: {fmt_ns(row['duration'])} ({fmt_ns(extra)} over steady) · graph build/compile "
                    f"{fmt_ns(int(per['graph_build'][i]))} in {row['graph_build_events']} events")
        if extra > 0 and steady > 0:
            sentence += f" · {extra / steady:.1f} steady steps' worth"
        out.append(ColdStep(int(row["number"]), sentence, {b: float(per[b][i]) for b in BUCKETS}))
    return tuple(out)


def _top(frame: Any, title: str) -> TopTable | None:
    if frame is None or not len(frame):
        return None
    return TopTable(title, tuple(frame["name"].tolist()),
                    tuple((f"{r.count_per_step:.1f}", fmt_ns(r.time_per_step_ns), fmt_ns(r.mean_ns), fmt_pct(r.share))
                          for r in frame.tuples()))


def _launch(diag: Diagnosis) -> Grid:
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
        if s.graph_launches_per_step:
            rows += [("CUDA graph launches per step", f"{s.graph_launches_per_step:.1f}"),
                     ("kernels per graph launch", f"{s.kernels_per_graph_launch:.1f}"),
                     ("kernels replayed by graphs", fmt_pct(s.graph_kernel_share))]
    return Grid("Launch / dispatch", ("measure", "value"), tuple(rows))


def _device(diag: Diagnosis) -> Grid | None:
    frame = diag.device
    if frame is None or not len(frame):
        return None
    rows = tuple((str(r.device), fmt_ns(r.span_ns), fmt_ns(r.busy_ns), f"{fmt_ns(r.idle_ns)} ({fmt_pct(r.idle_share)})",
                  f"{fmt_ns(r.compute_ns)} ({fmt_pct(r.compute_share)})") for r in frame.tuples())
    return Grid("Device time, whole trace (HTA temporal-breakdown definitions)",
                ("device", "span", "busy", "idle", "compute"), rows, left=())


COMM_TITLE = "Communication vs compute (collective kernels)"
COMM_HEADERS = ("step", "collectives", "comm", "overlapped", "exposed", "overlap")
COMM_NOTE = ("comm: time in which a collective kernel runs; overlapped: a compute kernel runs too; exposed: the "
             "communication bucket; overlap = overlapped / comm (HTA's comm/comp overlap)")


def _communication(diag: Diagnosis) -> tuple[Grid | None, str]:
    """Collective kernels per step, the steady mean and the whole trace (the scope of HTA's
    comm/comp overlap), and the steady step's collectives in one sentence."""
    comm = diag.communication
    if comm is None:
        return None, ""
    rows = [(f"#{step.number}" + (" (cold)" if step.cold else ""), f"{r.collectives:d}", fmt_ns(r.comm_ns),
             fmt_ns(r.overlapped_ns), fmt_ns(r.exposed_ns), fmt_pct(r.overlap_share))
            for step, r in zip(diag.steps.table.tuples(), comm.per_step.tuples())]
    steady = comm.steady(diag.steady_positions)
    rows.append(("steady mean", f"{steady['collectives']:.1f}", fmt_ns(steady["comm_ns"]),
                 fmt_ns(steady["overlapped_ns"]), fmt_ns(steady["exposed_ns"]), fmt_pct(steady["overlap_share"])))
    rows.append(("whole trace", "", fmt_ns(comm.trace_comm_ns), fmt_ns(comm.trace_overlapped_ns),
                 fmt_ns(comm.trace_comm_ns - comm.trace_overlapped_ns), fmt_pct(comm.trace_overlap_share)))
    summary = (f"Collective communication: {fmt_ns(steady['comm_ns'])} per steady step in "
               f"{steady['collectives']:.1f} collectives, {fmt_pct(steady['overlap_share'])} of it overlapped by "
               f"compute kernels; the exposed {fmt_ns(steady['exposed_ns'])} is the communication row.")
    return Grid(COMM_TITLE, COMM_HEADERS, tuple(rows), note=COMM_NOTE), summary


MEMORY_TITLE = "Memory (allocator samples)"
MEMORY_STEP_HEADERS = ("step", "device", "peak allocated", "allocated", "freed", "samples")
MEMORY_OPS_TITLE = "Ops that allocate most (steady steps; the allocator's op, else the op the code called)"
MEMORY_OP_HEADERS = ("op", "device", "allocations", "bytes per step")


def _device_label(device: int) -> str:
    return "host" if device < 0 else f"GPU {device}"


def _memory(diag: Diagnosis) -> tuple[Grid, ...]:
    """Peak memory per step and the ops that allocate most (only for traces with allocator samples)."""
    memory = diag.memory
    if memory is None:
        return ()
    cold = dict(enumerate(diag.steps.table["cold"].tolist()))
    steps = tuple((f"#{r.number}" + (" (cold)" if cold.get(r.step) else ""), _device_label(r.device),
                   fmt_bytes(r.peak_allocated), fmt_bytes(r.allocated), fmt_bytes(r.freed), fmt_count(r.samples))
                  for r in memory.steps.tuples())
    ops = tuple((str(r.op), _device_label(r.device), fmt_count(r.allocations), fmt_bytes(r.bytes_per_step))
                for r in memory.ops.tuples())
    return (Grid(MEMORY_TITLE, MEMORY_STEP_HEADERS, steps,
                 note="peak allocated: the most the allocator held at once inside the step"),
            Grid(MEMORY_OPS_TITLE, MEMORY_OP_HEADERS, ops, names=(0,)))


QUALITY_TITLE = "Trace quality"
_MOST_STEPS = 10


def quality_section(quality: Quality, title: str = QUALITY_TITLE) -> QualitySection:
    """The trace-quality section: its headline, then (count, sentence) per problem and ("note",
    text) per reader note; no rows for a clean trace. Drop reasons and notes hold trace text: each
    format escapes the sentence as it escapes names."""
    counts = quality.counts()
    problems = quality.problems()
    n = len(problems)
    headline = f"{title}: " + ("no problems found" if not n else f"{n} problem" + ("s" if n > 1 else ""))
    rows = []
    for check in problems:
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
    return QualitySection(headline, tuple(rows))


def diagnosis_report(diag: Diagnosis) -> DiagnosisReport:
    """Every section of one trace's report."""
    has_device = diag.timeline.has_device
    communication, communication_summary = _communication(diag)
    return DiagnosisReport(
        facts=_facts(diag), steady=_steady(diag), steps=_steps(diag), cold=_cold(diag),
        kernels=_top(diag.kernels, "Top kernels" if has_device else "Top compute ops (self time of ops doing the math)"),
        ops=_top(diag.ops, "Top framework ops (top level, inclusive host time)"),
        launch=_launch(diag), device=_device(diag), communication=communication,
        communication_summary=communication_summary, memory=_memory(diag),
        findings=finding_lines(diag.findings, sum(diag.steady_attribution().values())),
        quality=quality_section(diag.quality), has_device=has_device, buckets=diag.buckets,
        critical=_critical(diag))


def _critical(diag: Diagnosis) -> CriticalPath | None:
    critical = diag.attribution.critical
    positions = diag.steady_positions
    if "unsupported" not in critical.columns or not len(positions):
        return None
    rows = critical.take(positions)
    step = sum(diag.steady_attribution().values())
    buckets = diag.steady_attribution()
    lanes = tuple((name, float(rows[f"lane.{key}"].mean()) / step) for name, key in zip(LANES, LANE_KEYS)
                  if step > 0 and rows[f"lane.{key}"].any())
    path = tuple((b, BUCKET_LABEL[b], float(rows[f"path.{b}"].mean()),
                  min(1.0, float(rows[f"path.{b}"].mean()) / buckets[b]) if buckets.get(b) else 0.0,
                  buckets[b] / step if step else 0.0)
                 for b in diag.buckets)
    return CriticalPath(lanes, path, float(rows["unsupported"].mean()))


# ---------------------------------------------------------------------------------------------
# Two traces

# A cause of a gap is listed when it explains more than this share of it.
LISTED_CAUSE_SHARE = 0.005


def listed_causes(cmp: Comparison) -> list[Any]:
    """The bucket deltas worth naming as causes of the gap, largest first; none where the gap is
    within the steady steps' noise, or where a step holds a different number of batches on each
    side (the per-step gap is then no slowdown to explain)."""
    gap = cmp.gap_ns
    if not cmp.significant or cmp.batch_ratio is not None or cmp.run_to_run:
        return []
    return [d for d in cmp.ranked() if gap and d.delta_ns / gap > LISTED_CAUSE_SHARE]


@dataclass(frozen=True)
class Side:
    role: str  # "baseline" or "candidate"
    source: str
    framework: str
    steady_steps: int


@dataclass(frozen=True)
class ComparisonReport:
    """Every section of a comparison's report, and both traces' own."""

    sides: tuple[Side, Side]
    lead: str  # "The candidate is 8.15× slower"
    rest: str  # the interval, the steps, the largest cause, the caveats, the medians
    causes: str  # "Where the gap comes from: …" ("" when no cause is named)
    explained: str  # "Named causes explain 100.0 %"
    buckets: Grid  # per bucket: baseline, candidate, delta, share of the gap; then the step
    families: Grid | None
    op_diff: Grid | None
    cold_start: str
    findings: tuple[FindingLine, ...]
    baseline: DiagnosisReport
    candidate: DiagnosisReport
    qualities: tuple[QualitySection, QualitySection]  # each side's, titled with its side


OP_DIFF_TITLE = ("Ops and kernels per steady step, aligned by name (A = baseline, B = candidate; kernel: device "
                 "kernels, or compute ops by self time on CPU; op: top-level framework ops)")
OP_DIFF_HEADERS = ("name", "kind", "n A", "n B", "time A", "time B", "delta")
FAMILIES_TITLE = "Op families per steady step (A = baseline, B = candidate; host = dispatch per op)"
FAMILIES_HEADERS = ("family", "ops A", "ops B", "compute A", "compute B", "host A", "host B")


def op_diff_grid(cmp: Comparison) -> Grid | None:
    """A comparison's per-op diff; a side without the name has empty cells."""
    frame = cmp.op_diff
    if not len(frame):
        return None

    def count(value: float) -> str:
        return "" if value != value else f"{value:.1f}"  # NaN: the name is not on that side

    def time(value: float) -> str:
        return "" if value != value else fmt_ns(value)

    rows = tuple((str(r.name), r.kind, count(r.baseline_count_per_step), count(r.candidate_count_per_step),
                  time(r.baseline_time_per_step_ns), time(r.candidate_time_per_step_ns), fmt_ns(r.delta_ns))
                 for r in frame.itertuples(index=False))
    return Grid(OP_DIFF_TITLE, OP_DIFF_HEADERS, rows, left=(0, 1), names=(0,))


def _families(cmp: Comparison) -> Grid | None:
    fam = cmp.families
    if fam.empty:
        return None
    rows = tuple((str(family), f"{fam.loc[family]['baseline_ops_per_step']:.1f}",
                  f"{fam.loc[family]['candidate_ops_per_step']:.1f}", fmt_ns(fam.loc[family]["baseline_compute_ns"]),
                  fmt_ns(fam.loc[family]["candidate_compute_ns"]),
                  fmt_ns(fam.loc[family]["baseline_dispatch_ns_per_op"]),
                  fmt_ns(fam.loc[family]["candidate_dispatch_ns_per_op"]))
                 for family in fam.index)
    return Grid(FAMILIES_TITLE, FAMILIES_HEADERS, rows)


def _cold_start(cmp: Comparison) -> str:
    c = cmp.cold
    return (f"baseline {fmt_ns(c.baseline_cold_ns) if c.baseline_cold_ns is not None else 'no cold step'}"
            f" (graph build {fmt_ns(c.baseline_graph_build_ns)}), candidate "
            f"{fmt_ns(c.candidate_cold_ns) if c.candidate_cold_ns is not None else 'no cold step'}"
            f" (graph build {fmt_ns(c.candidate_graph_build_ns)}); {c.payback_note}.")


# The cause table's column of deltas estimated without the profiler (analyzers/unprofiled.py).
UNPROFILED_DELTA = "unprofiled"


def comparison_report(cmp: Comparison) -> ComparisonReport:
    """Every section of a comparison's report."""
    gap = cmp.gap_ns
    base, cand = cmp.baseline, cmp.candidate
    lead, rest = gap_headline(cmp)
    rest += gap_caveats(cmp) + (f" Medians: candidate {fmt_ns(cand.steady_step_ns)}, baseline "
                                f"{fmt_ns(base.steady_step_ns)}.")
    causes = listed_causes(cmp)
    paused = (f"; pauses of the step's thread (the machine took the core) {fmt_ns(cmp.paused_delta_ns)}"
              if cmp.paused_delta_ns else "")
    named = ("Where the gap comes from: " + "; ".join(gap_cause(d, gap) for d in causes)
             + f". Named causes explain {fmt_pct(cmp.explained_share)}{paused}; unexplained (nothing recorded) "
             f"{fmt_ns(cmp.unexplained_ns)}." if causes else "")
    share = (lambda ns: fmt_pct(ns / gap) if gap else "-")
    # Where both captures timed their steps without the profiler too: each cause's delta estimated
    # without it (analyzers/unprofiled.py), beside the profiled one.
    unprofiled = {d.bucket: d.delta_ns for d in cmp.unprofiled_buckets}
    estimate = ((lambda bucket: (fmt_ns(unprofiled[bucket]),)) if unprofiled else (lambda bucket: ()))
    rows = [(BUCKET_LABEL[d.bucket], fmt_ns(d.baseline_ns), fmt_ns(d.candidate_ns), fmt_ns(d.delta_ns),
             share(d.delta_ns), *estimate(d.bucket)) for d in cmp.buckets]
    rows.append(("step", fmt_ns(cmp.baseline_step_ns), fmt_ns(cmp.candidate_step_ns), fmt_ns(gap),
                 "100.0 %" if gap else "-", *((fmt_ns(sum(unprofiled.values())),) if unprofiled else ())))
    headers = ("cause", "baseline", "candidate", "delta", "of gap", *((UNPROFILED_DELTA,) if unprofiled else ()))
    buckets = Grid("", headers, tuple(rows),
                   buckets=tuple(d.bucket for d in cmp.buckets) + ("",),
                   flagged=(False,) * len(cmp.buckets) + (True,))
    sides = tuple(Side(role, d.timeline.meta.source, d.timeline.meta.framework, len(d.steady_positions))
                  for role, d in (("baseline", base), ("candidate", cand)))
    return ComparisonReport(
        sides=sides,  # type: ignore[arg-type]
        lead=lead, rest=rest, causes=named, explained=f"Named causes explain {fmt_pct(cmp.explained_share)}",
        buckets=buckets, families=_families(cmp), op_diff=op_diff_grid(cmp), cold_start=_cold_start(cmp),
        findings=finding_lines(cmp.findings), baseline=diagnosis_report(base), candidate=diagnosis_report(cand),
        qualities=(quality_section(base.quality, f"{QUALITY_TITLE}, baseline"),
                   quality_section(cand.quality, f"{QUALITY_TITLE}, candidate")))


def by_baseline(comparisons: list[Comparison]) -> list[list[Comparison]]:
    """A folder's comparisons grouped by their baseline (one per workload), in their order."""
    groups: dict[int, list[Comparison]] = {}
    for cmp in comparisons:
        groups.setdefault(id(cmp.baseline), []).append(cmp)
    return list(groups.values())


def baseline_label(cmp: Comparison) -> str:
    """The baseline of a folder's comparisons: its capture, after its workload when the capture's
    manifest names one (``mlp2: torch-eager``)."""
    label = trace_label(cmp.baseline.timeline.meta.source)
    workload = (cmp.baseline.timeline.meta.extra.get("capture") or {}).get("workload")
    return f"{workload}: {label}" if workload else label


def across_grid(comparisons: list[Comparison]) -> Grid:
    """A folder's traces each against its baseline: one line per trace."""
    first = comparisons[0]
    rows = []
    for cmp in comparisons:
        top = cmp.ranked()[0]
        cause = f"{'+' if top.delta_ns >= 0 else '-'}{fmt_ns(abs(top.delta_ns))} {BUCKET_LABEL[top.bucket]}"
        rows.append((trace_label(cmp.candidate.timeline.meta.source), fmt_ns(cmp.candidate_step_ns),
                     f"{cmp.ratio:.2f}", cause, fmt_pct(cmp.explained_share)))
    return Grid(f"Across the traces: each compared with {baseline_label(first)} "
                f"({fmt_ns(first.baseline_step_ns)} per steady step)",
                ("trace", "step", "×", "largest cause of the gap", "expl."), tuple(rows), left=(0, 3), names=(0,))


# ---------------------------------------------------------------------------------------------
# Several ranks of one run

# Runs wider than this show the per-rank step times only in --format json (and in `traceview query`).
MAX_RANK_COLUMNS = 8
RANKS_TITLE = "Per rank"
RANKS_HEADERS = ("rank", "trace", "steady step", "vs median", "slowest in")
STRAGGLERS_TITLE = "Stragglers: step time per rank, the slowest vs the median"
SPREAD_TITLE = "Spread of each cause across the ranks (mean per steady step)"
SPREAD_HEADERS = ("cause", "min", "median", "max", "max rank", "min rank")


@dataclass(frozen=True)
class RanksReport:
    title: str
    headline: str
    ranks: Grid
    stragglers: Grid | None
    spread: Grid
    notes: tuple[str, ...]


def _ranks_headline(run: MultiRank, most: int = 10) -> str:
    """Which rank is slowest how often, the largest excess over the median of the ranks, and the
    straggler steps."""
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


# A run of more ranks than this lists in its text reports the ranks furthest from the median only,
# and shows the own reports of those beyond the straggler threshold and of one typical rank (the
# nearest the median); --per-rank (per_rank=True) every rank. JSON holds every rank whatever.
MAX_RANKS_SHOWN = 8


def ranks_in_view(run: MultiRank, per_rank: bool = False, rank_rows: int | None = None) -> pd.DataFrame:
    """The rows of ``run.ranks`` a text report lists: every rank with ``per_rank``, else at most
    :data:`MAX_RANKS_SHOWN` (fewer with ``rank_rows``: ``--top``), those furthest from the median
    (ties: the lower rank), in rank order."""
    ranks = run.ranks
    most = min(MAX_RANKS_SHOWN, rank_rows or MAX_RANKS_SHOWN)
    if per_rank or len(ranks) <= most:
        return ranks
    distance = ranks["vs_median"].abs().to_numpy()
    order = sorted(range(len(ranks)), key=lambda i: (-distance[i], int(ranks["rank"].iloc[i])))
    return ranks.iloc[sorted(order[:most])]


def reported_traces(diagnoses: list[Diagnosis], runs: list[MultiRank] | None, per_rank: bool = False,
                    comparisons: list[Comparison] | None = None,
                    per_trace: bool = False) -> tuple[list[Diagnosis], list[str]]:
    """The traces whose own reports a folder's text report shows, and a note for what it leaves
    out: of a run of more than :data:`MAX_RANKS_SHOWN` ranks, the ranks beyond its straggler
    threshold from the median step and the one nearest the median (the typical rank), every rank
    with ``per_rank``; without ``per_trace``, of the traces compared within a workload only the
    baseline (the others have their line in the comparison's table and in :func:`traces_grid`)."""
    hidden: set[str] = set()
    notes = []
    candidates = [] if per_trace else [cmp.candidate.source for cmp in comparisons or []]
    if candidates:
        hidden.update(candidates)
        notes.append(f"the own reports of the {len(candidates)} traces compared with their workload's baseline are "
                     "left out (each has its line in the tables above); --per-trace shows every trace's")
    if per_rank:
        return [d for d in diagnoses if d.source not in hidden], notes
    for run in runs or []:
        ranks = run.ranks
        if len(ranks) <= MAX_RANKS_SHOWN:
            continue
        distance = ranks["vs_median"].abs().to_numpy()
        kept = set(ranks.loc[distance > run.threshold, "source"])
        kept.add(ranks["source"].iloc[int(distance.argmin())])
        left = [str(source) for source in ranks["source"] if source not in kept]
        hidden.update(left)
        if left:
            notes.append(f"{visible(run.label)}: the own reports of {len(left)} of {len(ranks)} ranks, each within "
                         f"{fmt_pct(run.threshold)} of the median step, are left out (the nearest the median is "
                         "shown, and every rank beyond it); --per-rank shows every rank's")
    return [d for d in diagnoses if d.source not in hidden], notes


TRACES_TITLE = "Per trace"
TRACES_HEADERS = ("trace", "framework", "steady step", "largest cause", "first problem")


def traces_grid(diagnoses: list[Diagnosis], runs: list[MultiRank] | None) -> Grid | None:
    """A line per trace of a folder that no run's per-rank table lists: its steady step, its
    largest cause and its first problem (None for fewer than two such traces)."""
    ranks = {str(source) for run in runs or [] for source in run.ranks["source"]}
    rows = []
    for diag in (d for d in diagnoses if d.source not in ranks):
        buckets = diag.steady_attribution()
        total = sum(buckets.values())
        largest = max(diag.buckets, key=lambda b: (buckets[b], -BUCKETS.index(b)))
        first = next((f for f in diag.findings if f.grade in PROBLEM_GRADES), None)
        rows.append((trace_label(diag.source), diag.timeline.meta.framework, fmt_ns(diag.steady_step_ns),
                     f"{BUCKET_LABEL[largest]} {fmt_pct(buckets[largest] / total if total else 0.0)}",
                     f"{GRADE_LABEL[first.grade]} {first.rule}" if first is not None else "no problem"))
    return Grid(TRACES_TITLE, TRACES_HEADERS, tuple(rows), left=(0, 1, 3, 4), names=(0,)) if len(rows) > 1 else None


def ranks_report(run: MultiRank, per_rank: bool = False, rank_rows: int | None = None) -> RanksReport:
    """The ranks of one run: per-rank steady step (the ranks in view: :func:`ranks_in_view`),
    stragglers per step, spread of each cause."""
    n_steps = len(run.stragglers)
    listed = ranks_in_view(run, per_rank, rank_rows)
    ranks = tuple((str(r.rank), str(r.trace), fmt_ns(r.steady_step_ns), f"{r.vs_median * 100:+.1f} %",
                   f"{r.slowest_steps} of {n_steps}") for r in listed.itertuples(index=False))
    more = len(run.ranks) - len(listed)
    notes = run.notes + ((f"the per-rank table lists the {len(listed)} ranks furthest from the median step; {more} "
                          "more are nearer it (--per-rank lists every rank, --format json holds them all)",)
                         if more else ())
    shown = list(run.step_ns.columns) if len(run.step_ns.columns) <= MAX_RANK_COLUMNS else []
    rows, flagged = [], []
    for s in run.stragglers.itertuples(index=False):
        times = [fmt_ns(v, compact=True) for v in run.step_ns.loc[s.number, shown]] if shown else []
        flagged.append(bool(s.straggler))
        rows.append((f"#{s.number}" + (" cold" if s.cold else ""), fmt_ns(s.median_ns), fmt_ns(s.max_ns),
                     str(s.slowest_rank) if s.slowest_rank >= 0 else "-",
                     f"+{fmt_ns(s.over_median_ns)} ({fmt_pct(s.over_median_share)})", *times))
    stragglers = (Grid(STRAGGLERS_TITLE, ("step", "median", "slowest", "rank", "over median",
                                          *(f"r{rank}" for rank in shown)), tuple(rows), flagged=tuple(flagged),
                       emphasis=4)
                  if rows else None)
    spread = [b for b in run.spread.itertuples(index=False) if b.max_ns > 0]
    return RanksReport(
        title=f"Across the ranks: {visible(run.label)} ({len(run.ranks)} ranks; rank from {run.rank_origin})",
        headline=_ranks_headline(run),
        ranks=Grid(RANKS_TITLE, RANKS_HEADERS, ranks, left=(1,), names=(1,)),
        stragglers=stragglers,
        spread=Grid(SPREAD_TITLE, SPREAD_HEADERS,
                    tuple((BUCKET_LABEL.get(b.bucket, b.bucket), fmt_ns(b.min_ns), fmt_ns(b.median_ns),
                           fmt_ns(b.max_ns), str(b.max_rank), str(b.min_rank)) for b in spread),
                    buckets=tuple(b.bucket for b in spread)),
        notes=notes)


def shortened(names: tuple[str, ...] | list[str], width: int | None) -> list[str]:
    """Trace names cut to ``width`` so that no two read the same (whole, control characters
    dropped, without a width)."""
    return distinct_shortened(list(names), width) if width else [visible(n) for n in names]


# ---------------------------------------------------------------------------------------------
# A what-if replay


@dataclass(frozen=True)
class WhatIfReport:
    """A trace's steps replayed under a transformation."""

    source: str
    transform: str
    headline: str  # "Steady step 1.46 ms as recorded → ~445.8 µs without launch_overhead (−69.5 %)"
    steps: Grid  # per step: recorded, replayed as recorded, predicted
    path: str  # what sets the predicted step's length
    fixes: Grid | None  # every finding's own fix, replayed
    notes: tuple[str, ...]


def whatif_report(result: WhatIf) -> WhatIfReport:
    """Every section of a what-if replay's report."""
    now, then = result.steady_step_ns, result.predicted_step_ns
    change = (then - now) / now if now else 0.0
    headline = (f"Steady step {fmt_ns(now)} as recorded → ~{fmt_ns(then)} replayed {result.transform} "
                f"({'+' if change > 0 else '−' if change < 0 else '±'}{fmt_pct(abs(change))})")
    positions = set(result.diagnosis.steady_positions.tolist())
    rows = tuple((f"#{r['number']}" + (" cold" if r["cold"] else "" if i in positions else " (not steady)"),
                  fmt_ns(r["recorded_ns"]), fmt_ns(r["replayed_ns"]), fmt_ns(r["predicted_ns"]),
                  fmt_ns(r["recorded_ns"] - r["predicted_ns"])) for i, r in enumerate(result.steps.records()))
    lanes = " · ".join(f"{name} {fmt_pct(result.lane_ns[key] / then)}" for name, key in zip(LANES, LANE_KEYS)
                       if then > 0 and result.lane_ns.get(key))
    causes = ", ".join(f"{BUCKET_LABEL[b]} {fmt_ns(ns)}" for b, ns in sorted(result.path_ns.items(),
                                                                              key=lambda x: (-x[1], BUCKETS.index(x[0])))
                       if ns >= 0.005 * then)
    path = f"Critical path of the predicted step: {lanes}; on it: {causes}." if then > 0 else ""
    ordered = any(after is not None for *_, after in result.fixes)  # (else no fix saves anything)
    first = next((cause for _, cause, _, _, after in result.fixes if after is None), "") if ordered else ""
    fixes = (Grid("Each finding's fix, replayed, in the order to make them",
                  ("finding", "removes", "step", "saves alone") + ((f"once {first} is removed",) if first else ()),
                  tuple((rule, cause, fmt_ns(step), fmt_ns(saving))
                        + ((("first" if after is None else fmt_ns(after)),) if first else ())
                        for rule, cause, step, saving, after in result.fixes),
                  left=(0, 1)) if result.fixes else None)
    notes = []
    if result.unsupported_ns >= 0.05 * then > 0:
        notes.append(f"{fmt_ns(result.unsupported_ns)} a step of waits whose awaited work the trace does not record "
                     "(worker processes, a call's unrecorded runtime) is kept as recorded: the prediction rests on "
                     "fewer edges")
    return WhatIfReport(result.diagnosis.source, result.transform, headline,
                        Grid("Per step", ("step", "recorded", "replayed", "predicted", "saves"), rows), path, fixes,
                        tuple(notes))
