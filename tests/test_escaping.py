"""No trace-derived string can change a report's structure: rich markup, ANSI / OSC escape
sequences, markdown links and images, HTML tags in op names and in the file name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

HOSTILE = ["[/]", "[bold red]boom[/bold red]", "[link=http://x]click[/link]", "evil\x1b[31mred\x1b[0m",
           "osc\x1b]8;;http://x\x07t", "[md](http://x) ![img](http://y) | cell", "<script>alert(1)</script>", "`tick`",
           "tab\tnew\nline"]


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    events = []
    t = 0
    for step in range(3):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": t, "dur": 2000})
        for i, name in enumerate(HOSTILE):
            events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t + 10 + i * 200,
                           "dur": 150})
        t += 2100
    path = tmp_path_factory.mktemp("hostile") / "[red]x`<b>.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _run(path: Path, fmt: str) -> str:
    result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(path), "--format", fmt, "--width", "120"],
                            capture_output=True, text=True, cwd=REPO, timeout=300,
                            env={"NO_COLOR": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_terminal_prints_trace_text_literally(hostile_trace: Path):
    out = _run(hostile_trace, "terminal")
    assert "\x1b" not in out and "\x07" not in out
    assert "[bold red]boom[/bold red]" in out and "[/]" in out and "[link=http://x]click[/link]" in out
    assert "[red]x" in out  # the file name too
    assert "tab\\tnew\\nline" in out  # newlines and tabs of a name written out: it stays on its line


def test_markdown_has_no_live_links_images_or_tags_from_the_trace(hostile_trace: Path):
    out = _run(hostile_trace, "md")
    assert "\x1b" not in out
    import re

    assert not re.search(r"(?<!\\)\[md(?<!\\)\]\(", out) and "![img]" not in out  # no unescaped link or image
    assert "<script>" not in out and "<b>" not in out
    assert "\\[md\\]" in out and "&lt;script&gt;" in out


def test_html_escapes_trace_text(hostile_trace: Path):
    out = _run(hostile_trace, "html")
    assert "<script>alert(1)</script>" not in out and "&lt;script&gt;" in out
    assert "\x1b" not in out
