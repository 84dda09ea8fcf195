"""The format table of renderers/registry.py agrees with each renderer, and a run imports only the
renderer it writes."""

from __future__ import annotations

import subprocess
import sys

from traceview.renderers import registry


def test_each_format_names_its_renderer() -> None:
    for name in registry.names():
        chosen = registry.get(name)
        assert chosen.name == name
        assert registry.by_extension(chosen.extension) is chosen


def test_writing_one_format_imports_no_other_renderer() -> None:
    probe = ("import sys; from traceview.renderers import registry; registry.renderer('json'); "
             "print(sorted(m for m in sys.modules if m.startswith('traceview.renderers.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "json_report" in loaded
    for other in ("html_report", "markdown", "terminal"):
        assert f"traceview.renderers.{other}'" not in loaded
