"""Every finding's row: what it detects, what it measures, its thresholds and where they come from.

The one place a threshold is written: the rules grade with their row (:mod:`.diagnosis`,
:mod:`.comparison`), the reports carry its thresholds in words, docs/findings.md shows this
table (scripts/gen_docs.py; a test checks it). Rows are in the order the rules run, which breaks
ties in the ranking.
"""

from __future__ import annotations

from traceview.analyzers.findings.spec import FindingSpec, Thresholds

# ---------------------------------------------------------------------------------------------
# One trace

LAUNCH_BOUND = FindingSpec(
    "launch_bound", "launch/dispatch-bound steps",
    "`launch_overhead` share of the step (graded, with the user's lines the step's thread spends it under as "
    "`hot_frames`, where the trace records Python frames: each moment of the bucket goes to the nearest line of "
    "the user's above the event whose own time holds it)", Thresholds(0.03, 0.15),
    grounded_in="XProf kernel-launch verdict",
    needs="framework ops in the steps (they hold none: the trace recorded no training work in them)",
    advice_key="fuse",
    fix="launch_overhead")
ANOMALY_DETECTION = FindingSpec(
    "anomaly_detection", "autograd anomaly detection left on (torch.autograd.set_detect_anomaly)",
    "share of the step in its work: the NaN checks after backward nodes and, with Python events, the stacks "
    "forward ops store (docs/attribution.md); without Python events the stacks are not timed, and the summary "
    "says so", Thresholds(None, 0.15, of="of the step"),
    listed_only="where the steady steps hold its work",
    no_fix="its checks and stacks run inside other ops' own time: the trace does not hold them apart to remove")
SHORT_KERNELS = FindingSpec(
    "short_kernels", "kernels shorter than their launch call",
    "share of launched kernels with device time < launch-call time (explains none: it restates launch overhead)",
    Thresholds(0.2, 0.5), grounded_in="HTA short-kernel definition",
    needs="device kernels linked to host launches", needs_device=True, advice_key="fuse",
    no_fix="it restates launch/dispatch overhead (launch_bound's prediction)")
STEADY_GRAPH_BUILD = FindingSpec(
    "steady_graph_build", "graph building / compilation in steady-state steps (retracing, recompiles)",
    "`graph_build` share, one-time start-up excluded", Thresholds(0.01, 0.10), advice_key="retrace",
    fix="graph_build")
COLD_COMPILE = FindingSpec(
    "cold_compile", "tracing / compilation cost of the cold first step",
    "the cold step's extra time over a steady step, in steady steps, when the cold step builds graphs (unmarked "
    "compilation is part of the extra time); explains that extra time spread over max(captured steps, 100)",
    Thresholds(2.0, 10.0, percent=False, before="extra time", of="steady steps",
               condition=", when the cold step builds graphs"),
    needs="a cold step in the trace (capture the first step too)", advice_key="cold",
    no_fix="a one-time cost, not the steady step's")
STARTUP = FindingSpec(
    "startup", "one-time runtime start-up inside the steps",
    "runtime calls too long for steady state (≥ 100 ms: context creation, lazy module / library loading), share of "
    "the analysed time; explains it spread over the captured steps",
    Thresholds(0.10, 0.50, of="of the analysed time"),
    no_fix="a one-time cost, not the steady step's")
SYNC_EACH_STEP = FindingSpec(
    "sync_each_step", "host-device synchronization in every step",
    "`sync_wait` share (and sync calls per step)", Thresholds(0.02, 0.10),
    grounded_in="Nsight Systems sync rule",
    fix="sync_wait")
MEMCPY = FindingSpec(
    "memcpy", "time in copies and memsets (direction, pageable vs pinned)",
    "`memcpy` share; count of `Pageable` copies",
    Thresholds(0.05, 0.20, note="any pageable copy is at least moderate"),
    grounded_in="Nsight pageable-memcpy rule", needs="device events", needs_device=True,
    fix="memcpy")
EXPOSED_COMMUNICATION = FindingSpec(
    "exposed_communication", "collective communication that no compute kernel hides",
    "`communication` share: exposed collective time (with the collective time per step, the part compute "
    "overlaps, and the collectives per step)", Thresholds(0.05, 0.20),
    listed_only="for traces with collective kernels",
    fix="communication")
INPUT_BOUND = FindingSpec(
    "input_bound", "steps waiting for the input pipeline",
    "`input` share (graded, with the user's hottest lines of the pipeline — a Dataset's `__getitem__` — as "
    "`hot_frames`, self time a step, where the trace records Python frames; else `record_frames`: how to record "
    "them, torch)", Thresholds(0.05, 0.20), grounded_in="XProf input verdict", advice_key="input",
    fix="input")
HOST_COMPUTE = FindingSpec(
    "host_compute", "the step's thread runs the user's own host work (Python, GC) between framework calls",
    "`host_compute` share, in parts that add up to it (evidence `python_ns`: user Python frames; `inferred_ns`: "
    "unrecorded stretches longer than the gap threshold; `range_ns`: inside user ranges, outside every recorded "
    "op; `other_threads_ns`: the user's Python that the framework runs on another thread while the step waits — "
    "tf.py_function; `hooks_ns`: hooks the autograd engine runs around its nodes — tensor hooks, module backward "
    "hooks — named by `hooked_nodes`; `other_host_ns`: other recorded host work while the device idles; "
    "`python_ops`: the ops that run the user's Python — a Python autograd.Function's forward and backward, a "
    "tf.py_function's kernel — named in the summary); in a trace without Python calls the summary says the "
    "unrecorded part may also be the framework's own Python; where the Python frames name their files without "
    "folders — JAX's and TensorFlow's Python tracers — the framework's files are told by what runs inside its API "
    "calls (roles.py) and the summary says the rest counts as the user's, evidence `python_paths` false; graded, "
    "it names the user's hottest lines as `hot_frames` (`file:line function`, self time a step, builtins charged to "
    "the line calling them, pauses and lock waits taken off: analyzers/hot_frames.py), or where the trace records "
    "no Python frames `record_frames`: the framework's option that records them",
    Thresholds(0.05, 0.20),
    fix="host_compute")
LOW_UTILIZATION = FindingSpec(
    "low_utilization", "device idle for much of the step",
    "`kernel` share (device traces; explains none: it restates the other buckets)",
    Thresholds(0.8, 0.5, higher_is_worse=False), needs="device events", needs_device=True,
    no_fix="it restates the other causes (their predictions)")
COMPUTE_BOUND = FindingSpec(
    "compute_bound", "the step is spent in the math itself (kernels / compute ops)",
    "`kernel` share (with the top kernel's share of it, and the capture's intra-op threads and cores)",
    Thresholds(0.60, 0.85),
    no_fix="the math is the step's work, not a cause to remove: traceview whatif --scale kernel=0.5 replays faster math")
HOST_BETWEEN_STEPS = FindingSpec(
    "host_between_steps", "Python / host time between steps (outside every step window)",
    "mean gap between step windows / steady step (explains the mean gap)", Thresholds(0.02, 0.10),
    needs="at least two steps",
    no_fix="it lies between the step windows, outside the steps replayed: all of it is the loop's to save")
PAUSED = FindingSpec(
    "paused", "the step's thread stops where the other steps of its shape do not (the machine takes the core)",
    "`idle.paused` share (docs/attribution.md, *Pauses*), with the steady steps that paused and the longest pause "
    "of one step", Thresholds(0.03, 0.15),
    needs="at least 3 steady steps of the same shape (the same events in the same order on the step's thread)",
    fix="idle.paused")
GIL_CONTENTION = FindingSpec(
    "gil_contention", "the step's thread waits for Python's interpreter lock (GIL) held by another thread",
    "`idle.gil_wait` share (docs/attribution.md, *Waits for the interpreter lock*), with the steady steps that "
    "waited, the switch interval, where the waits were (`wait_places`: the events whose own time held the most; "
    "`gap_wait_share`: the share in the unrecorded gaps) and, where other threads' Python is recorded, the body of "
    "the thread that ran it longest (`busy_thread_frame`: the deepest frame spanning 90 % of its Python time)",
    Thresholds(0.03, 0.15), listed_only="where the trace shows such waits",
    fix="idle.gil_wait")
UNRECORDED = FindingSpec(
    "unrecorded", "step time in which the trace records nothing",
    "`idle` share, pauses and lock waits excluded", Thresholds(0.03, 0.15),
    grounded_in="XProf 'all others' verdict",
    no_fix="the trace does not say what runs then")

DIAGNOSIS_FINDINGS: tuple[FindingSpec, ...] = (
    LAUNCH_BOUND, ANOMALY_DETECTION, SHORT_KERNELS, STEADY_GRAPH_BUILD, COLD_COMPILE, STARTUP, SYNC_EACH_STEP,
    MEMCPY, EXPOSED_COMMUNICATION, INPUT_BOUND, HOST_COMPUTE, LOW_UTILIZATION, COMPUTE_BOUND, HOST_BETWEEN_STEPS,
    PAUSED, GIL_CONTENTION, UNRECORDED,
)

# ---------------------------------------------------------------------------------------------
# Two traces: what explains the gap between their steady steps

# A cause of the gap: its share of the gap (the bucket's delta / the gap), when more than 5 %.
_GAP_SHARE = Thresholds(0.05, 0.5, strict=True, of="of the gap")

GAP = FindingSpec(
    "gap", "step-time difference",
    "none where there is nothing to explain: no gap, a ratio whose interval holds 1, steps holding different "
    "numbers of batches, or a gap no larger than separate runs of one program show (the evidence says which)",
    None)
GAP_CAUSE = FindingSpec(
    "gap_<bucket>", "<bucket> explains part of the gap",
    "the bucket's delta per steady step, as a share of the gap; the three largest causes in the direction of the "
    "gap", _GAP_SHARE)
GAP_GIL_CONTENTION = FindingSpec(
    "gap_gil_contention", "waits for Python's interpreter lock explain part of the gap",
    "the delta of `idle.gil_wait`, as a share of the gap (counted among the causes)", _GAP_SHARE,
    listed_only="where either side waits for the lock")
GAP_PAUSED = FindingSpec(
    "gap_paused", "pauses of the step's thread explain part of the gap",
    "the delta of `idle.paused`, as a share of the gap", _GAP_SHARE)
GAP_EXPLAINED = FindingSpec(
    "gap_explained", "share of the gap explained by named causes",
    "1 − |unexplained| / |gap|, where unexplained is the delta of idle time that is neither a pause nor a wait for "
    "the lock", Thresholds(0.9, None, higher_is_worse=False, of="of the gap explained"))

COMPARISON_FINDINGS: tuple[FindingSpec, ...] = (GAP, GAP_CAUSE, GAP_GIL_CONTENTION, GAP_PAUSED, GAP_EXPLAINED)
