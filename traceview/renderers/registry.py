"""The output formats: ``--format`` choices, extension guessing, and rendering any result.

The format modules are imported when first asked for, so the command line starts fast.
"""

from __future__ import annotations

from typing import Any

from traceview.errors import UsageError
from traceview.renderers.base import Renderer
from traceview.results import Comparison, Diagnosis, FolderDiagnosis


def _builtin() -> dict[str, Renderer]:
    from traceview.renderers import html_report, json_report, markdown, terminal

    return {r.name: r for r in (terminal.RENDERER, markdown.RENDERER, json_report.RENDERER, html_report.RENDERER)}


def names() -> list[str]:
    return sorted(_builtin())


def get(name: str) -> Renderer:
    return _builtin()[name]


def by_extension(extension: str) -> Renderer | None:
    return next((r for r in _builtin().values() if r.extension == extension), None)


def renderer(format: str, comparison: bool = False) -> Renderer:
    """The renderer named by ``--format``; a usage error names the choices."""
    formats = _builtin()
    if format not in formats:
        raise UsageError(f"--format {format!r} is not one of: {', '.join(sorted(formats))}")
    chosen = formats[format]
    if comparison and chosen.render_comparison is None:
        supported = [n for n, r in sorted(formats.items()) if r.render_comparison is not None]
        raise UsageError(f"--format {format!r} cannot show a comparison; use one of: {', '.join(supported)}")
    return chosen


def render(result: Diagnosis | FolderDiagnosis | Comparison, format: str = "terminal", width: int = 100,
           color: bool = False) -> str:
    """The report of any result in one format: what ``traceview diagnose`` / ``compare`` print."""
    options: dict[str, Any] = {"width": width, "color": color}
    if isinstance(result, Comparison):
        return renderer(format, comparison=True).render_comparison(result, **options)  # type: ignore[misc]
    chosen = renderer(format)
    if isinstance(result, FolderDiagnosis):
        return chosen.render_diagnoses(list(result.diagnoses), comparisons=list(result.comparisons),
                                       multi_rank=list(result.multi_rank), **options)
    if isinstance(result, Diagnosis):
        return chosen.render_diagnoses([result], **options)
    raise TypeError(f"cannot render a {type(result).__name__}: expected a Diagnosis, FolderDiagnosis or Comparison")
