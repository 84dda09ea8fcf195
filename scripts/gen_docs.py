"""Regenerate the tables in docs/ from the code (the kind and role rules, the attribution
layers); tests/test_attribution.py checks that the docs match.

    python scripts/gen_docs.py
"""

from __future__ import annotations

import re
from pathlib import Path

from traceview.analyzers.attribution import layers_markdown
from traceview.kinds import kinds_markdown
from traceview.roles import roles_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOC = DOCS / "attribution.md"
BLOCKS = {"roles": roles_markdown, "layers": layers_markdown}
SCHEMA_DOC = DOCS / "schema.md"
SCHEMA_BLOCKS = {"kinds": kinds_markdown}


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
