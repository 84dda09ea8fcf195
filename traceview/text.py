"""The reports' words: numbers with their units, names made safe to show, and the sentences
that read a result — written once, used by every format and by the analyses' own sentences.

Fixed rules so output is byte-stable. Results are read by attribute (duck-typed), so this module
depends on no result type: it sits below :mod:`traceview.results`, which uses it for its reprs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
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


def fmt_bytes(n: float) -> str:
    """Bytes in binary units: 512 B, 1.5 KiB, 64.0 MiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def overlap_note(overlaps: int) -> str:
    """The note on host events nesting found overlapping an enclosing event (a trace's notes)."""
    return f"{overlaps} host events overlap an enclosing event without nesting inside it; treated as siblings"


# ---------------------------------------------------------------------------------------------
# Comparisons

# Bucket names as the reports show them.
BUCKET_LABEL: dict[str, str] = {
    "kernel": "kernel",
    "communication": "communication",
    "memcpy": "memcpy/memset",
    "graph_build": "graph build/compile",
    "sync_wait": "sync wait",
    "launch_overhead": "launch/dispatch",
    "input": "input",
    "host_compute": "host compute",
    "idle": "idle (nothing recorded)",
    "idle.gil_wait": "waits for Python's interpreter lock",  # (a cause of a gap: Comparison.ranked)
}


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}×"


def gap_headline(cmp: Any, labels: Mapping[str, str] = BUCKET_LABEL) -> tuple[str, str]:
    """The compare report's first line, (lead, rest). The lead says which trace is slower and by
    how much; the rest names the largest cause of the gap."""
    gap = cmp.gap_ns
    interval = cmp.ratio_interval
    # (An interval of the steps less their pauses says so: compare.ratio_interval.)
    paused = ", the steps' pauses left out" if cmp.interval_without_pauses else ""
    spread = f" (95 % interval {interval[0]:.2f}–{interval[1]:.2f}×{paused})" if interval else ""
    # (Each time named by its side: "The baseline is 1.32× slower: 4.18 ms vs 5.53 ms" read as if the
    # baseline's were the first.)
    steps = (f"candidate {fmt_ns(cmp.candidate_step_ns)} vs baseline {fmt_ns(cmp.baseline_step_ns)} per steady step "
             "(mean)")
    if not cmp.significant:
        return ("No significant difference", f": {steps}, ratio {fmt_ratio(cmp.ratio)}{spread}, within the spread "
                                             f"of the steady steps; the per-cause deltas below are noise.")
    if cmp.run_to_run:
        apart, bound, unprofiled = cmp.run_spread
        measured = f"{fmt_ratio(apart)} apart" + (" without the profiler" if unprofiled else "")
        return ("No difference beyond run-to-run variation",
                f": {steps}, ratio {fmt_ratio(cmp.ratio)}{spread}. Both traces run the same ops at the same "
                f"counts per step, nothing they record tells the runs apart, and their steps ({measured}) differ "
                f"no more than separate captures of one unchanged program do (up to {fmt_ratio(bound)}): the "
                f"per-cause deltas below are the runs', not the program's"
                + ("." if cmp.shapes_compared else
                   " — unless the inputs differ in size or dtype, which these traces, recording no tensor shapes or "
                   "types, cannot show."))
    slower = "candidate" if gap >= 0 else "baseline"
    ratio = cmp.ratio if gap >= 0 else (1 / cmp.ratio if cmp.ratio else 0.0)
    lead = f"The {slower} is {fmt_ratio(ratio)} slower"
    if cmp.batch_ratio is not None:
        a, b = cmp.batches_per_step
        faster = "faster" if cmp.batch_ratio < 1 else "slower"
        per_batch = cmp.batch_ratio if cmp.batch_ratio >= 1 else 1 / cmp.batch_ratio if cmp.batch_ratio else 0.0
        lead = (f"Per batch the candidate is {fmt_ratio(per_batch)} {faster}: a baseline step holds {fmt_batches(a)}, "
                f"a candidate step {fmt_batches(b)}")
        return lead, (f" ({fmt_ns(cmp.candidate_step_ns / b)} vs {fmt_ns(cmp.baseline_step_ns / a)} per batch). "
                      f"Everything below is per step, not like for like: the {slower}'s step is "
                      f"{fmt_ratio(ratio)} as long ({fmt_ns(cmp.candidate_step_ns)} vs {fmt_ns(cmp.baseline_step_ns)}, "
                      f"gap {fmt_ns(abs(gap))}).")
    if interval and gap < 0:
        # The baseline's view of the interval: inverted, and unbounded above where its low end is 0.
        upper = f"{1 / interval[0]:.2f}" if interval[0] > 0 else "∞"
        spread = f" (95 % interval {1 / interval[1]:.2f}–{upper}×{paused})" if interval[1] > 0 else ""
    rest = f"{spread}: {steps}, gap {fmt_ns(abs(gap))}"
    causes = cmp.ranked()
    if gap and causes and causes[0].delta_ns / gap > 0:
        top = causes[0]
        rest += (f"; the largest cause is {labels.get(top.bucket, top.bucket)}: {fmt_ns(abs(top.delta_ns))} per step "
                 f"({fmt_pct(top.delta_ns / gap)} of the gap)")
    return lead, rest + "."


def fmt_batches(count: int) -> str:
    return f"{count} batch" if count == 1 else f"{count} batches"


# Why a side of a comparison is thin (Comparison.thin_sides), the values its JSON carries:
# every profiled step is one the capture's manifest lists as cold or warm-up (one stands in for the
# steady state), or fewer than two steady steps (the ratio has no interval).
THIN_COLD_ONLY = "cold-only"
THIN_ONE_STEP = "under-two-steady-steps"
THIN_SIDE_REASONS = (THIN_COLD_ONLY, THIN_ONE_STEP)


def gap_caveats(cmp: Any) -> str:
    """What qualifies the compare report's first line, as sentences after it (each starts with a
    space): the ratio without the profiler and the profiler's uneven inflation, when the captures
    measured it; sides with too few steady steps; graph breaks on one side and not the other."""
    return unprofiled_sentence(cmp) + _few_steps_sentence(cmp) + _graph_breaks_sentence(cmp) + _recorded_sentence(cmp)


# What a trace records beside its ops (compare.RECORDED_EXTRAS), as the sentence that warns when only
# one side holds it says it and what it changes; and whether the warning needs both sides of one
# framework (torch alone records input shapes: across frameworks no option would even them out).
RECORDED_DIFFERENCE = {
    "python_events": ("Python events (the Python tracer)", "the tracer's own cost is in that side's host time "
                      "around every op", False),
    "input_shapes": ("input shapes (record_shapes)", "ops on tiny inputs count as dispatch where shapes are "
                     "recorded and as compute where not", True),
}


def _recorded_sentence(cmp: Any) -> str:
    """Where one side's trace records Python events or input shapes and the other's does not."""
    out = ""
    base, cand = (set(side) for side in cmp.recorded)
    one_framework = cmp.baseline.timeline.meta.framework == cmp.candidate.timeline.meta.framework
    for extra, (what, effect, same_framework) in RECORDED_DIFFERENCE.items():
        if (extra in base) != (extra in cand) and (one_framework or not same_framework):
            side = "baseline" if extra in base else "candidate"
            out += (f" Only the {side} was captured with {what}: {effect}; capture both sides with the same "
                    "profiler options.")
    return out


def _graph_breaks_sentence(cmp: Any) -> str:
    """Where the two sides run torch.compile regions in different numbers per step: graph breaks."""
    regions = cmp.compiled_regions
    if not regions or regions[0] == regions[1] or max(regions) <= 1:
        return ""
    more = "candidate" if regions[1] > regions[0] else "baseline"
    return (f" The baseline runs {regions[0]:g} torch.compile region{'s' if regions[0] != 1 else ''} a step and the "
            f"candidate {regions[1]:g}: graph breaks split the {more}'s compiled step, with eager Python between "
            "the regions (torch._dynamo.explain names them).")


def _few_steps_sentence(cmp: Any) -> str:
    """A sentence per thin side (Comparison.thin_sides)."""
    out = ""
    for side, why in cmp.thin_sides:
        if why == THIN_COLD_ONLY:
            out += (f" The {side}'s only profiled steps are cold or warm-up steps (its manifest): one of them stands "
                    "in for its steady state.")
        else:
            steady = len(getattr(cmp, side).steady_positions)
            out += (f" The {side} has {steady} steady step: the ratio has no interval, and "
                    "step-to-step noise may be all of it.")
    return out


def unprofiled_sentence(cmp: Any) -> str:
    """What the captures measured without the profiler, when both did: the ratio a user's run sees,
    and the warning when the profiler slows one side much more than the other."""
    ratio = cmp.unprofiled_ratio
    if ratio is None:
        return ""
    a, b = cmp.baseline.profiler_inflation, cmp.candidate.profiler_inflation
    steps = f"{fmt_ns(cmp.candidate.unprofiled_step_ns)} vs {fmt_ns(cmp.baseline.unprofiled_step_ns)}"
    text = (f" Without the profiler (the captures' own timing, medians) the candidate takes {fmt_ratio(ratio)} the "
            f"baseline's step ({steps}).")
    if cmp.uneven_inflation:
        more = "baseline" if a > b else "candidate"
        text += (f" The profiler slows the baseline {a:.2f}× and the candidate {b:.2f}×: the profiled ratio and the "
                 f"causes below over-weigh the {more}'s per-op host costs (the profiler's own cost counts as its "
                 "dispatch).")
    if cmp.unprofiled_buckets:
        text += (" The cause table's last column ('unprofiled') estimates each cause's delta without the profiler: "
                 "each side's excess taken off its causes by the events recorded in them, the rest in proportion "
                 "to their time.")
    return text


def gap_cause(delta: Any, gap_ns: float) -> str:
    """One cause of a gap: ``+10.2 ms launch/dispatch (97.8 % of the gap)``; the sign says
    whether the bucket moved with the gap (+) or against it (-)."""
    with_gap = delta.delta_ns * (1 if gap_ns >= 0 else -1) > 0
    return (f"{'+' if with_gap else '-'}{fmt_ns(abs(delta.delta_ns))} {BUCKET_LABEL[delta.bucket]} "
            f"({fmt_pct(delta.delta_ns / gap_ns)} of the gap)")
