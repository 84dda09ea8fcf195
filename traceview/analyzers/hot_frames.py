"""The user's hottest Python lines: where the steady steps' own Python time is, as ``file:line function``.

Where the trace records Python frames (torch's ``with_stack``, the Python tracers of JAX and
TensorFlow), each Python event of the steady steps whose role is the user's (``python_user``:
the user's frames, and the builtins and standard-library frames they call) gives its self time —
its duration less its direct children's, whatever they are, so the framework calls a line makes
are left to their own buckets — to the nearest frame at or above it that names its code and is
the user's. That is a profiler's self view in which a builtin (``time.sleep``, ``list.append``) is
charged to the line that called it: the deepest of the user's frames that holds the time.

The roles give the frames of the input pipeline (a DataLoader's ``__getitem__`` and the
DataLoader's own frames around it) the ``input`` role: :func:`hot_frames` takes that role for the
input finding, charging time to the nearest frame that is not a framework's
(:data:`~traceview.roles.FRAMEWORK_PYTHON_FRAME`). Pauses and waits for the interpreter lock are
taken off a frame's self time: they are idle, not its work. The numbers are self time, so they
need not add up to a bucket: a line's short stretches between framework calls are the calls'
binding in the buckets (``launch_overhead.binding``) and its own Python here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from traceview import categories as cat
from traceview.analyzers.gaps import driver_rows
from traceview.analyzers.intervals import overlap_with_runs
from traceview.arrays import column_codes, membership
from traceview.normalize import nearest_ancestor, own_pieces, self_time
from traceview.results import BUCKETS, Diagnosis
from traceview.roles import FRAMEWORK_PYTHON_FRAME, Role
from traceview.schema import Kind

# Frames a finding names, at most; a frame with less than this share of the largest is not named.
HOT_FRAMES_NAMED = 3
HOT_FRAME_MIN_SHARE = 0.05

# Frames of traceview run's own hook (traceview/inject/), which wraps the user's calls (an optimizer's
# step, a jitted function): not the user's lines, so their time goes to the line that called them.
# Known by the path torch's tracer names; JAX's and TensorFlow's tracers name base names only.
INSTRUMENTATION_FRAME = re.compile(r"[/\\]traceview[/\\]inject[/\\]")

# How to record Python frames, by framework (the profilers' own options), for a trace with none.
RECORD_PYTHON_FRAMES = {
    "torch": "torch.profiler.profile(with_stack=True) (traceview run records them unless --no-python-events)",
    "tensorflow": "tf.profiler.experimental.ProfilerOptions(python_tracer_level=1) passed to "
                  "tf.profiler.experimental.start",
    "jax": "jax.profiler.ProfileOptions() with python_tracer_level = 1, passed to jax.profiler.start_trace",
}


@dataclass(frozen=True)
class HotFrame:
    frame: str  # "train.py:42 step"
    ns_per_step: float  # self time per steady step, builtins it called included


def frame_label(name: str) -> str | None:
    """``file:line function`` of a frame named by a Python tracer; None for a builtin."""
    match = cat.CODE_FRAME.match(name)
    if match is None:
        return None
    parts = match.groupdict()
    if parts["xfile"] is not None:
        return f"{parts['xfile']}:{parts['xline']} {parts['xfunction']}"
    return f"{parts['file']}:{parts['line']} {parts['function']}"


def _users_lines(diag: Diagnosis) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Per name code: whether it is a line of the user's (a frame naming its code, neither a
    framework's nor traceview run's hook), and the name a report gives it (``file:line function``,
    or a builtin's own name); and the table's name codes."""
    name_codes, name_values = column_codes(diag.timeline.table["name"])
    labels = [frame_label(str(value)) for value in name_values]
    users_line = np.array([label is not None and not FRAMEWORK_PYTHON_FRAME.search(str(value))
                           and not INSTRUMENTATION_FRAME.search(str(value))
                           for label, value in zip(labels, name_values)] + [False], dtype=bool)
    return users_line, [label or str(value) for label, value in zip(labels, name_values)], name_codes


def _ranked(owner_codes: np.ndarray, ns: np.ndarray, names: list[str], steady_steps: int,
            limit: int) -> list[HotFrame]:
    """The names (``names[code]`` of each owner's name code) with most ``ns`` in total, per steady
    step, most first (then by name), at most ``limit``, none under the floor."""
    index: dict[str, int] = {}
    group_of_code = np.array([index.setdefault(name, len(index)) for name in names] + [-1], dtype=np.int64)
    totals = np.bincount(group_of_code[owner_codes], weights=ns.astype(np.float64), minlength=len(index))
    grouped = list(index)
    ranked = sorted((-totals[i], grouped[i]) for i in np.flatnonzero(totals > 0).tolist())
    if not ranked:
        return []
    floor = -ranked[0][0] * HOT_FRAME_MIN_SHARE
    return [HotFrame(name, -total / steady_steps) for total, name in ranked[:limit] if -total >= floor]


def dispatching_lines(diag: Diagnosis, limit: int = HOT_FRAMES_NAMED) -> list[HotFrame]:
    """The user's lines under which the step's thread spends most launch/dispatch time a steady
    step: each moment of the launch_overhead bucket on the step's thread lies in the own time of
    one event (the framework op dispatching, its Python, the line's binding into it), charged to
    the nearest line of the user's at or above that event. Needs the attribution's bucket runs
    (``Attribution.segments``); [] without them or without Python frames."""
    events = diag.timeline.table
    runs = diag.attribution.segments
    steady_steps = len(diag.steady_positions)
    python = membership(events["kind"])([Kind.PYTHON.value])
    if not steady_steps or not len(runs) or not python.any():
        return []
    launch = np.isin(runs["step"], diag.steady_positions) & (runs["bucket"].codes == BUCKETS.index("launch_overhead"))
    order = np.argsort(runs["start"][launch], kind="stable")
    run_start, run_end = runs["start"][launch][order], runs["end"][launch][order]
    if not len(run_start):
        return []
    start, end, row = own_pieces(events, driver_rows(events, diag.steps))
    # Events that overlap without nesting (a Python frame's and an op's clocks) give pieces that
    # overlap: each moment is counted once, for the piece that began first.
    order = np.argsort(start, kind="stable")
    start, end, row = start[order], end[order], row[order]
    if len(start):
        start = np.maximum(start, np.concatenate(([start[0]], np.maximum.accumulate(end)[:-1])))
        end = np.maximum(end, start)
    in_launch = overlap_with_runs(run_start, run_end, start, end)
    keep = in_launch > 0
    row, in_launch = row[keep].astype(np.int64), in_launch[keep]
    users_line, names, name_codes = _users_lines(diag)
    user_frame = python & membership(events["role"])([Role.PYTHON_USER.value]) & users_line[name_codes]
    owner = nearest_ancestor(events, row, user_frame)
    under_a_line = owner >= 0
    return _ranked(name_codes[owner[under_a_line]], in_launch[under_a_line], names, steady_steps, limit)


def hot_frames(diag: Diagnosis, role: str, limit: int = HOT_FRAMES_NAMED) -> list[HotFrame]:
    """The frames of role ``role`` that hold most self time per steady step, most first."""
    events = diag.timeline.table
    steady_steps = len(diag.steady_positions)
    if not steady_steps or not len(events):
        return []
    python = membership(events["kind"])([Kind.PYTHON.value])
    mine = python & membership(events["role"])([role])
    rows = np.flatnonzero(mine & diag.steps.in_steady(events))
    if not len(rows):
        return []
    users_line, names, name_codes = _users_lines(diag)
    owner = nearest_ancestor(events, rows, mine & users_line[name_codes])
    # Time with no line of the user's above it (a framework's frame of the input pipeline, a
    # builtin called from outside every frame) keeps its own frame's name.
    owner = np.where(owner >= 0, owner, rows)
    own = self_time(events, np.ones(len(events), dtype=bool))
    # A pause or a wait for the interpreter lock inside a frame is not its work (idle buckets).
    for taken in (diag.attribution.paused_events, diag.attribution.gil_wait_events):
        if len(taken) == 2 and len(taken[0]):
            np.subtract.at(own, np.asarray(taken[0], dtype=np.int64), np.asarray(taken[1], dtype=np.int64))
    return _ranked(name_codes[owner], np.maximum(own[rows], 0), names, steady_steps, limit)
