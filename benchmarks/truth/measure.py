"""Timing on noisy machines: the calm gate, the bootstrap CI of a median difference, knob calibration.

The calm gate (see the project's field notes): these small VMs have slow phases lasting
seconds to tens of seconds. Before each measurement round a ~1 ms pure-Python probe is timed;
the fastest probe ever seen on this CPU is kept in a small file (a slow phase can outlast a
whole case, so the reference must outlive the process), and a round counts only when the probe
before and after it is within ``CALM_FACTOR`` of that best.

The probe alone misses the other common disturbance on a shared 2-core machine: another
process taking a core. A single-threaded probe barely notices it, while a step whose ops use
both cores stalls at every op (a descheduled worker thread holds everyone at the barrier).
So the gate also counts the CPU time used by *other* processes while a round runs
(``/proc/stat`` busy time minus this process's own CPU time) and rejects the round when it
exceeds ``FOREIGN_CPU_LIMIT`` of the machine.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from traceview.collectors.manifest import cpu_name

CALM_FACTOR = 1.3
FOREIGN_CPU_LIMIT = 0.12  # share of all cores used by other processes during a round
PROBE_ITERATIONS = 25_000  # about 1 ms of pure Python on the 2-core VMs
BOOTSTRAP_RESAMPLES = 4000


def _probe_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "traceview" / "truth_calm_probe.json"


def spin(n: int) -> int:
    """``n`` iterations of pure-Python arithmetic; no calls in the loop, so Python tracers see one call."""
    s = 0
    j = 0
    while j < n:
        s += j * j % 7
        j += 1
    return s


def _system_busy_s() -> float | None:
    """CPU seconds all cores spent busy since boot (``/proc/stat``), or ``None`` off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# Processes a case starts on purpose (a competing process, the injected cause of a contention
# case): their CPU time is the case's own, not a disturbance of the measurement.
OWN_CHILDREN: set[int] = set()


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system + sum(_process_cpu_s(pid) for pid in OWN_CHILDREN)


def _process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (``/proc/<pid>/stat``), 0 when gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


class ForeignCPU:
    """CPU used by other processes between ``start()`` and ``share()``, as a share of all cores."""

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self.start()

    def start(self) -> None:
        self._sys, self._own, self._wall = _system_busy_s(), _own_cpu_s(), time.monotonic()

    def share(self) -> float:
        sys_now = _system_busy_s()
        if sys_now is None or self._sys is None:
            return 0.0
        wall = max(time.monotonic() - self._wall, 1e-3)
        foreign = (sys_now - self._sys) - (_own_cpu_s() - self._own)
        return max(foreign, 0.0) / (wall * self.cores)


class Calm:
    """The calm gate: probe, compare with the best probe ever seen on this CPU, wait for calm."""

    def __init__(self) -> None:
        self.cpu = cpu_name()
        self.path = _probe_file()
        self.best_ns = math.inf
        try:
            data = json.loads(self.path.read_text())
            self.best_ns = float(data.get(self.cpu, math.inf))
        except (OSError, ValueError):
            pass
        self._saved = self.best_ns

    def probe(self) -> float:
        """Probe time in ns (best of two back-to-back runs); updates the best seen."""
        times = []
        for _ in range(2):
            t0 = time.perf_counter_ns()
            spin(PROBE_ITERATIONS)
            times.append(time.perf_counter_ns() - t0)
        p = float(min(times))
        if p < self.best_ns:
            self.best_ns = p
        return p

    def ratio(self, p: float) -> float:
        return p / self.best_ns if self.best_ns and math.isfinite(self.best_ns) else 1.0

    def is_calm(self, p: float) -> bool:
        return self.ratio(p) <= CALM_FACTOR

    def wait(self, max_s: float = 10.0) -> tuple[bool, float]:
        """Wait until the probe is fast and no other process is busy (or ``max_s`` passed).

        Returns (calm, probe / best).
        """
        deadline = time.monotonic() + max_s
        while True:
            other = ForeignCPU()
            time.sleep(0.3)
            quiet = other.share() <= FOREIGN_CPU_LIMIT
            p = self.probe()
            calm = quiet and self.is_calm(p)
            if calm or time.monotonic() > deadline:
                return calm, self.ratio(p)

    def save(self) -> None:
        """Persist the best probe (re-reading the file first: another run may have found a better one)."""
        if not math.isfinite(self.best_ns) or self.best_ns >= self._saved:
            return
        try:
            data = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (OSError, ValueError):
            data = {}
        data[self.cpu] = min(self.best_ns, float(data.get(self.cpu, math.inf)))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.path)
        self._saved = data[self.cpu]


def median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def bootstrap_median_diff(clean: list[float], injected: list[float], seed: int = 0) -> dict[str, Any]:
    """median(injected) − median(clean) with a bootstrap 95 % CI (each side resampled on its own)."""
    a, b = np.asarray(clean, float), np.asarray(injected, float)
    if len(a) == 0 or len(b) == 0:
        return {"median_diff_ns": None, "ci95_ns": None, "n_clean": len(a), "n_injected": len(b)}
    rng = np.random.default_rng(seed)
    ra = np.median(a[rng.integers(0, len(a), (BOOTSTRAP_RESAMPLES, len(a)))], axis=1)
    rb = np.median(b[rng.integers(0, len(b), (BOOTSTRAP_RESAMPLES, len(b)))], axis=1)
    diff = rb - ra
    lo, hi = np.percentile(diff, [2.5, 97.5])
    return {
        "median_diff_ns": float(np.median(b) - np.median(a)),
        "ci95_ns": [float(lo), float(hi)],
        "n_clean": int(len(a)),
        "n_injected": int(len(b)),
        "resamples": BOOTSTRAP_RESAMPLES,
    }


def search_knob(
    start: int, power: float, lo: int, hi: int, target_ns: Callable[[float], float],
    cost_at: Callable[[int], tuple[float, float]],
) -> tuple[int, list[dict[str, float]]]:
    """The knob whose injected cost reaches the target.

    ``cost_at(k)`` → (cost ns, clean step ns). The cost is taken to grow as ``k ** power``: a
    first point, a second point scaled by that law, the exponent re-estimated from the two when
    they are far enough apart, and a final step from the second point. Returns the knob and the
    points measured.
    """
    points: list[dict[str, float]] = []

    def clamp(k: float) -> int:
        return int(min(max(round(k), lo), hi))

    k = clamp(start)
    cost, clean = cost_at(k)
    points.append({"knob": k, "cost_ns": cost, "clean_ns": clean})
    tries = 0
    while cost <= 0.05 * target_ns(clean) and tries < 4 and k < hi:  # too small to see: grow first
        k = clamp(k * 4 ** (1 / power))
        cost, clean = cost_at(k)
        points.append({"knob": k, "cost_ns": cost, "clean_ns": clean})
        tries += 1
    k1 = clamp(k * (target_ns(clean) / max(cost, 1.0)) ** (1 / power))
    if k1 == k:
        return k, points
    cost1, clean1 = cost_at(k1)
    points.append({"knob": k1, "cost_ns": cost1, "clean_ns": clean1})
    p = power
    if cost > 0 and cost1 > 0 and abs(math.log(k1 / k)) > 0.3:
        p = min(max(math.log(cost1 / cost) / math.log(k1 / k), 0.5), 3.5)
    return clamp(k1 * (target_ns(clean1) / max(cost1, 1.0)) ** (1 / p)), points
