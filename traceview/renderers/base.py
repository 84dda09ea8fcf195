"""Renderer contract and registry: ``--format`` choices come from here.

A renderer takes analysis results (never raw traces) and returns text. Each declares its name,
the file extension it writes, and whether it supports one diagnosis and/or a comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

_REGISTRY: dict[str, "Renderer"] = {}


@dataclass(frozen=True)
class Renderer:
    name: str
    extension: str
    render_diagnoses: Callable[..., str]  # (list[Diagnosis], **options) -> str
    description: str
    render_comparison: Callable[..., str] | None = None  # (Comparison, **options) -> str


def register(renderer: Renderer) -> Renderer:
    _REGISTRY[renderer.name] = renderer
    return renderer


def get(name: str) -> Renderer:
    _load_builtin()
    return _REGISTRY[name]


def names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def _load_builtin() -> None:
    # Importing the modules registers them; done lazily so the CLI starts fast.
    from traceview.renderers import html_report, json_report, markdown, terminal  # noqa: F401


def by_extension(extension: str) -> Renderer | None:
    _load_builtin()
    for renderer in _REGISTRY.values():
        if renderer.extension == extension:
            return renderer
    return None


Options = dict[str, Any]
