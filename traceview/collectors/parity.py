"""Loss parity: the paired runs really are the same computation.

"Same workload in two frameworks" is checked, not assumed: from the same initial weights and
data, the first ``N`` losses of every capture are compared with reference runs — one per
installed framework, in its :data:`REFERENCE_MODES` mode (eager for torch and TensorFlow, ``jit``
for JAX, whose only mode it is; and the numpy baseline where it exists) — on the parity variant
of the workload. Two losses agree when ``|a - b| <= atol + rtol * max(|a|, |b|)`` with the spec's
tolerances (float32 on CPU; measured differences are 1e-7..1e-6 relative, the default bound is
1e-4). A capture whose losses disagree gets ``parity.ok = false`` in its manifest and a warning
on stderr: its timings then compare different programs. With nothing to compare against (one
framework installed, no baseline) ``parity.ok`` is ``null`` and ``missing`` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from traceview.collectors.workloads import WorkloadSpec


# The mode of each framework whose losses every capture is compared with: the plainest program
# the framework runs (JAX is captured jitted only, so its jit run is its reference).
REFERENCE_MODES: dict[str, str] = {"torch": "eager", "tf": "eager", "jax": "jit", "numpy": "eager"}


def label(framework: str, mode: str) -> str:
    return f"{framework}-{mode}"


def rel_diff(a: float, b: float, atol: float) -> float:
    """``|a - b|`` relative to the larger magnitude (or ``atol``), so the test reads ``<= rtol``."""
    if math.isnan(a) or math.isnan(b):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), atol)


@dataclass
class Comparison:
    """One pair of loss sequences compared step by step."""

    other: str
    steps: int
    max_rel_diff: float
    first_bad_step: int | None

    @property
    def ok(self) -> bool:
        return self.first_bad_step is None and self.steps > 0


def compare(this: list[float], other: list[float], other_label: str, rtol: float, atol: float) -> Comparison:
    n = min(len(this), len(other))
    worst = 0.0
    first_bad: int | None = None
    for i in range(n):
        a, b = float(this[i]), float(other[i])
        d = rel_diff(a, b, atol)
        worst = max(worst, d)
        if first_bad is None and not (abs(a - b) <= atol + rtol * max(abs(a), abs(b))):
            first_bad = i
    return Comparison(other=other_label, steps=n, max_rel_diff=worst, first_bad_step=first_bad)


@dataclass
class ParityResult:
    """The parity verdict of one capture, as stored under ``manifest["parity"]``."""

    this: str
    steps: int
    rtol: float
    atol: float
    variant: str
    losses: dict[str, list[float]]
    comparisons: list[Comparison] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool | None:
        """``None`` when there was nothing to compare with (a single framework installed)."""
        if not self.comparisons:
            return None
        return all(c.ok for c in self.comparisons)

    @property
    def cross_framework(self) -> bool:
        own = self.this.split("-", 1)[0]
        return any(c.other.split("-", 1)[0] != own and c.ok for c in self.comparisons)

    def mismatches(self) -> list[str]:
        out = []
        for c in self.comparisons:
            if c.ok:
                continue
            if c.first_bad_step is None:
                out.append(f"{self.this} vs {c.other}: nothing to compare")
                continue
            a = self.losses[self.this][c.first_bad_step]
            b = self.losses[c.other][c.first_bad_step]
            out.append(
                f"{self.this} vs {c.other}: step {c.first_bad_step} loss {a:.7g} vs {b:.7g} "
                f"(relative difference {rel_diff(a, b, self.atol):.2e} > rtol {self.rtol:g})"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "steps": self.steps,
            "rtol": self.rtol,
            "atol": self.atol,
            "rule": "|a-b| <= atol + rtol*max(|a|,|b|) at every compared step",
            "variant": self.variant,
            "compared_with": [c.other for c in self.comparisons],
            "cross_framework": self.cross_framework,
            "max_rel_diff": {c.other: c.max_rel_diff for c in self.comparisons},
            "losses": self.losses,
            "mismatches": self.mismatches(),
            "missing": self.missing,
        }


def check(
    spec: WorkloadSpec,
    this_label: str,
    this_losses: list[float],
    references: dict[str, list[float]],
    missing: list[str] | None = None,
) -> ParityResult:
    """Compare one capture's losses with every reference run other than itself."""
    n = min(spec.parity_steps, len(this_losses))
    losses = {this_label: [float(v) for v in this_losses[:n]]}
    result = ParityResult(
        this=this_label,
        steps=n,
        rtol=spec.parity_rtol,
        atol=spec.parity_atol,
        variant=spec.parity_note,
        losses=losses,
        missing=list(missing or []),
    )
    for ref_label, ref_losses in references.items():
        if ref_label == this_label:
            continue
        losses[ref_label] = [float(v) for v in ref_losses[:n]]
        result.comparisons.append(
            compare(losses[this_label], losses[ref_label], ref_label, spec.parity_rtol, spec.parity_atol)
        )
    return result
