"""docs/architecture.md names the places to edit: every file and name it gives exists, and its
layer picture names the layers the import test enforces."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_imports import LAYERS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _source() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for folder in ("traceview", "tests")
                     for p in sorted((ROOT / folder).rglob("*.py")))


def test_every_file_the_architecture_names_exists():
    text = DOC.read_text(encoding="utf-8")
    files = set(re.findall(r"`([\w/]+\.py)`", text))
    assert len(files) >= 15
    missing = [f for f in sorted(files)
               if not any((base / f).is_file() for base in (ROOT, ROOT / "traceview", ROOT / "tests"))]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_every_table_and_function_the_architecture_names_exists():
    text = DOC.read_text(encoding="utf-8")
    names = set(re.findall(r"`([A-Z][A-Z_]+)`", text)) | {"found", "skipped", "sniff", "read"}
    source = _source()
    missing = [n for n in sorted(names) if not re.search(rf"\b(def |class )?{n}\b\s*[:=(]", source)]
    assert not missing, f"docs/architecture.md names what the code does not define: {missing}"


def test_the_picture_names_every_layer():
    text = DOC.read_text(encoding="utf-8")
    picture = text[text.index("```"):text.index("```", text.index("```") + 3)]
    assert all(re.search(rf"\b{layer}\b", picture) for layer in LAYERS if layer != "collectors"), picture
    assert "collectors/" in text
