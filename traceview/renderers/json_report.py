"""``--format json``: a result's ``to_dict()`` as a stable, sorted, versioned JSON document (docs/json.md)."""

from __future__ import annotations

from typing import Any

import orjson

from traceview.renderers.base import Renderer
from traceview.text import encodable
from traceview.results import FolderDiagnosis


def dumps(document: Any) -> str:
    """Deterministic JSON: sorted keys, 2-space indent, trailing newline."""
    try:
        return _dumps(document)
    except orjson.JSONEncodeError:  # a file name that is not UTF-8: its bytes as \xNN, then JSON
        return _dumps(_encodable(document))


def _dumps(document: Any) -> str:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(v) for v in value]
    return value


def render(diagnoses: list[Any], comparisons: list[Any] | None = None, multi_rank: list[Any] | None = None,
           left_out: list[Any] | None = None, **_: Any) -> str:
    if len(diagnoses) == 1 and not left_out:
        return dumps(diagnoses[0].to_dict())
    return dumps(FolderDiagnosis(tuple(diagnoses), tuple(comparisons or ()), tuple(multi_rank or ()),
                                 tuple(left_out or ())).to_dict())


def render_comparison(comparison: Any, **_: Any) -> str:
    return dumps(comparison.to_dict())


def render_whatif(result: Any, **_: Any) -> str:
    return dumps(result.to_dict())


RENDERER = Renderer(name="json", extension=".json", render_diagnoses=render,
                    description="machine-readable report (documented keys)", render_comparison=render_comparison,
                    render_whatif=render_whatif)
