"""Waits for Python's interpreter lock: the step's thread stopped while another thread ran Python.

Frameworks let go of the lock (the GIL) inside each op call from Python — torch's bindings,
TensorFlow's ``TFE_Py_FastPathExecute``, JAX's dispatch — and take it back before returning. While
another thread of the process runs Python, taking it back waits whole *switch intervals*
(``sys.getswitchinterval()``, 5 ms by default) plus a hand-over of a few hundred µs, after
framework calls all over the step. Nothing in a trace names the lock, so the rule is the waits'
shape (:func:`contended`); without it that time reads as user code, hooks and dispatch.
docs/attribution.md tells the rule; benchmarks/README.md holds the captures it was measured on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# CPython's default switch interval (Python/ceval_gil.c DEFAULT_INTERVAL, 5000 µs;
# sys.getswitchinterval() == 0.005): how long a thread waits for the lock before it asks the
# holder to drop it. A program that sets another interval is not recognized by this rule.
SWITCH_INTERVAL_NS = 5_000_000
# A wait lasts its intervals plus the hand-over (the holder reaching its next check, the waiter
# waking up): 0.1-0.7 ms in the captures (benchmarks/README.md), whatever the multiple.
RESIDUE_MAX_SHARE = 0.2
MIN_WAITS_PER_STEP = 1.5
MIN_PLACES = 2
MIN_QUANTIZED_SHARE = 0.6
QUIET_WAIT_STEP_SHARE = 0.8
QUIET_SHARE = 0.1
# A call that waits for work on other threads returns as that work ends (within µs); a wait for the
# lock ends a hand-over after the holder's check. Other work that ended this long before the
# stretch did is not what it waited for (a jitted call returns before its program has run, and
# then waits for the lock while the program runs: the truth case jax-gil-contention).
SETTLED_NS = int(RESIDUE_MAX_SHARE * SWITCH_INTERVAL_NS)


@dataclass(frozen=True)
class Stretches:
    """The step thread's candidate stretches in the steady steps: their lengths (ns), the place
    each is at (an event's name code; -1 for the unrecorded gaps, which are one place), their step
    and whether they are quiet (other threads' and devices' recorded work, Python frames aside,
    covers less than ``QUIET_SHARE`` of their last whole intervals, where a wait would be; None: not
    known, taken as not quiet).

    The candidates are the own time of the frameworks' bindings, runtime (the autograd engine's node
    ranges among it), calls and Python frames, and the unrecorded gaps between ops, where the waits
    fall; not the user's frames and ranges, where a ``time.sleep(0.005)`` would last an interval
    too, except, with a Python tracer, a user frame's own time from where a native call inside it
    returns (the wait after a JAX result read or a runtime range; a user's ``time.sleep`` is a
    recorded call of its own). Those pieces and the calls' own time may also hold a wait for other
    work (a program's run, a result), so they are candidates only where quiet. Compute never is: an
    op's math holds no lock, and three matmuls of one size (forward and both gradients) can each
    last a quantized 5.3 ms by chance. The gaps are one place together, so sleeps of 5 ms between
    ops (gaps only) are not contention either. The waits are found before the pauses
    (analyzers/pauses.py): a wait also makes its place last longer in one step than in the others, a
    pause's shape, and a pause is what is left beyond a wait at the same place."""

    length: np.ndarray
    place: np.ndarray
    step: np.ndarray | None = None
    quiet: np.ndarray | None = None


def quantized(length: np.ndarray, interval_ns: int = SWITCH_INTERVAL_NS) -> tuple[np.ndarray, np.ndarray]:
    """Per stretch: whether it is a whole number of switch intervals plus a short hand-over — at
    least one interval, passed by less than ``RESIDUE_MAX_SHARE`` of one (random lengths do so 20 %
    of the time) — and that number (0 where shorter than one interval)."""
    length = np.asarray(length, dtype=np.int64)
    multiple = length // interval_ns
    residue = length - multiple * interval_ns
    return (multiple >= 1) & (residue < RESIDUE_MAX_SHARE * interval_ns), multiple


def too_few_to_be_contended(long_stretches: int, steady_steps: int) -> bool:
    """Whether ``long_stretches`` stretches of one interval or longer are too few for
    :func:`contended` to hold over ``steady_steps``, whichever stretches they are: each of its rules
    needs a wait (a long stretch) in a share of the steady steps at least (``MIN_WAITS_PER_STEP``,
    ``QUIET_WAIT_STEP_SHARE``). Checked before any stretch is looked at one by one."""
    return long_stretches < min(MIN_WAITS_PER_STEP, QUIET_WAIT_STEP_SHARE) * steady_steps


def contended(stretches: Stretches, steady_steps: int, interval_ns: int = SWITCH_INTERVAL_NS) -> bool:
    """Whether the stretches have the shape of waits for a contended interpreter lock: at least
    ``MIN_WAITS_PER_STEP`` quantized stretches a steady step, at ``MIN_PLACES`` places or more (a
    fixed piece of the user's code that happens to last 5.3 ms is one a step, at one place), that
    are at least ``MIN_QUANTIZED_SHARE`` of the stretches of one interval or longer, with one
    interval their most frequent multiple (a busy machine's 10 ms scheduler ticks, on a kernel with
    ``CONFIG_HZ=100``, come in pairs of intervals) — or framework places that wait quietly in
    nearly every steady step (:func:`_a_quiet_wait_every_step`)."""
    if steady_steps <= 0 or not len(stretches.length):
        return False
    is_wait, multiple = quantized(stretches.length, interval_ns)
    waits = int(np.count_nonzero(is_wait))
    long_ones = int(np.count_nonzero(multiple >= 1))
    if not waits or waits < MIN_QUANTIZED_SHARE * long_ones:
        return False
    multiples, counts = np.unique(multiple[is_wait], return_counts=True)  # (not bincount: any length)
    if int(multiples[np.argmax(counts)]) != 1:
        return False
    if waits >= MIN_WAITS_PER_STEP * steady_steps and len(np.unique(stretches.place[is_wait])) >= MIN_PLACES:
        return True
    return _a_quiet_wait_every_step(stretches, is_wait, steady_steps)


def _a_quiet_wait_every_step(stretches: Stretches, is_wait: np.ndarray, steady_steps: int) -> bool:
    """Whether framework places wait, quietly, in nearly every steady step: the rule for a compiled
    step, which makes one or two framework calls and so waits once or twice a step (a tf.function
    step in its call's binding; a jax.jit step in the jitted call's own time, after the program is
    dispatched, and every second or third step once more after reading the result). One place a
    step is also the shape of a fixed piece of code, so these count only at framework places (not
    a gap: unrecorded code may be anything), in ``QUIET_WAIT_STEP_SHARE`` of the steady steps or
    more, each wait quiet (:func:`quiet`)."""
    if stretches.step is None or stretches.quiet is None:
        return False
    sure = is_wait & stretches.quiet & (stretches.place >= 0)
    return len(np.unique(stretches.step[sure])) >= QUIET_WAIT_STEP_SHARE * steady_steps


def quiet(start: np.ndarray, end: np.ndarray, busy_start: np.ndarray, busy_end: np.ndarray) -> np.ndarray:
    """Per stretch [start, end): whether the busy runs (disjoint, sorted) cover less than
    ``QUIET_SHARE`` of it, or none of its last ``SETTLED_NS`` (what ran was over well before the
    stretch ended: not what it waited for). Quiet, nothing else recorded is what the stretch
    waited for: a binding that waits for the device or for executor threads returns as that work
    ends, where a jitted call returns before its program has run and waits for the lock while the
    program runs. The busy runs are the ops, runtime calls and kernels on other threads and
    devices; other threads' Python frames do not count, the lock's holder runs them."""
    if not len(busy_start):
        return np.ones(len(start), dtype=bool)
    before = np.concatenate(([0], np.cumsum(busy_end - busy_start)))  # busy time before each run

    def busy_until(t: np.ndarray) -> np.ndarray:
        """Busy time before each of ``t``."""
        i = np.searchsorted(busy_start, t, side="right")  # runs that start at or before t
        last = np.maximum(i - 1, 0)
        within = np.clip(t - busy_start[last], 0, busy_end[last] - busy_start[last])
        return np.where(i > 0, before[last] + within, 0)

    covered = busy_until(end) - busy_until(start)
    settled = busy_until(end) == busy_until(np.maximum(start, end - SETTLED_NS))
    return (covered < QUIET_SHARE * (end - start)) | settled


def wait_ns(stretches: Stretches, interval_ns: int = SWITCH_INTERVAL_NS) -> np.ndarray:
    """Per stretch, the wait it holds, once the lock is known to be contended (:func:`contended`):
    0 where it is not quantized; else its whole intervals and, of the rest, all but the median of
    the same place's stretches that do not wait (where every one waits, the rest is left where it
    was)."""
    is_wait, multiple = quantized(stretches.length, interval_ns)
    wait = np.where(is_wait, multiple * interval_ns, 0).astype(np.int64)
    if not is_wait.any():
        return wait
    residue = stretches.length - wait
    place = stretches.place.astype(np.int64)
    calm = ~is_wait
    typical = np.full(int(place.max(initial=-1)) + 2, -1.0)
    if calm.any():
        order = np.argsort(place[calm], kind="stable")
        places, first = np.unique(place[calm][order], return_index=True)
        groups = np.split(stretches.length[calm][order], first[1:])
        typical[places + 1] = [float(np.median(g)) for g in groups]  # (one per distinct place)
    known = typical[place + 1]
    extra = np.where(is_wait & (known >= 0), np.maximum(residue - np.maximum(known, 0.0), 0.0), 0.0)
    return wait + extra.astype(np.int64)
