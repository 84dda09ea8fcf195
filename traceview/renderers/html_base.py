"""What the HTML report's parts share: escaping, coordinates, the buckets' colours, swatches."""

from __future__ import annotations

import html
from typing import Any

from traceview.text import visible

# Bucket colours: the terminal's BUCKET_STYLE hues, tuned for a white page.
BUCKET_COLOR: dict[str, str] = {
    "kernel": "#2f9e44",
    "communication": "#66d9e8",
    "memcpy": "#1098ad",
    "graph_build": "#ae3ec9",
    "sync_wait": "#e03131",
    "launch_overhead": "#f59f00",
    "input": "#3b5bdb",
    "host_compute": "#868e96",
    "idle": "#dee2e6",
}


def esc(value: Any) -> str:
    """Text safe inside HTML content and attribute values (control characters dropped)."""
    return html.escape(visible(value), quote=True)


def coordinate(value: float) -> str:
    """A coordinate with at most two decimals and no trailing zeros (stable, compact)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def swatch(color: str, opacity: float = 1.0) -> str:
    """A small square of a colour, before a label."""
    style = f"background:{color}" + (f";opacity:{opacity}" if opacity < 1 else "")
    return f'<span class="swatch" style="{style}"></span>'



def text_color(color: str) -> str:
    """Dark text on a light fill, white on a dark one."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#212529" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"
