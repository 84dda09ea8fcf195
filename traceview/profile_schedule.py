"""Which steps of a loop :func:`traceview.capture` profiles: torch.profiler.schedule's cycle of
waiting, warm-up and active steps, with the same meaning for every framework.

::

    with traceview.capture("runs/mine", "tf", schedule=traceview.schedule(wait=1, warmup=1, active=3, repeat=2)):
        ...   # loop steps 2-4 in one trace, 7-9 in a second; the others run without the profiler

A cycle is ``wait`` steps, ``warmup`` steps and ``active`` steps; ``repeat`` cycles (0: until the
loop ends), after ``skip_first`` steps (and without the first cycle's waiting steps when
``skip_first_wait``) — torch.profiler.schedule's arguments and arithmetic. Each cycle's active
steps are one trace: the profiler starts right before the first of them and stops right after
the last. Waiting and warm-up steps run without the profiler in every framework (torch.profiler
keeps its profiler on in warm-up and discards what it records; TensorFlow's cannot discard), so
the profiler's start-up lands between steps, outside every step's time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from traceview.errors import UsageError


class Action(str, Enum):
    """What the profiler does in one step of the loop."""

    NONE = "none"  # not profiled (before, between or after the cycles; waiting)
    WARMUP = "warmup"  # not profiled: the steps right before a cycle's active steps
    RECORD = "record"  # profiled
    SAVE = "save"  # profiled, the last active step of its cycle: the trace is written after it


# torch.profiler.ProfilerAction names → actions (a torch.profiler.schedule(...) function returns those).
_TORCH_ACTIONS = {"NONE": Action.NONE, "WARMUP": Action.WARMUP, "RECORD": Action.RECORD,
                  "RECORD_AND_SAVE": Action.SAVE}
PROFILED = frozenset({Action.RECORD, Action.SAVE})


@dataclass(frozen=True)
class Schedule:
    """A cycle of ``wait``, ``warmup`` and ``active`` steps, ``repeat`` times (0: until the loop ends)."""

    wait: int
    warmup: int
    active: int
    repeat: int = 0
    skip_first: int = 0
    skip_first_wait: int = 0  # 1: the first cycle starts without its waiting steps

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise UsageError(f"schedule({name}={value!r}): must be a whole number ≥ 0")
        if self.active < 1:
            raise UsageError(f"schedule(active={self.active}): must be at least 1 (the steps that are profiled)")

    def action(self, step: int) -> Action:
        """The action of loop step ``step`` (from 0), as torch.profiler.schedule computes it."""
        if step < self.skip_first:
            return Action.NONE
        step -= self.skip_first
        if self.skip_first_wait:
            step += self.wait
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step // cycle >= self.repeat:
            return Action.NONE
        position = step % cycle
        if position < self.wait:
            return Action.NONE
        if position < self.wait + self.warmup:
            return Action.WARMUP
        return Action.SAVE if position == cycle - 1 else Action.RECORD

    def describe(self) -> dict[str, int]:
        return asdict(self)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Schedule:
    """Which loop steps ``traceview.capture(schedule=...)`` profiles, with torch.profiler.schedule's
    arguments and meaning, in torch and TensorFlow alike.

    After ``skip_first`` steps, cycles of ``wait`` steps, ``warmup`` steps and ``active`` steps run
    ``repeat`` times (0: until the loop ends); ``skip_first_wait=1`` starts the first cycle at its
    warm-up. Each cycle's active steps are one trace: the profiler starts right before the first
    and stops right after the last, so ``schedule(wait=1, warmup=1, active=2, repeat=2)`` puts loop
    steps 2–3 in one trace and 6–7 in another. Waiting and warm-up steps run without the profiler
    (torch.profiler runs its profiler in warm-up and discards what it records; TensorFlow's
    profiler cannot discard), and are timed for the manifest's unprofiled step time. Raises
    :class:`~traceview.errors.UsageError` for a negative count or ``active`` below 1.
    """
    return Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first,
                    skip_first_wait=skip_first_wait)


def first_steps(max_steps: int | None) -> Callable[[int], Action]:
    """Without a schedule: the first ``max_steps`` steps in one trace (every step when None)."""
    if max_steps is None:
        return lambda step: Action.RECORD
    return lambda step: Action.SAVE if step == max_steps - 1 else (Action.RECORD if step < max_steps else Action.NONE)


def actions_of(value: Schedule | Mapping[str, int] | Callable[[int], Any]) -> tuple[Callable[[int], Action], Any]:
    """The per-step actions of a ``schedule=`` argument, and how the manifest describes it: a
    :class:`Schedule`, a mapping of its arguments, or a function of the step returning a
    torch.profiler ``ProfilerAction`` (``torch.profiler.schedule(...)``)."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(Schedule.__dataclass_fields__))
        if unknown:
            raise UsageError(f"schedule: unknown key(s) {', '.join(unknown)} (wait, warmup, active, repeat, "
                             f"skip_first, skip_first_wait)")
        missing = sorted({"wait", "warmup", "active"} - set(value))
        if missing:
            raise UsageError(f"schedule: missing {', '.join(missing)} (wait, warmup and active are needed)")
        value = Schedule(**value)
    if isinstance(value, Schedule):
        return value.action, value.describe()
    if callable(value):
        function = value

        def torch_action(step: int) -> Action:
            result = function(step)
            name = getattr(result, "name", result)
            if name not in _TORCH_ACTIONS:
                raise UsageError(f"schedule({step}) returned {result!r}; expected a torch.profiler.ProfilerAction")
            return _TORCH_ACTIONS[name]

        return torch_action, {"function": getattr(function, "__qualname__", repr(function))}
    raise UsageError(f"schedule={value!r}: pass traceview.schedule(wait=…, warmup=…, active=…), a dict of "
                     f"those, or torch.profiler.schedule(...)")
