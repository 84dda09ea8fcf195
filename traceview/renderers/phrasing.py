"""Every sentence the reports say about a result, written once for every format.

Analyzers return numbers (a finding's ``evidence``, a comparison's bucket deltas); the
sentences that read them — a finding's summary, the "N× slower" headline of a comparison, the
causes of a gap, the ``--fail-if-slower`` verdict — are phrased here and nowhere else, so the
terminal, markdown, HTML and JSON reports say the same thing in the same words. Only number
formatting (:mod:`traceview.renderers.units`) is imported: results are read by attribute, so
this module depends on no result type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from traceview.renderers.units import fmt_ns, fmt_pct, shorten

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

# A cause of a gap is listed when it explains more than this share of it.
LISTED_CAUSE_SHARE = 0.005


# ---------------------------------------------------------------------------------------------
# Comparisons


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
        lead = (f"Per batch the candidate is {fmt_ratio(per_batch)} {faster}: a baseline step holds {_batches(a)}, "
                f"a candidate step {_batches(b)}")
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


def _batches(count: int) -> str:
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
    return text


def listed_causes(cmp: Any) -> list[Any]:
    """The bucket deltas worth naming as causes of the gap, largest first; none where the gap is
    within the steady steps' noise, or where a step holds a different number of batches on each
    side (the per-step gap is then no slowdown to explain)."""
    gap = cmp.gap_ns
    if not cmp.significant or cmp.batch_ratio is not None or cmp.run_to_run:
        return []
    return [d for d in cmp.ranked() if gap and d.delta_ns / gap > LISTED_CAUSE_SHARE]


def gap_cause(delta: Any, gap_ns: float) -> str:
    """One cause of a gap: ``+10.2 ms launch/dispatch (97.8 % of the gap)``; the sign says
    whether the bucket moved with the gap (+) or against it (-)."""
    with_gap = delta.delta_ns * (1 if gap_ns >= 0 else -1) > 0
    return (f"{'+' if with_gap else '-'}{fmt_ns(abs(delta.delta_ns))} {BUCKET_LABEL[delta.bucket]} "
            f"({fmt_pct(delta.delta_ns / gap_ns)} of the gap)")


def regression_message(cmp: Any, limit_pct: float) -> str | None:
    """``--fail-if-slower``: the verdict when the candidate is slower than ``limit_pct`` % even at the
    low end of the ratio's 95 % interval (a slowdown the step-time noise explains does not fail);
    None when it passes. The interval measures the steps' spread within each capture only: where
    the comparison finds no difference beyond separate runs of one program (Comparison.run_to_run),
    the verdict says so — the gate still fails (a slowdown of the same ops is what it is there to
    catch), and one capture a side cannot tell it from the runs' own variation."""
    if cmp.baseline_step_ns <= 0:
        return None
    interval = cmp.ratio_interval
    low = interval[0] if interval else cmp.ratio
    if (low - 1.0) * 100.0 <= limit_pct:
        return None
    within = f"; at least {(low - 1.0) * 100.0:.1f} % with 95 % confidence" if interval else ""
    spread = ""
    if cmp.run_to_run:
        _, bound, unprofiled = cmp.run_spread
        spread = (f"; but separate runs of one unchanged program differ by up to {fmt_ratio(bound)}"
                  f"{' without the profiler' if unprofiled else ''}, and nothing else the traces record tells "
                  "these apart: capture each side several times, alternating, to confirm")
    return (f"candidate is {(cmp.ratio - 1.0) * 100.0:.1f} % slower than the baseline{within} "
            f"(limit {limit_pct:g} %){spread}")


# ---------------------------------------------------------------------------------------------
# Findings: one summary sentence per rule, from the finding's evidence

# What a skipped rule needs that the trace lacks.
RULE_NEEDS: dict[str, str] = {
    "short_kernels": "device kernels linked to host launches",
    "cold_compile": "a cold step in the trace (capture the first step too)",
    "memcpy": "device events",
    "low_utilization": "device events",
    "host_between_steps": "at least two steps",
    "paused": "at least 3 steady steps of the same shape (the same events in the same order on the step's thread)",
    "launch_bound": "framework ops in the steps (they hold none: the trace recorded no training work in them)",
}


def _launch_bound(e: Mapping[str, Any], explains: float) -> str:
    ops = e["ops_per_step"]
    # The overhead per op (the host time per op in the evidence holds each op's math too).
    per_op = f"{ops:.0f} framework ops per step, {fmt_ns(explains / ops)} of it per op" if ops else "no framework ops"
    return (f"launch/dispatch overhead is {fmt_pct(e['launch_overhead_share'])} of the step ({fmt_ns(explains)}); "
            f"{per_op}")


def _anomaly_detection(e: Mapping[str, Any], explains: float) -> str:
    parts = []
    if e["nan_checked_nodes_per_step"]:
        parts.append(f"its NaN checks after {e['nan_checked_nodes_per_step']:.0f} backward nodes a step take "
                     f"{fmt_ns(e['nan_check_ns_per_step'])}")
    if e["stacks_per_step"]:
        parts.append(f"the {e['stacks_per_step']:.0f} Python stacks forward ops store a step take "
                     f"{fmt_ns(e['stack_ns_per_step'])}")
    elif not e["python_events"]:
        parts.append("each forward op that records a backward node also stores a Python stack, inside that op's "
                     "own time (not timed apart: the trace has no Python events)")
    return (f"autograd anomaly detection is on: {fmt_pct(e['anomaly_share'])} of the step ({fmt_ns(explains)}) is "
            f"its work; " + "; ".join(parts))


def _short_kernels(e: Mapping[str, Any], explains: float) -> str:
    return (f"{fmt_pct(e['short_kernel_share'])} of kernels run for less time than their launch call "
            f"({e['short_kernels_per_step']:.0f} per step)")


def _steady_graph_build(e: Mapping[str, Any], explains: float) -> str:
    return (f"graph building is {fmt_pct(e['graph_build_share'])} of the steady step ({fmt_ns(explains)}), "
            f"{e['graph_build_events']} build/compile events across {e['steady_steps']} steady steps")


def _cold_compile(e: Mapping[str, Any], explains: float) -> str:
    return (f"the cold step #{e['cold_step']} takes {fmt_ns(e['cold_extra_ns'])} more than a steady step "
            f"({e['steady_steps_worth']:.1f} steady steps' worth); {fmt_ns(e['cold_graph_build_ns'])} of it is "
            "marked graph building/compilation")


def _startup(e: Mapping[str, Any], explains: float) -> str:
    if "startup_share" not in e:
        return "no runtime call long enough to be start-up (context creation, module loading)"
    return (f"{fmt_ns(e['startup_ns'])} ({fmt_pct(e['startup_share'])} of the analysed time) is one-time device "
            "runtime start-up: runtime calls too long for steady state (context creation, lazy module / library "
            "loading)")


def _sync_each_step(e: Mapping[str, Any], explains: float) -> str:
    return (f"the host waits on the device for {fmt_pct(e['sync_wait_share'])} of the step ({fmt_ns(explains)}), "
            f"{e['sync_calls_per_step']:.1f} sync calls per step")


MEMCPY_PART = "memcpy."  # evidence keys memcpy.<direction>_ns: the copy time per direction


def _memcpy(e: Mapping[str, Any], explains: float) -> str:
    parts = ", ".join(f"{k[len(MEMCPY_PART):-len('_ns')]} {fmt_ns(v)}" for k, v in sorted(e.items())
                      if k.startswith(MEMCPY_PART) and k.endswith("_ns"))
    return (f"copies/memsets hold the device alone for {fmt_pct(e['memcpy_share'])} of the step ({fmt_ns(explains)}"
            + (f": {parts}" if parts else "") + f"); {e['pageable_copies']} pageable copies")


def _exposed_communication(e: Mapping[str, Any], explains: float) -> str:
    return (f"exposed communication is {fmt_pct(e['communication_share'])} of the step ({fmt_ns(explains)}): "
            f"{e['collectives_per_step']:.0f} collectives per step take {fmt_ns(e['comm_ns'])}, "
            f"{fmt_pct(e['overlap_share'])} of it overlapped by compute")


def _input_bound(e: Mapping[str, Any], explains: float) -> str:
    return f"input is {fmt_pct(e['input_share'])} of the step ({fmt_ns(explains)})"


def _host_compute(e: Mapping[str, Any], explains: float) -> str:
    caveat = ("; the trace records no Python calls, so that unrecorded time may also be the framework's own "
              "Python around its calls" if e["inferred_ns"] and not e.get("python_events", True) else "")
    if e["python_ns"] and e.get("python_events", True) and not e.get("python_paths", True):
        caveat += ("; the trace names Python files without their folders (JAX's and TensorFlow's Python tracers), so "
                   "the framework's own Python is told from yours only by what runs inside its API calls, and the rest "
                   "of it is counted here")
    # (Without Python frames in the trace, the user's Python is what ops running it recorded.)
    frames_or_ops = "in the user's Python" if e["python_ns"] and not e.get("python_events", True) else \
        "in the user's Python frames"
    parts = [(e["python_ns"], frames_or_ops),
             (e["inferred_ns"], "in unrecorded stretches longer than the dispatch-gap threshold"),
             (e.get("range_ns", 0.0), "inside user ranges, outside every recorded op"),
             (e.get("other_threads_ns", 0.0), "in the user's work run by the framework on another thread "
                                               "(a tf.py_function's Python, a tf.print's formatting) while the step "
                                               "waits"),
             (e.get("hooks_ns", 0.0), "in hooks the autograd engine runs around its nodes (tensor.register_hook, "
                                      "module backward hooks)" + _named(e.get("hooked_nodes"), "hooked nodes")),
             (e.get("other_host_ns", 0.0), "in other recorded host work while the device idles")]
    # Every part that holds time (the first two, at zero, when none does): they add up to the total.
    shown = [(ns, where) for ns, where in parts if ns >= 0.5] or parts[:2]
    if e["python_ns"] or e.get("other_threads_ns", 0.0):
        # (A Python autograd.Function's forward / backward, a tf.py_function's or a tf.print's kernel.)
        caveat += _named(e.get("python_ops"), "the ops that run it", "; ")
    return (f"host work outside the framework is {fmt_pct(e['host_compute_share'])} of the step ({fmt_ns(explains)}): "
            + ", ".join(f"{fmt_ns(ns)} {where}" for ns, where in shown) + caveat)


def _named(names: list[str] | None, label: str, lead: str = " — ") -> str:
    """``lead`` + ``label``: the names quoted, or nothing where there are none."""
    return f"{lead}{label}: " + ", ".join(f"'{shorten(str(n), TOP_KERNEL_CHARS)}'" for n in names) if names else ""


def _low_utilization(e: Mapping[str, Any], explains: float) -> str:
    return f"kernels run for {fmt_pct(e['kernel_share'])} of the step"


# Kernel names are cut in the middle to this many characters inside the compute_bound sentence (the
# start names the scope, the end the op type: a TF op's `…/MatMul/MatMul:_MklMatMul`).
TOP_KERNEL_CHARS = 60


def _compute_bound(e: Mapping[str, Any], explains: float) -> str:
    top = str(e.get("top_kernel", ""))
    share = fmt_pct(e["top_kernel_share"]) if top else ""
    where = f"; the top one, '{shorten(top, TOP_KERNEL_CHARS)}', is {share} of it" if top else ""
    threads = e.get("intra_op_threads")
    cores = f" on {e['cores']} cores" if e.get("cores") else ""
    thread_note = f"; captured with {threads} intra-op thread(s){cores}" if threads else ""
    return f"kernels / compute ops are {fmt_pct(e['kernel_share'])} of the step ({fmt_ns(explains)}){where}{thread_note}"


def _host_between_steps(e: Mapping[str, Any], explains: float) -> str:
    gap = f"{fmt_ns(e['mean_gap_ns'])} between consecutive steps on average ({fmt_pct(e['gap_share'])} of a steady step)"
    if e.get("profiler_step_transition"):
        return (gap + ": torch.profiler's own step() call — ProfilerStep#N runs from one prof.step() to the next, "
                "so the loop's own work is inside the steps")
    if "largest_gap_ns" in e:
        gap += (f", most of it in one gap of {fmt_ns(e['largest_gap_ns'])} (the median gap is "
                f"{fmt_ns(e['median_gap_ns'])}: occasional work — an epoch's end, say — not work after every step)")
    kinds = {"compiled_calls": "calls of compiled functions", "input": "input pipeline work"}
    named = sorted(((e[f"between_steps_{key}_ns"], what) for key, what in kinds.items()
                    if f"between_steps_{key}_ns" in e), reverse=True)
    for time_in, what in named:
        gap += f"; {fmt_ns(time_in)} of the time between steps is {what}"
    return gap


def _paused(e: Mapping[str, Any], explains: float) -> str:
    if not e["steps_paused"]:
        return (f"the step's thread never stops longer than at the same place in the other steps of its shape "
                f"({e['steps_compared']} steady steps compared)")
    return (f"the step's thread stops for {fmt_pct(e['paused_share'])} of the step ({fmt_ns(explains)}) at places "
            f"where the other steps of the same shape do not, in {e['steps_paused']} of {e['steady_steps']} steady "
            f"steps (up to {fmt_ns(e['longest_step_pause_ns'])} in one)")


def _gil_contention(e: Mapping[str, Any], explains: float) -> str:
    return (f"the step's thread waits for Python's interpreter lock for {fmt_pct(e['gil_wait_share'])} of the step "
            f"({fmt_ns(explains)}), in {e['steps_waiting']} of {e['steady_steps']} steady steps: stretches outside "
            f"every op that last whole switch intervals ({fmt_ns(e['switch_interval_ns'])}, CPython's default), "
            f"after framework calls: {_wait_places(e)}"
            + (f"; meanwhile another thread runs Python in '{shorten(e['busy_thread_frame'], TOP_KERNEL_CHARS)}'"
               if e.get("busy_thread_frame") else ""))


def _wait_places(e: Mapping[str, Any]) -> str:
    """Where the step's thread waited for the lock: the events named, and the gaps between them."""
    places = [f"'{shorten(str(name), TOP_KERNEL_CHARS)}'" for name in e.get("wait_places", [])]
    if e.get("gap_wait_share", 0.0) >= 0.05:
        places.append(f"the unrecorded gaps between events ({fmt_pct(e['gap_wait_share'])})")
    return "in " + (", ".join(places[:-1]) + " and " + places[-1] if len(places) > 1 else places[0]) if places else ""


def _gap_gil_contention(e: Mapping[str, Any], explains: float) -> str:
    delta = e["delta_ns"]
    return (f"waits for Python's interpreter lock: {fmt_ns(abs(delta))} more per step in the "
            f"{'candidate' if delta > 0 else 'baseline'} ({fmt_pct(e['share_of_gap'])} of the gap)")


def _unrecorded(e: Mapping[str, Any], explains: float) -> str:
    return f"{fmt_pct(e['idle_share'])} of the step ({fmt_ns(explains)}) has no recorded event on any track"


def _gap(e: Mapping[str, Any], explains: float) -> str:
    if e.get("significant") is False:
        return "the steady steps differ by no more than their own spread: no cause of a gap to name"
    if e.get("run_to_run"):
        measured = "without the profiler " if e["unprofiled"] else ""
        return (f"both traces run the same ops at the same counts per step and nothing they record tells the runs "
                f"apart; their steps, {fmt_ratio(e['run_spread'])} apart {measured}(slower / faster), differ no more "
                f"than separate captures of one unchanged program do (up to {fmt_ratio(e['run_to_run_bound'])}): no "
                "cause of the program's to name"
                + ("" if e.get("shapes_compared") else
                   " (the traces record no tensor shapes or types: inputs of another size or dtype would look "
                   "the same)"))
    if "batch_ratio" in e:
        return (f"a baseline step holds {_batches(e['batches_per_step_baseline'])} and a candidate step "
                f"{_batches(e['batches_per_step_candidate'])}: the per-step gap is no cause of a slowdown "
                f"(per batch the candidate takes {fmt_ratio(e['batch_ratio'])} the baseline's time)")
    return "the steady steps take the same time"


def _gap_explained(e: Mapping[str, Any], explains: float) -> str:
    return (f"named causes explain {fmt_pct(e['explained_share'])} of the gap; {fmt_ns(e['unexplained_ns'])} per "
            "step is time in which the traces record nothing")


SUMMARIES: dict[str, Callable[[Mapping[str, Any], float], str]] = {
    "launch_bound": _launch_bound,
    "anomaly_detection": _anomaly_detection,
    "short_kernels": _short_kernels,
    "steady_graph_build": _steady_graph_build,
    "cold_compile": _cold_compile,
    "startup": _startup,
    "sync_each_step": _sync_each_step,
    "memcpy": _memcpy,
    "exposed_communication": _exposed_communication,
    "input_bound": _input_bound,
    "host_compute": _host_compute,
    "low_utilization": _low_utilization,
    "compute_bound": _compute_bound,
    "host_between_steps": _host_between_steps,
    "paused": _paused,
    "gil_contention": _gil_contention,
    "unrecorded": _unrecorded,
    "gap": _gap,
    "gap_explained": _gap_explained,
    "gap_gil_contention": _gap_gil_contention,
}
GAP_CAUSE_RULE = "gap_"  # gap_<bucket>: a named cause of a comparison's gap


def finding_summary(finding: Any) -> str:
    """The sentence that states a finding's evidence (``Finding.summary``)."""
    if finding.grade == "skipped":
        return f"skipped: needs {RULE_NEEDS[finding.rule]}"
    phrase = SUMMARIES.get(finding.rule)
    if phrase is not None:
        return phrase(finding.evidence, finding.explains_ns)
    if finding.rule.startswith(GAP_CAUSE_RULE):
        bucket = finding.rule[len(GAP_CAUSE_RULE):]
        delta = finding.evidence["delta_ns"]
        slower = "candidate" if delta > 0 else "baseline"
        return (f"{bucket}: {fmt_ns(abs(delta))} more per step in the {slower} "
                f"({fmt_pct(finding.evidence['share_of_gap'])} of the gap)")
    raise KeyError(f"no summary phrase for rule {finding.rule!r}")
