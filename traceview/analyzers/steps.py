"""Find training steps and their time windows.

Rules, tried in order; the report names the one that found the steps:

1. ``markers``: step-marker events (``kind == "step"``): torch ``ProfilerStep#N``, TF
   ``Trace('train', step_num=N)``, JAX ``StepTraceAnnotation``. When markers sit on several host
   tracks, the track with most markers is used.
2. ``repeated-top-level``: no markers; the top-level host event name that repeats (≥ 2 times)
   and covers the most time is taken as one step per occurrence — names that differ only in a
   trailing number after a separator (``train_step_0``, ``train_step_1``: a user's numbered
   ``record_function``) count as one name, the number as the step's. A step runs from its run's
   start to the next run's (the last, to its own end), as ``ProfilerStep#N`` runs from one
   ``step()`` to the next: what the loop does between the runs — Keras ``fit``'s own eager work
   between its step calls, a wait for the result, an un-jitted ``jax.grad`` call before the
   update that was taken as the run — is the step's too. Only events whose role
   makes them a unit of the user's loop can be steps (``LOOP_ROLES``: a user's range, a user's
   Python function, a call of a compiled or traced function) — not a framework op, a runtime
   call or framework machinery, which repeat inside any one step (the two ``aten::linear`` of a
   one-step capture would cut that step into pieces; TF's eager-op dispatch
   ``TFE_Py_FastPathExecute_C`` runs between Keras ``fit``'s step calls). Where a call of a
   compiled or traced function repeats at the top level, the calls win over frames and ranges
   beside them. Runs of one name
   calling different graph functions (fit's train and evaluation functions) are told apart by
   the function; the one run most often is the step, the others end a step. The last run's window
   ends with the run, without the loop's work after it: when that makes it shorter than the other
   steps' median by ``COLD_FACTOR``, the step is partial, not steady. A user's range taken
   as the step becomes the step's marker (kind and role ``step``), as ``ProfilerStep#N`` is.
3. ``optimizer-updates``: none of those; torch.optim's update ranges
   (``Optimizer.step#Adam.step``, which torch records around every optimizer's ``step()``:
   ``categories.TORCH_OPTIMIZER_UPDATE``) on one host track, at least two, end one step each —
   the plain ``with profile(): for batch in data: ...`` loop with no ``prof.step()``. Step k runs
   from the end of update k−1 to the end of update k, as ``ProfilerStep#N`` runs from one
   ``step()`` (called after the update) to the next; the first step starts at the track's first
   top-level event. What runs after the last update (an unfinished iteration) is in no step. An
   update nested in another (a wrapper optimizer stepping an inner one) is part of the outer; a
   loop that updates two optimizers per iteration (a GAN) shows two steps per iteration.
4. ``whole-trace``: none of these; the whole trace is one step (and the report says so).

A step window starts at its marker and ends at the later of the marker's end and the end of the
last device activity launched from inside the marker (the step "extends to the end of the last
device work its host part launched", as the removed PyTorch TensorBoard plugin did). Windows
never overlap: a step starts no earlier than the previous window ends. Every step is kept — the
last one too (Holistic Trace Analysis drops the last ProfilerStep; traceview does not) — but a
step whose window holds no event except markers (the last ``ProfilerStep#N`` when the loop ends
at the last ``step()`` call: the stretch to the profiler's stop) is no step and is left out.

Cold steps: the steps holding graph building or compilation that the trace starts with (a run of
them from the first step; a later one is a recompile in the steady state); the steps a capture's manifest
lists as cold or warm-up; the first step when slower than ``COLD_FACTOR`` × the median of the
others, unless the capture's manifest lists no cold step (its window began after the warm-up); and the steps still warming up after it: each next one, while all before it are cold,
when slower than ``WARMUP_FACTOR`` × the median of the steps after it. Steady state = the
steps that are not cold.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from traceview import categories as cat
from traceview.arrays import at_rows, codes_matching, column_codes, membership, values_at, values_matching
from traceview.capture_facts import declared_cold_steps
from traceview.normalize import launch_rows, nearest_ancestor, outermost_rows
from traceview.results import Steps
from traceview.roles import Role
from traceview.schema import DEVICE_KINDS, Kind, Timeline
from traceview.table import Labels, Table, code_type

COLD_FACTOR = 1.5
# A step after the first, with only cold steps before it, is still warming up when it is slower
# than this × the median of the steps after it (beyond the 2× a busy machine alone can cause).
WARMUP_FACTOR = 3.0
_STEP_NUMBER = re.compile(r"#(\d+)$")
# A number that ends a name after a separator: "train_step_3", "step 3", "iteration-3", "batch#3"
# (not the digit of an op's own name: "AddmmBackward0").
_TRAILING_NUMBER = re.compile(r"[_\-#:. ](\d+)$")
# The roles (roles.py) of events that can be the steps of a loop without markers (rule 2 above): a
# user's range (record_function, tf.profiler Trace without step_num), a user's Python frame, a call
# of a tf.function / jitted function / compiled region, tracing or not.
LOOP_ROLES = (Role.ANNOTATION.value, Role.PYTHON_USER.value, Role.CALL.value, Role.CALL_TRACING.value,
              Role.COMPILED_CODE.value)
# Of those, the calls of a compiled or traced function: preferred where they repeat at the top level.
_CALL_ROLES = [Role.CALL.value, Role.CALL_TRACING.value, Role.COMPILED_CODE.value]


def find_steps(timeline: Timeline) -> Steps:
    """Find the steps, assign each event's ``step`` column, and mark cold steps."""
    events = timeline.table
    ts = events["ts"]
    end = ts + events["dur"]
    names = events["name"]

    markers = np.flatnonzero(membership(events["kind"])([Kind.STEP.value]))
    if len(markers):
        tracks = values_at(events["track"], markers)
        counts = Counter(tracks.tolist())
        best = max(counts, key=counts.__getitem__)  # (the first track of the most markers, in order met)
        markers = markers[tracks == best]
        rule = "markers"
        driver = str(best)
        numbers = _marker_numbers(events, markers)
        detail = f"{len(markers)} step markers ({_marker_label(values_at(names, markers))}) on track '{best}'"
    else:
        markers, detail, run_starts = _repeated_top_level(events)
        driver = str(values_at(events["track"], markers[:1])[0]) if len(markers) else _busiest_loop_track(events)
        if len(markers):
            rule = "repeated-top-level"
            numbers = _loop_numbers(values_at(names, markers))
            _ranges_as_markers(events, markers)
        else:
            markers, detail = _optimizer_updates(events)
            if len(markers):
                rule = "optimizer-updates"
                driver = str(values_at(events["track"], markers[:1])[0])
                numbers = np.arange(len(markers), dtype=np.int64)
            else:
                markers, sequence_end, detail, cut_short = _repeated_sequence(events, driver)
                if len(markers):
                    rule = "repeated-sequence"
                    numbers = np.arange(len(markers), dtype=np.int64)
                else:
                    rule = "whole-trace"
                    numbers = np.zeros(1, dtype=np.int64)
                    detail = ("no step markers, no repeated top-level range, user function or function call (a step "
                              "loop), fewer than two optimizer updates, and no sequence of top-level ops that "
                              "repeats: the whole trace is one step")

    if rule == "whole-trace":
        starts = np.array([ts.min() if len(ts) else 0], dtype=np.int64)
        host_ends = np.array([end.max() if len(end) else 0], dtype=np.int64)
        step_names = np.array(["whole trace"], dtype=object)
    elif rule == "repeated-sequence":
        # A repetition starts its step, which runs on to the next one (the loop's own Python between
        # them is the step's); the last ends with its last op.
        starts = ts[markers]
        host_ends = np.append(starts[1:], sequence_end)
        step_names = values_at(names, markers)
    elif rule == "optimizer-updates":
        # An update ends its step; the next step starts where it ended (updates never share a number).
        host_ends = end[markers]
        starts = np.concatenate(([_loop_start(events, driver, ts[markers[0]])], host_ends[:-1]))
        step_names = values_at(names, markers)
    else:
        starts = ts[markers]
        host_ends = end[markers]
        step_names = values_at(names, markers)
        # Markers with the same number (a marker split by the profiler) are merged.
        merged, group = np.unique(numbers, return_inverse=True)
        first_start = np.full(len(merged), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_start, group, starts)
        last_end = np.full(len(merged), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(last_end, group, host_ends)
        first_marker = np.full(len(merged), len(numbers), dtype=np.int64)
        np.minimum.at(first_marker, group, np.arange(len(numbers), dtype=np.int64))
        order = np.argsort(first_start, kind="stable")  # (by start; equal starts in number order)
        numbers, starts, host_ends = merged[order], first_start[order], last_end[order]
        step_names = step_names[first_marker[order]]
        if rule == "repeated-top-level":
            # A run is the step's start; the step runs on to the next run (as ProfilerStep#N runs from
            # one step() to the next): what the loop does between its runs is the step's too. A run of
            # the same call with another function (Keras fit's evaluation) ends a step as well.
            after = np.searchsorted(run_starts, starts, side="right")
            next_run = np.where(after < len(run_starts), run_starts[np.minimum(after, len(run_starts) - 1)],
                                host_ends)
            host_ends = np.maximum(host_ends, next_run)

    device_end = _device_work_end(events, starts, host_ends)
    ends = np.maximum(host_ends, device_end)
    queued_end = _queued_work_end(events, starts, host_ends, driver)
    if queued_end is not None:
        ends = np.maximum(ends, queued_end)
        detail += (f"; the steps' compiled programs ran after their calls returned (asynchronous dispatch: "
                   f"{len(starts)} program runs on worker threads, the last ending "
                   f"{(int(queued_end[-1]) - int(host_ends[-1])) / 1e6:.2f} ms after the last step's own end), so "
                   f"each step runs to the end of its program, matched in order")
    # No overlap: a window starts where the previous one ended at the earliest.
    starts = starts.copy()
    for i in range(1, len(starts)):
        if starts[i] < ends[i - 1]:
            starts[i] = ends[i - 1]
            ends[i] = max(ends[i], starts[i])

    step_col = _assign(ts, starts, ends)
    step_col, kept = _without_empty_steps(events, step_col, len(starts))
    empty_inside: tuple[int, ...] = ()
    if kept is not None:
        left_out = numbers[~kept]
        detail += (f"; {', '.join(f'#{n}' for n in left_out)} left out: no event in "
                   f"{'its' if len(left_out) == 1 else 'their'} window but the marker")
        # A run of them at the end is the stretch from the last step() to the profiler's stop; one
        # before a step that holds events is a hole in the recording (the quality check says so).
        inside = ~kept & (np.arange(len(kept)) < np.flatnonzero(kept)[-1])
        empty_inside = tuple(int(n) for n in numbers[inside])
        numbers, starts, ends, host_ends, step_names = (a[kept] for a in (numbers, starts, ends, host_ends,
                                                                          step_names))
    events["step"] = step_col  # (int32, the column's type)

    is_build = membership(events["kind"])([Kind.GRAPH_BUILD.value, Kind.COMPILE.value])
    build_counts = np.bincount(step_col[is_build & (step_col >= 0)], minlength=len(starts))[: len(starts)]
    duration = ends - starts
    builds = build_counts > 0
    cold = np.zeros(len(duration), dtype=bool)
    if not (builds.all() and len(builds) > 1):
        # The building steps the trace starts with are its warm-up; a later one is a recompile in the
        # steady state (a new shape mid-run: it was called cold and left out of the steady steps,
        # hiding a 41 ms retrace from steady_graph_build). (Every step building graphs — retracing
        # each step — is the steady state: none is cold by building.)
        leading = int(np.argmin(builds)) if not builds.all() else len(builds)
        cold[:leading] = True
    capture = timeline.meta.extra.get("capture") or {}
    declared = declared_cold_steps(capture)
    # A capture whose manifest lists no cold step profiled a window after its warm-up (traceview
    # run's steps 5-15): a slow first step there is the profiler starting, or a pause, not a cold
    # step, and stays in the steady state where the step table and the pause finding show it.
    warmed_up_before = "cold_steps" in capture and not declared and rule == "markers"
    if len(duration) >= 2 and not warmed_up_before and duration[0] > COLD_FACTOR * np.median(duration[1:]):
        cold[0] = True
    if declared and rule == "markers" and not np.isin(numbers, sorted(declared)).all():
        # The capture's manifest says which steps were cold or warm-up: they are not steady state.
        cold |= np.isin(numbers, sorted(declared))
    cold |= _still_warming_up(duration, cold)

    table = Table(
        {
            "number": numbers.astype(np.int64),
            "name": step_names.astype(str).astype(object),
            "start": starts.astype(np.int64),
            "end": ends.astype(np.int64),
            "host_end": host_ends.astype(np.int64),
            "duration": duration.astype(np.int64),
            "cold": cold,
            "graph_build_events": build_counts.astype(np.int64),
        },
        len(numbers),
    )
    # The last run of a loop found without markers: its window ends with the run, without the loop's
    # work until the next run (a Keras callback, the rest of the loop body). When that makes it
    # shorter than the other steps by the cold factor, it is partial: not a steady step.
    partial: tuple[int, ...] = ()
    if rule == "repeated-sequence" and cut_short:
        partial = (len(table) - 1,)
    if rule == "repeated-top-level" and len(table) >= 3:
        others = duration[:-1][~cold[:-1]]
        if len(others) and duration[-1] * COLD_FACTOR < np.median(others):
            partial = (len(table) - 1,)
            detail += (f"; the last run (#{numbers[-1]}) is no steady step: its window ends with the run, without "
                       "the loop's work until a next run")
    batches = batches_per_step(numbers, starts, ends) if rule == "markers" else 1
    if batches > 1:
        detail += (f"; each step holds {batches} batches: its markers' step numbers advance by {batches} and the "
                   f"steps follow each other without a gap (Keras steps_per_execution={batches}, or a loop that runs "
                   f"{batches} batches per marked step)")
    return Steps(table=table, rule=rule, rule_detail=detail, driver_track=driver, empty_inside=empty_inside,
                 partial=partial, batches_per_step=batches)


# Steps count as back to back when the median gap from one step's end to the next one's start is
# at most this share of the median step: a step marked every k batches leaves k - 1 unmarked
# steps between its windows, a gap of about (k - 1) steps.
BACK_TO_BACK_GAP = 0.25


def batches_per_step(numbers: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> int:
    """How many batches (the training loop's own count) one marked step holds: k where the
    markers' step numbers advance by the same k > 1 from each step to the next and the steps
    follow each other without room for the unmarked ones between (Keras numbers its profiled
    steps by batch, so steps_per_execution=4 marks steps 76, 80, 84 …); 1 otherwise."""
    if len(numbers) < 2:
        return 1
    strides = np.diff(numbers.astype(np.int64))
    stride = int(strides[0])
    if stride < 2 or not (strides == stride).all():
        return 1
    gaps = starts[1:].astype(np.int64) - ends[:-1].astype(np.int64)
    if np.median(gaps) > BACK_TO_BACK_GAP * np.median(ends - starts):
        return 1
    return stride


def events_held(events: Table, step_col: np.ndarray, n_steps: int) -> np.ndarray:
    """Per step, the events its window holds besides step markers."""
    marker = membership(events["kind"])([Kind.STEP.value])
    return np.bincount(step_col[(step_col >= 0) & ~marker], minlength=n_steps)[:n_steps]


def _without_empty_steps(events: Table, step_col: np.ndarray,
                         n_steps: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Steps whose window holds no event but step markers are no steps: torch.profiler's last
    ``ProfilerStep#N`` runs from the last ``step()`` call to the profiler's stop and holds
    nothing when the loop ends there (as a schedule's cycle cut short does). Taken as a step, that
    stretch of microseconds would be the steady state. They are left out (their events, the
    markers, in no step) unless every step is empty. Returns the step column renumbered and
    which steps are kept (None: all)."""
    kept = events_held(events, step_col, n_steps) > 0
    if kept.all() or not kept.any():
        return step_col, None
    position = np.where(kept, np.cumsum(kept) - 1, -1).astype(step_col.dtype)
    return np.where(step_col >= 0, position[np.maximum(step_col, 0)], -1).astype(step_col.dtype), kept


def _still_warming_up(duration: np.ndarray, cold: np.ndarray) -> np.ndarray:
    """The steps after the first that are still warming up: each next step, while every step
    before it is cold, when slower than ``WARMUP_FACTOR`` × the median of the steps after it.

    Warm-up can span several steps with nothing recorded to show it: the TorchScript profiling
    executor optimizes a graph on its second or third call, inside the call's own time. A later
    step needs stronger evidence than the first (``COLD_FACTOR``): on a busy machine a step of a
    few ms runs up to 2× slower with no cause in the program at all."""
    slow = np.zeros(len(duration), dtype=bool)
    if not len(duration) or not cold[0]:
        return slow
    for i in range(1, len(duration) - 1):
        if not (cold[i] or duration[i] > WARMUP_FACTOR * np.median(duration[i + 1:])):
            break
        slow[i] = not cold[i]
    return slow


def _busiest_loop_track(events: Table) -> str:
    """The host track with the most top-level time, preferring tracks that run the user's loop."""
    rows = np.flatnonzero((events["device"] < 0) & (events["depth"] == 0))
    if not len(rows):
        return ""
    busy = _sums_by(values_at(events["track"], rows).astype(str), events["dur"][rows])
    loop = {track: time for track, time in busy.items() if cat.USER_LOOP_TRACK.search(track)}
    pick = loop or busy
    return max(pick, key=pick.__getitem__)  # (the first of the busiest, by name)


def _sums_by(keys: np.ndarray, values: np.ndarray) -> dict[Any, int]:
    """The sum of ``values`` per distinct key, keys in sorted order (a few hundred top-level rows)."""
    distinct, group = np.unique(keys, return_inverse=True)
    sums = np.zeros(len(distinct), dtype=np.int64)
    np.add.at(sums, group, values.astype(np.int64, copy=False))
    return dict(zip(distinct.tolist(), sums.tolist()))


def _marker_numbers(events: Table, markers: np.ndarray) -> np.ndarray:
    """Step numbers: the ``step_num`` column (XPlane) when present, else ``#N`` in the name."""
    if "step_num" in events.columns:
        nums = events["step_num"][markers]
        if (nums >= 0).all():
            return nums.astype(np.int64)
    names = values_at(events["name"], markers)
    out = np.empty(len(markers), dtype=np.int64)
    for i, name in enumerate(names):
        m = _STEP_NUMBER.search(str(name))
        number = int(m.group(1)) if m else i
        out[i] = number if number < 2**62 else i  # a marker number beyond int64: its position
    return out


def _marker_label(names: np.ndarray) -> str:
    uniq = sorted(set(re.sub(r"#\d+$", "#N", str(n)) for n in names))
    return ", ".join(uniq[:3])


def _repeated_top_level(events: Table) -> tuple[np.ndarray, str, np.ndarray]:
    """The repeated top-level host event that most likely is the training step, and the starts of
    every run of that event (sorted), the steps' and those of its other functions.

    Candidates repeat at least twice at depth 0 and are not profiler machinery or waits
    (``categories.NOT_A_STEP``). Tracks running the user's Python loop are preferred; among the
    candidates there, the name covering the most time wins. Runs of one name that call different
    graph functions (Keras fit's ``multi_step_on_iterator`` runs the train function, and at each
    epoch's end the evaluation function: ``__inference_multi_step_on_iterator_293`` / ``_477``) are
    told apart by that function; the one run most often is the step.
    """
    none = np.array([], dtype=np.int64)
    host = (events["device"] < 0) & (events["depth"] == 0)
    host &= membership(events["role"])(LOOP_ROLES)
    rows = np.flatnonzero(host)
    if not len(rows):
        return rows, "", none
    names = values_at(events["name"], rows).astype(str)
    loop_names = np.array([_TRAILING_NUMBER.sub("", name) for name in names.tolist()], dtype=object)
    tracks = values_at(events["track"], rows).astype(str)
    dur = events["dur"][rows].astype(np.int64, copy=False)
    functions_called = _called_functions(events, rows)
    is_call = np.isin(values_at(events["role"], rows).astype(str), _CALL_ROLES)
    # Per (track, loop name): runs, time, and whether every run is a call.
    candidates: dict[tuple[str, str], list[Any]] = {}
    for key, time, call in zip(zip(tracks.tolist(), loop_names.tolist()), dur.tolist(), is_call.tolist()):
        entry = candidates.setdefault(key, [0, 0, True])
        entry[0] += 1
        entry[1] += time
        entry[2] = entry[2] and call
    candidates = {key: entry for key, entry in sorted(candidates.items())
                  if entry[0] >= 2 and not cat.NOT_A_STEP.search(key[1])}
    if not candidates:
        return none, "", none
    user_loop = {key: entry for key, entry in candidates.items() if cat.USER_LOOP_TRACK.search(key[0])}
    candidates = user_loop or candidates
    calls = {key: entry for key, entry in candidates.items() if entry[2]}
    # A repeated call of a jitted / traced / compiled function is the step where one repeats at
    # the top level: a Python frame or range beside it (not around it) is other per-iteration work
    # (JAX's own `__getitem__` slicing the batch, a logging range), however long it waits.
    candidates = calls or candidates
    best_track, best_loop = max(candidates, key=lambda key: candidates[key][1])  # (ties: the first by name)
    runs = (loop_names == best_loop) & (tracks == best_track)
    # The function run most often is the step (evaluation runs at epochs' ends only; its first run
    # may trace it and outlast every training step), then the one covering the most time.
    per_function: dict[str, list[int]] = {}
    for called, time in sorted(zip(functions_called[runs].tolist(), dur[runs].tolist()), key=lambda pair: pair[0]):
        entry = per_function.setdefault(called, [0, 0])
        entry[0] += 1
        entry[1] += time
    function = max(per_function, key=lambda called: tuple(per_function[called]))
    picked = runs & (functions_called == function)
    chosen = rows[picked]
    first, last = names[picked][0], names[picked][-1]
    what = f"event '{first}'" if first == last else f"events '{first}' … '{last}'"
    detail = f"no step markers; each of the {len(chosen)} runs of the top-level {what} on '{best_track}' is taken as one step"
    others = int(runs.sum() - picked.sum())
    if others:
        detail += (f" (those calling {function}; the {others} runs calling another function — "
                   f"{', '.join(str(f) for f in per_function if f != function)[:120]} — end a step but are none)")
    return chosen, detail, np.sort(events["ts"][rows[runs]])


def _called_functions(events: Table, rows: np.ndarray) -> np.ndarray:
    """Per row, the graph function the first call nested in it runs (its ``fw_op``: TF's
    ``__inference_…`` of a tf.function or Keras step call); "" where none."""
    out = np.full(len(rows), "", dtype=object)
    if "fw_op" not in events.columns or not len(rows):
        return out
    fw_codes, fw_values = column_codes(events["fw_op"])
    named = np.array([bool(v) and str(v) != "nan" for v in fw_values] + [False], dtype=bool)[fw_codes]
    calls = np.flatnonzero(named & membership(events["role"])([Role.CALL.value, Role.CALL_TRACING.value]))
    if not len(calls):
        return out
    is_row = np.zeros(len(events), dtype=bool)
    is_row[rows] = True
    owner = nearest_ancestor(events, calls, is_row, include_self=False)
    calls, owner = calls[owner >= 0], owner[owner >= 0]
    # The first call each run makes (calls come in row order; np.unique gives first occurrences).
    owners, first = np.unique(owner, return_index=True)
    values = np.asarray(fw_values, dtype=object)
    out[np.searchsorted(rows, owners)] = values[fw_codes[calls[first]]]
    return out


def _ranges_as_markers(events: Table, rows: np.ndarray) -> None:
    """A user's range taken as the step (``record_function("train_step")``, a TF ``Trace`` without
    ``step_num``) is the step's marker, as ``ProfilerStep#N`` is: kind and role ``step``. Its own
    time is then what it is under a marker — the unrecorded gaps between the step's events, which
    the gap rule tells apart (framework glue or host work) — not time "inside a user range"; the
    same step reads the same whichever way its steps are marked. Python frames and function calls
    taken as steps keep their roles: their own time is code that runs (or a call that waits)."""
    ranges = rows[values_at(events["role"], rows).astype(str) == Role.ANNOTATION.value]
    if not len(ranges):
        return
    for column, value in (("kind", Kind.STEP.value), ("role", Role.STEP.value)):
        values: Labels = events[column]
        categories = values.categories.tolist()
        if value not in categories:
            categories.append(value)
        codes = values.codes.astype(code_type(len(categories)))  # (a copy: the table's column is replaced)
        codes[ranges] = categories.index(value)
        events[column] = Labels(codes, categories)


def _optimizer_updates(events: Table) -> tuple[np.ndarray, str]:
    """torch.optim's update ranges that end the steps of a loop without markers (rule 3): the
    outermost ones on the host track holding most of them, when there are at least two."""
    codes, values = column_codes(events["name"])
    update = codes_matching(codes, np.array([str(v).startswith(cat.TORCH_OPTIMIZER_UPDATE) for v in values],
                                            dtype=bool))
    update &= events["device"] < 0
    if np.count_nonzero(update) < 2:
        return np.array([], dtype=np.int64), ""
    rows = outermost_rows(events, update)
    tracks = values_at(events["track"], rows).astype(str)
    found, counts = np.unique(tracks, return_counts=True)
    track = str(found[np.argmax(counts)])  # (np.unique sorts: the first of equal counts, by name)
    rows = rows[tracks == track]
    if len(rows) < 2:
        return np.array([], dtype=np.int64), ""
    names = sorted(set(values_at(events["name"], rows).astype(str)))
    detail = (f"no step markers and no repeated top-level range, user function or function call; each of the "
              f"{len(rows)} optimizer updates ('{', '.join(names[:3])}', torch.optim's range) on '{track}' "
              "ends one step, the first step starting at the track's first top-level event")
    return rows, detail


def smallest_period(sequence: list[int]) -> int:
    """The smallest p such that ``sequence[i] == sequence[i + p]`` wherever both exist (a last
    repetition may be cut short): the length less the longest proper prefix that is also a suffix
    (Knuth-Morris-Pratt's failure function), in one pass over the sequence — a loop per top-level
    op of the loop's thread, not per event."""
    if not sequence:
        return 0
    border = [0] * len(sequence)
    k = 0
    for i in range(1, len(sequence)):
        while k and sequence[i] != sequence[k]:
            k = border[k - 1]
        if sequence[i] == sequence[k]:
            k += 1
        border[i] = k
    return len(sequence) - border[-1]


def _repeated_sequence(events: Table, track: str) -> tuple[np.ndarray, int, str, bool]:
    """Rule 4, for a loop with no markers, no repeated range or call and no optimizer (a plain
    ``with profile(): for x in batches: model(x)`` inference loop): the top-level ops on the loop's
    track (profiler machinery aside) when they are one sequence of K ops repeated in the same order
    at least twice; the first op of each repetition starts a step. Returns those rows, the end of
    the last repetition's last op, the rule in words, and whether the last repetition is cut short
    by the profiler's stop (a partial step); no rows when the ops do not repeat."""
    none = np.array([], dtype=np.int64), 0, "", False
    if not track:
        return none
    rows = _loop_track_rows(events, track)
    codes, values = column_codes(events["name"])
    sequence = codes[rows]
    count = len(sequence)
    if count < 2:
        return none
    period = smallest_period(sequence.tolist())
    if period > count // 2:
        return none  # (no repetition: the sequence is its own period)
    firsts = rows[::period]
    cut = count % period != 0
    ops = [str(values[c]) for c in sequence[:period]]
    shown = f"'{ops[0]}'" if period == 1 else f"'{ops[0]}' … '{ops[-1]}'"
    detail = (f"no step markers, no repeated top-level range, user function or function call, and no optimizer "
              f"update; the {period} top-level op{'s' if period > 1 else ''} on '{track}' ({shown}) repeat "
              f"{len(firsts)} times in the same order: each repetition is taken as one step (a loop without "
              "prof.step() or a step range)" + ("; the last repetition is cut short (partial)" if cut else ""))
    last_end = int((events["ts"][rows] + events["dur"][rows]).max())
    return firsts, last_end, detail, cut


def _loop_track_rows(events: Table, track: str) -> np.ndarray:
    """The top-level host events on the loop's track, profiler machinery (``categories.NOT_A_STEP``)
    aside, in row order."""
    rows = np.flatnonzero((events["depth"] == 0) & (events["device"] < 0))
    rows = rows[values_at(events["track"], rows).astype(str) == track]
    codes, values = column_codes(events["name"])
    machinery = values_matching(values, cat.NOT_A_STEP)
    return rows[~codes_matching(codes[rows], machinery)]


def _loop_start(events: Table, track: str, first_update: int) -> int:
    """Where the first step of an unmarked loop starts: the first top-level event on the loop's
    track that is not profiler machinery, or the first update."""
    rows = _loop_track_rows(events, track)
    if not len(rows):
        return int(first_update)
    return int(min(events["ts"][rows].min(), first_update))


def _loop_numbers(names: np.ndarray) -> np.ndarray:
    """Step numbers of the runs of a repeated top-level event: the number each name ends with
    (``train_step_3`` → 3) when every run has one and they rise, else the runs' positions."""
    found = [_TRAILING_NUMBER.search(str(name)) for name in names]
    numbers = [int(m.group(1)) for m in found if m]
    if len(numbers) == len(names) and all(b > a for a, b in zip(numbers, numbers[1:])) and max(numbers) < 2**62:
        return np.array(numbers, dtype=np.int64)
    return np.arange(len(names), dtype=np.int64)


def _queued_work_end(events: Table, starts: np.ndarray, host_ends: np.ndarray,
                     driver: str) -> np.ndarray | None:
    """Per step, the end of the compiled program run it queued, where the steps did not wait for
    them: None unless that is what the trace shows.

    JAX (and any runtime that dispatches asynchronously) returns from a jitted call before its
    program has run; a loop that never blocks queues a program run per step and the runs happen
    on worker threads afterwards, in the order they were queued (each step's parameters are the
    last one's result). The step windows then hold the dispatch alone (12 µs "steps" of a 0.5 ms
    program). A program run is compiled code at the top of a thread other than the step's, that
    starts once the run before it is done on its own thread (pieces a run hands to a thread pool
    start within it; the executor's wait for them — an annotation — closes the run and starts
    none: :func:`_program_runs`). Where such runs outlast the last step, and there are as many of
    them from the first step on as steps, the k-th run ends the k-th step. Where every run ends inside its step (a loop that blocks each
    step) nothing changes; where the counts differ (two jitted calls a step) nothing does either."""
    if len(starts) < 2:
        return None
    compiled = membership(events["role"])([Role.COMPILED_CODE.value])
    rows = np.flatnonzero(compiled & (events["depth"] == 0) & ~membership(events["track"])([driver]))
    if not len(rows):
        return None
    run_start = events["ts"][rows]
    order = np.argsort(run_start, kind="stable")
    rows, run_start = rows[order], run_start[order]
    run_end = run_start + events["dur"][rows]
    if run_end.max() <= host_ends[-1]:
        return None  # nothing runs on after the steps: they waited for their programs
    waits = membership(events["kind"])([Kind.ANNOTATION.value])[rows]
    tracks, _ = column_codes(events["track"])
    runs = np.array(_program_runs(run_start.tolist(), run_end.tolist(), tracks[rows].tolist(), waits.tolist()),
                    dtype=np.int64).reshape(-1, 2)
    queued = runs[runs[:, 0] >= starts[0], 1]
    if len(queued) != len(starts):
        return None
    return np.maximum.accumulate(queued)


def _program_runs(starts: list[int], ends: list[int], tracks: list[int], waits: list[bool]) -> list[tuple[int, int]]:
    """(start, end) of each program run among top-level compiled-code rows in start order: a row
    that starts once the current run's own thread is done with it (its rows and the executor's
    wait) starts the next run; a row on another thread starting before that is a piece the run
    handed to a pool thread, which ends the run no earlier than it ends but does not hold the next
    run off (a piece may outlast the executor's wait while the next run starts). One entry per
    run: a loop over program runs, a few rows each, not over events."""
    runs: list[tuple[int, int]] = []
    held_until = -1  # the current run's own thread is busy with it until here
    run_track = -1
    for start, end, track, wait in zip(starts, ends, tracks, waits):
        if start >= held_until and not wait:
            runs.append((start, end))
            held_until, run_track = end, track
        elif runs:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
            if track == run_track:
                held_until = max(held_until, end)
    return runs


def _device_work_end(events: Table, starts: np.ndarray, host_ends: np.ndarray) -> np.ndarray:
    """For each step, the end of the last device event whose host launch started inside it."""
    out = np.zeros(len(starts), dtype=np.int64)
    dev = np.flatnonzero(membership(events["kind"])([k.value for k in DEVICE_KINDS
                                                           if k != Kind.DEVICE_ANNOTATION]))
    if not len(dev):
        return out
    launch = launch_rows(events)[dev]
    ok = launch >= 0
    dev, launch = dev[ok], launch[ok]
    ts = events["ts"]
    dev_end = ts[dev] + events["dur"][dev]
    launch_ts = ts[launch]
    idx = np.searchsorted(starts, launch_ts, side="right") - 1
    inside = (idx >= 0) & (launch_ts < at_rows(host_ends, idx))
    np.maximum.at(out, idx[inside], dev_end[inside])
    return out


def _assign(ts: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the window that contains each timestamp, -1 when none (int32): the last window
    that starts at or before it, where it ends after it. The windows come in order, one after
    another (``starts`` sorted, each ending by the next one's start)."""
    if not len(starts):
        return np.full(len(ts), -1, dtype=np.int32)
    if len(ts) < 2 or not bool(np.all(ts[1:] >= ts[:-1])):
        idx = np.searchsorted(starts, ts, side="right") - 1
        valid = idx >= 0
        valid &= ts < at_rows(ends, idx)
        return np.where(valid, idx, -1).astype(np.int32)
    # Timestamps in order (the table's): each window's rows are one stretch, from the first row at
    # or after its start to the first at or after its end (or the next window's start). The stretch
    # [lo, hi) of window i holds i + 1 in a running sum of +(i + 1) at lo and -(i + 1) at hi.
    lo = np.searchsorted(ts, starts, side="left")
    hi = np.minimum(np.searchsorted(ts, ends, side="left"), np.append(lo[1:], len(ts)))
    number = np.arange(1, len(starts) + 1, dtype=np.int32)
    marks = np.zeros(len(ts) + 1, dtype=np.int32)
    np.add.at(marks, lo, number)
    np.add.at(marks, hi, -number)
    return np.cumsum(marks[:-1], dtype=np.int32) - 1
