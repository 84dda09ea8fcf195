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


def test_the_table_says_which_reports_each_renderer_shows() -> None:
    # The command line reads the table, not the modules, for --format's help and completion.
    for function in (registry.DIAGNOSES, registry.COMPARISON, registry.WHATIF):
        shown = [name for name in registry.names() if getattr(registry.get(name), function) is not None]
        assert registry.names_rendering(function) == shown, function


def test_whatif_help_offers_only_the_formats_that_show_a_replay() -> None:
    from typer.testing import CliRunner

    from traceview.cli import app

    out = CliRunner().invoke(app, ["whatif", "--help"], env={"COLUMNS": "200"}).output
    assert "Output format: json, md, terminal." in out
    out = CliRunner().invoke(app, ["diagnose", "--help"], env={"COLUMNS": "200"}).output
    assert "Output format: html, json, md, terminal." in out


def test_writing_one_format_imports_no_other_renderer() -> None:
    probe = ("import sys; from traceview.renderers import registry; registry.renderer('json'); "
             "print(sorted(m for m in sys.modules if m.startswith('traceview.renderers.')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "json_report" in loaded
    for other in ("html_report", "markdown", "terminal"):
        assert f"traceview.renderers.{other}'" not in loaded
