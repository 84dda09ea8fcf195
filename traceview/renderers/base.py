"""Renderer contract: what an output format declares about itself.

A renderer takes analysis results (:mod:`traceview.results`, never raw traces) and returns text.
Each format module defines one :class:`Renderer` as ``RENDERER``: its name, the file extension
it writes, and the functions for one or more diagnoses and for a comparison.
:mod:`traceview.renderers.registry` lists them; ``--format`` choices come from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Renderer:
    name: str
    extension: str
    render_diagnoses: Callable[..., str]  # (list[Diagnosis], **options) -> str
    description: str
    render_comparison: Callable[..., str] | None = None  # (Comparison, **options) -> str
    render_whatif: Callable[..., str] | None = None  # (WhatIf, **options) -> str


Options = dict[str, Any]
