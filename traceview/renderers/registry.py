"""The output formats: ``--format`` choices, extension guessing, and rendering any result.

The format modules are imported when first asked for, so the command line starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from traceview.errors import UsageError
from traceview.renderers.base import Renderer

if TYPE_CHECKING:  # (the results are imported where a result is rendered: the command line's options read
    # the format names at start, before any analysis is loaded)
    from traceview.results import Comparison, Diagnosis, FolderDiagnosis, WhatIf


# The reports a renderer may show, by the name of its function for each (renderers/base.py).
DIAGNOSES, COMPARISON, WHATIF = "render_diagnoses", "render_comparison", "render_whatif"
_EVERY_REPORT = frozenset({DIAGNOSES, COMPARISON, WHATIF})

# Format name -> (module in traceview.renderers, file extension, the reports it shows). Each module's
# RENDERER carries the same name and extension and has a function for exactly those reports
# (tests/test_registry.py checks it); a run imports only the one it writes, and the command line's
# --format help and completion read the reports here, importing none.
_FORMATS: dict[str, tuple[str, str, frozenset[str]]] = {
    "terminal": ("terminal", ".txt", _EVERY_REPORT),
    "md": ("markdown", ".md", _EVERY_REPORT),
    "json": ("json_report", ".json", _EVERY_REPORT),
    "html": ("html_report", ".html", frozenset({DIAGNOSES, COMPARISON})),
}


def names() -> list[str]:
    return sorted(_FORMATS)


def names_rendering(function: str) -> list[str]:
    """The format names whose renderer has ``function`` (``render_diagnoses``,
    ``render_comparison``, ``render_whatif``), from the table: no format's module is imported."""
    return [name for name in names() if function in _FORMATS[name][2]]


def get(name: str) -> Renderer:
    module = _FORMATS[name][0]
    return import_module(f"traceview.renderers.{module}").RENDERER


def by_extension(extension: str) -> Renderer | None:
    return next((get(name) for name, (_, ext, _) in _FORMATS.items() if ext == extension), None)


def renderer(format: str, comparison: bool = False, whatif: bool = False) -> Renderer:
    """The renderer named by ``--format``; a usage error names the choices."""
    if format not in _FORMATS:
        raise UsageError(f"--format {format!r} is not one of: {', '.join(names())}")
    chosen = get(format)
    for wanted, attribute, what in ((comparison, "render_comparison", "a comparison"),
                                    (whatif, "render_whatif", "a what-if replay")):
        if wanted and getattr(chosen, attribute) is None:
            raise UsageError(f"--format {format!r} cannot show {what}; use one of: "
                             f"{', '.join(names_rendering(attribute))}")
    return chosen


def render(result: Diagnosis | FolderDiagnosis | Comparison | WhatIf, format: str = "terminal", width: int = 100,
           color: bool = False, per_rank: bool = False, per_trace: bool = False) -> str:
    """The report of any result in one format: what ``traceview diagnose`` / ``compare`` print
    (``per_rank``: a folder's text reports list every rank of a large run, and its own report;
    ``per_trace``: they show the own report of every trace compared within its workload, not its
    baseline's only)."""
    from traceview.results import Comparison, Diagnosis, FolderDiagnosis, WhatIf

    options: dict[str, Any] = {"width": width, "color": color}
    if isinstance(result, Comparison):
        return renderer(format, comparison=True).render_comparison(result, **options)  # type: ignore[misc]
    if isinstance(result, WhatIf):
        return renderer(format, whatif=True).render_whatif(result, **options)  # type: ignore[misc]
    chosen = renderer(format)
    if isinstance(result, FolderDiagnosis):
        return chosen.render_diagnoses(list(result.diagnoses), comparisons=list(result.comparisons),
                                       multi_rank=list(result.multi_rank), left_out=list(result.left_out),
                                       rank_rows=result.rank_rows,
                                       per_rank=per_rank, per_trace=per_trace, **options)
    if isinstance(result, Diagnosis):
        return chosen.render_diagnoses([result], **options)
    raise TypeError(f"cannot render a {type(result).__name__}: expected a Diagnosis, FolderDiagnosis, Comparison or WhatIf")
