"""Regenerate the tables in docs/ from the code (the kind and role rules, the role passes, the
attribution layers, the findings) and the library reference (docs/api.md, from the signatures and docstrings of
traceview.api and the fields of traceview.results); tests check that the docs match.

    python scripts/gen_docs.py
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import re
import textwrap
import tokenize
from pathlib import Path
from typing import Any, Callable

from traceview import api, errors, parquet, profile_schedule, results, table
from traceview.analyzers.findings.spec import findings_markdown
from traceview.analyzers.findings.table import COMPARISON_FINDINGS, DIAGNOSIS_FINDINGS
from traceview.analyzers.layers import layers_markdown
from traceview.collectors.capture import capture
from traceview.kinds import kinds_markdown
from traceview.role_passes import passes_markdown
from traceview.roles import roles_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOC = DOCS / "attribution.md"
BLOCKS = {"roles": roles_markdown, "passes": passes_markdown, "layers": layers_markdown}
SCHEMA_DOC = DOCS / "schema.md"
SCHEMA_BLOCKS = {"kinds": kinds_markdown}
API_DOC = DOCS / "api.md"
FINDINGS_DOC = DOCS / "findings.md"
FINDINGS_BLOCKS = {"findings": lambda: findings_markdown(DIAGNOSIS_FINDINGS),
                   "comparison-findings": lambda: findings_markdown(COMPARISON_FINDINGS)}


# The public library, in the order the reference lists it.
API_FUNCTIONS: tuple[Callable[..., Any], ...] = (api.load, api.diagnose, api.compare, api.whatif, api.export,
                                                 api.write_parquet, api.query, api.render, capture,
                                                 profile_schedule.schedule)
RESULT_TYPES: tuple[type, ...] = (
    results.Diagnosis, results.FolderDiagnosis, results.Comparison, results.Finding, results.BucketDelta,
    results.ColdStart, results.Steps, results.Attribution, results.AttributionOptions, results.LaunchStats,
    results.Quality, results.CommOverlap, results.MemoryUse, results.MultiRank, results.WhatIf, results.LeftOut,
    results.Export, parquet.ParquetFiles,
)
ERRORS: tuple[type, ...] = (errors.TraceviewError, errors.InputError, errors.FormatError, errors.UsageError,
                            errors.QualityError, errors.RegressionError, errors.PartialReport,
                            errors.MissingExtraError)


def _cell(text: str) -> str:
    """Text inside a markdown table cell: a type's ``|`` must not end the cell."""
    return text.replace("|", "\\|")


def _signature(function: Callable[..., Any]) -> str:
    """``traceview.name(arg, *, option=default) -> Result`` with the annotations as written."""
    parts: list[str] = []
    star = False
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = parameter.name + (f": {parameter.annotation}" if parameter.annotation is not parameter.empty else "")
        if parameter.default is not parameter.empty:
            text += f" = {parameter.default!r}"
        parts.append(text)
    returns = inspect.signature(function).return_annotation
    return f"traceview.{function.__name__}({', '.join(parts)}) -> {returns}"


def _field_comments(cls: type) -> dict[str, str]:
    """What the source says about each field of a dataclass: the comment lines right above it, the
    comment after it, and the lines that continue that comment (indented to its column)."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, tuple[int, str]] = {}  # line -> (column of #, text)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = (token.start[1], token.string.lstrip("#").strip())
    lines = source.splitlines()

    def comment_only(line: int) -> bool:
        return line in comments and lines[line - 1].strip().startswith("#")

    out: dict[str, str] = {}
    for node in getattr(ast.parse(source).body[0], "body", []):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above: list[str] = []
        line = node.lineno - 1
        while comment_only(line) and comments[line][0] == node.col_offset:
            above.insert(0, comments[line][1])
            line -= 1
        after: list[str] = []
        if node.lineno in comments and not comment_only(node.lineno):
            column = comments[node.lineno][0]
            after.append(comments[node.lineno][1])
            line = (node.end_lineno or node.lineno) + 1
            while comment_only(line) and comments[line][0] == column:
                after.append(comments[line][1])
                line += 1
        out[node.target.id] = " ".join(above + after)
    return out


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _members(cls: type) -> list[str]:
    """Properties and public methods a result type defines itself, with their first doc line."""
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            out.append(f"- `{name}` (property): {_first_line(member)}".rstrip(": "))
        elif inspect.isfunction(member) or isinstance(member, classmethod):
            function = member.__func__ if isinstance(member, classmethod) else member
            params = ", ".join(p for p in inspect.signature(function).parameters if p not in ("self", "cls"))
            out.append(f"- `{name}({params})`: {_first_line(function)}".rstrip(": "))
    return out


def api_markdown() -> str:
    """The library reference: each public function's signature and docstring, each result type's
    fields (with the comment that explains each), properties and methods, and the errors."""
    lines = ["## Functions", ""]
    for function in API_FUNCTIONS:
        lines += [f"### `traceview.{function.__name__}`", "", "```python", _signature(function), "```", "",
                  inspect.getdoc(function) or "", ""]
    lines += ["## Result types", "",
              "In `traceview.results` (and importable from `traceview`). Frozen dataclasses: change a copy with "
              "`dataclasses.replace`.", ""]
    for cls in RESULT_TYPES:
        lines += [f"### `{cls.__name__}`", ""]
        if cls.__module__ != results.__name__:  # (the section's types are in traceview.results but these)
            lines += [f"In `{cls.__module__}`.", ""]
        lines += [inspect.getdoc(cls) or "", ""]
        comments = _field_comments(cls)
        lines += ["| field | type | meaning |", "| :--- | :--- | :--- |"]
        lines += [f"| `{f.name}` | `{_cell(str(f.type))}` | {_cell(comments.get(f.name, ''))} |"
                  for f in dataclasses.fields(cls)]
        members = _members(cls)
        lines += [""] + members if members else []
        lines.append("")
    lines += ["## Tables", "",
              "In `traceview.table`: the event table (`Timeline.table`) and a diagnosis's tables are named numpy "
              "columns; `to_pandas()` gives a pandas DataFrame.", ""]
    for cls in (table.Table, table.Labels):
        lines += [f"### `{cls.__name__}`", "", inspect.getdoc(cls) or "", ""] + _members(cls) + [""]
    lines += ["## Errors", "", "In `traceview.errors`. The command line prints `traceview: <message>` and exits "
              "with `exit_code`.", "", "| error | exit code | when |", "| :--- | ---: | :--- |"]
    lines += [f"| `{e.__name__}` | {e.exit_code if issubclass(e, errors.TraceviewError) else ''} | "
              f"{_cell(_first_line(e))} |" for e in ERRORS]
    return "\n".join(lines) + "\n"


API_BLOCKS = {"api": api_markdown}


def render(text: str, blocks: dict = BLOCKS) -> str:
    for name, make in blocks.items():
        pattern = re.compile(rf"(<!-- {name}:begin[^\n]*-->\n).*?(<!-- {name}:end -->)", re.S)
        text, count = pattern.subn(lambda m: m.group(1) + make() + m.group(2), text)
        if count != 1:
            raise SystemExit(f"no '{name}' block markers")
    return text


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    SCHEMA_DOC.write_text(render(SCHEMA_DOC.read_text(encoding="utf-8"), SCHEMA_BLOCKS), encoding="utf-8")
    API_DOC.write_text(render(API_DOC.read_text(encoding="utf-8"), API_BLOCKS), encoding="utf-8")
    FINDINGS_DOC.write_text(render(FINDINGS_DOC.read_text(encoding="utf-8"), FINDINGS_BLOCKS), encoding="utf-8")
