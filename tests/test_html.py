"""``--format html``: a self-contained page with a timeline picture, names escaped, bytes stable."""

from __future__ import annotations

import dataclasses
import html
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO, TORCH_GPU_TRACES, XPLANE_GPU_TRACES, cached_diagnosis, sample_kineto_traces, \
    sample_xplane_traces, shared_trace
from tests.test_export import EVIL_NAME, write_cpu_trace
from traceview.renderers import registry
from traceview.renderers import html_report as html_renderer
from traceview.renderers.html_base import BUCKET_COLOR
from traceview.renderers.html_timeline import EVENT_GROUPS, representative_step
from traceview.text import fmt_count

RESNET = "torch_gpu/resnet_v100_1rank.pt.trace.json.gz"
KERNEL_COLOR = dict((key, color) for key, _, color, _ in EVENT_GROUPS)["kernel"]
SCRIPT = REPO / "scripts" / "screenshot_html.py"


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory):
    return write_cpu_trace(tmp_path_factory.mktemp("cpu-html"))


def _timeline(page: str) -> str:
    match = re.search(r'<svg class="timeline".*?</svg>', page, flags=re.S)
    assert match, "the page has a timeline picture"
    return match.group(0)


def _self_contained(page: str) -> None:
    """No scripts, and nothing loaded from elsewhere (tags are checked, escaped text is not markup)."""
    tags = re.findall(r"<[a-zA-Z][^>]*>", page)
    for tag in tags:
        assert not re.search(r"\shref=\"(?!#)", tag), tag
        bare = re.sub(r'"[^"]*"', '""', tag)  # attribute values are escaped text, not markup
        name = bare[1:].split()[0].rstrip(">").lower()
        assert name not in ("script", "link", "img", "iframe", "object", "embed"), tag
        assert not re.search(r"\s(src|on\w+)=", bare, flags=re.I), tag
    style = re.search(r"<style>(.*?)</style>", page, flags=re.S)
    assert style and "url(" not in style.group(1) and "@import" not in style.group(1)


def test_html_is_a_registered_format():
    assert "html" in registry.names()
    assert registry.get("html").extension == ".html"
    assert registry.by_extension(".html") is registry.get("html")


def test_gpu_report_has_every_section_and_a_timeline_with_kernels():
    diag = cached_diagnosis(shared_trace(RESNET))
    page = html_renderer.render([diag])
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    _self_contained(page)
    for heading in ("Steady-state step", "Timeline of step #", "Per step", "Top kernels", "Top framework ops",
                    "Launch / dispatch", "Findings"):
        assert heading in page, heading
    svg = _timeline(page)
    assert f'fill="{KERNEL_COLOR}"' in svg, "kernels are drawn"
    assert f'fill="{BUCKET_COLOR["launch_overhead"]}"' in svg
    assert ">GPU 0 stream 7<" in svg and ">host 1102/1102 (pt_main_thread)<" in svg
    assert ">attribution<" in svg
    assert "ms</text>" in svg, "a time axis in ms"
    pos = representative_step(diag)
    number = int(diag.steps.table["number"][pos])
    assert f"Timeline of step #{number} " in page
    # Facts of the header: devices, format, and every drop reason with its count.
    meta = diag.timeline.meta
    assert meta.devices and all(html.escape(d.name) in page for d in meta.devices)
    assert html.escape(meta.format) in page and html.escape(meta.host_name) in page
    for reason, count in meta.dropped.items():
        assert html.escape(f"{reason}: {fmt_count(count)}") in page


def test_representative_step_is_the_steady_step_closest_to_the_median():
    diag = cached_diagnosis(shared_trace(RESNET))
    pos = representative_step(diag)
    steady = diag.steady_positions
    durations = diag.steps.table["duration"]
    assert pos in steady
    median = np.median(durations[steady])
    assert abs(durations[pos] - median) == min(abs(durations[steady] - median))


@pytest.mark.parametrize("path", TORCH_GPU_TRACES + XPLANE_GPU_TRACES + sample_kineto_traces() + sample_xplane_traces(),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_trace_renders_small(path):
    page = html_renderer.render([cached_diagnosis(path)])
    _self_contained(page)
    svg = _timeline(page)
    # The timeline is capped: sub-pixel events are merged into columns, so even the largest trace stays small.
    assert svg.count("<rect") < 15_000
    assert len(page) < 2_000_000


def test_cpu_trace_renders_with_leaf_ops_and_escapes_names(cpu_trace):
    diag = cached_diagnosis(cpu_trace)
    assert not diag.timeline.has_device
    page = html_renderer.render([diag])
    _self_contained(page)
    assert "Top compute ops" in page
    svg = _timeline(page)
    assert ">host 4242/4242 (python3)<" in svg
    leaf = dict((key, color) for key, _, color, _ in EVENT_GROUPS)["leaf"]
    assert f'fill="{leaf}"' in svg, "CPU leaf compute ops are drawn in the compute colour"
    assert EVIL_NAME not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<script" not in page.lower()


def test_names_from_a_gpu_trace_are_escaped():
    diag = cached_diagnosis(shared_trace(RESNET))
    kernels, ops = diag.kernels.copy(), diag.ops.copy()
    for table, name in ((kernels, EVIL_NAME), (ops, "a & b <img src=x onerror=alert(1)>")):
        names = table["name"].copy()
        names[0] = name
        table["name"] = names
    page = html_renderer.render([dataclasses.replace(diag, kernels=kernels, ops=ops)])
    assert EVIL_NAME not in page and "<img" not in page
    assert "&lt;script&gt;" in page and "a &amp; b &lt;img" in page
    _self_contained(page)


def test_output_is_deterministic(tmp_path, cpu_trace):
    diag = cached_diagnosis(shared_trace(RESNET))
    assert html_renderer.render([diag]) == html_renderer.render([diag])
    outs = []
    for name in ("a.html", "b.html"):
        out = tmp_path / name
        result = subprocess.run([sys.executable, "-m", "traceview", "diagnose", str(cpu_trace), "-f", "html", "-o",
                                 str(out)], capture_output=True, text=True, cwd=REPO,
                                env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
        assert result.returncode == 0, result.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_several_traces_get_an_index_and_one_section_each(cpu_trace):
    a = cached_diagnosis(shared_trace(RESNET))
    b = cached_diagnosis(cpu_trace)
    page = html_renderer.render([a, b])
    assert page.count('<section id="trace-') == 2
    assert '<a href="#trace-1">' in page and '<a href="#trace-2">' in page
    _self_contained(page)
    assert page.count('<svg class="timeline"') == 2


def test_screenshot_script_writes_a_png(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import screenshot_html
    finally:
        sys.path.pop(0)
    if screenshot_html.find_browser() is None:
        pytest.skip("no chromium/chrome on PATH (apt-get install -y chromium)")
    report = tmp_path / "report.html"
    report.write_text(html_renderer.render([cached_diagnosis(shared_trace(RESNET))]), encoding="utf-8")
    png = tmp_path / "report.png"
    result = subprocess.run([sys.executable, str(SCRIPT), str(report), str(png), "--height", "900"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000


def test_compare_renders_as_one_html_page_with_both_timelines():
    import subprocess
    import sys

    from tests.conftest import REPO, SAMPLES

    a, b = SAMPLES / "mlp2" / "torch-eager", SAMPLES / "mlp2" / "tf-eager"
    if not (a.is_dir() and b.is_dir()):
        pytest.skip("sample traces not present")
    result = subprocess.run([sys.executable, "-m", "traceview", "compare", str(a), str(b), "--format", "html"],
                            capture_output=True, text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"}, timeout=300)
    assert result.returncode == 0, result.stderr
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>")
    assert "slower</strong>" in page and "Op families per steady step" in page
    assert page.count("Timeline of step") == 2
