"""The HTML report's timeline picture of a representative step (inline SVG).

The steady step whose duration is closest to the median: one row per host thread (one sub-row
per nesting level) and per device stream, events coloured by kind, and on top the attribution of
that step (the segments of ``Attribution.segments``, as the ``traceview: attribution`` track of
``traceview export`` shows them). To keep huge steps small, events narrower than a few pixels are
not drawn one by one: each row is rasterized into half-pixel columns, a column takes the colour
of the kind that covers most of it, and its opacity says how much of it is covered; runs of equal
columns become one rectangle. Wide events are drawn exactly, with their name as a tooltip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from traceview.normalize import leaf_compute_ops
from traceview.renderers.html_base import BUCKET_COLOR, coordinate, esc, swatch, text_color
from traceview.results import BUCKETS, Diagnosis
from traceview.roles import Role
from traceview.schema import Kind
from traceview.text import BUCKET_LABEL, fmt_ns, shorten

# Event groups drawn on the timeline: (key, legend label, colour, kinds). The colour is the one
# of the bucket the kind usually lands in; framework ops and Python get their own pale tones so
# the launch calls under them stand out.
EVENT_GROUPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("kernel", "kernel", BUCKET_COLOR["kernel"], (Kind.KERNEL.value,)),
    ("communication", "communication kernel", BUCKET_COLOR["communication"], ()),  # role device_communication
    ("leaf", "compute op (CPU leaf op)", "#69db7c", ()),  # CPU-only traces: host ops counted as kernel time
    ("memcpy", "memcpy / memset", BUCKET_COLOR["memcpy"], (Kind.MEMCPY.value, Kind.MEMSET.value)),
    ("launch", "launch call", BUCKET_COLOR["launch_overhead"], (Kind.LAUNCH.value,)),
    ("runtime", "other runtime call", "#ffd43b", (Kind.RUNTIME.value,)),
    ("sync", "sync wait", BUCKET_COLOR["sync_wait"], (Kind.SYNC.value, Kind.DEVICE_SYNC.value)),
    ("graph_build", "graph build / compile", BUCKET_COLOR["graph_build"], (Kind.GRAPH_BUILD.value,
                                                                           Kind.COMPILE.value)),
    ("input", "input pipeline", BUCKET_COLOR["input"], (Kind.INPUT.value,)),
    ("host_op", "framework op", "#ffc9a9", (Kind.HOST_OP.value,)),
    ("python", "python", "#d0bfff", (Kind.PYTHON.value,)),
    ("annotation", "annotation / step marker", "#ced4da", (Kind.ANNOTATION.value, Kind.STEP.value)),
)
_GROUP_INDEX = {key: i for i, (key, _, _, _) in enumerate(EVENT_GROUPS)}
_KIND_GROUP = {kind: _GROUP_INDEX[key] for key, _, _, kinds in EVENT_GROUPS for kind in kinds}

# Timeline geometry (px).
SVG_WIDTH = 1200
LABEL_WIDTH = 250
PLOT_WIDTH = SVG_WIDTH - LABEL_WIDTH - 12
RESOLUTION = 0.5  # raster column width
WIDE_PX = 3.0  # events at least this wide are drawn one by one
MAX_WIDE_PER_LEVEL = 400
MAX_LEVELS = 8  # host nesting levels drawn per thread (deeper ones share the last)
LEVEL_HEIGHT = 10
DEVICE_ROW_HEIGHT = 24
ATTRIBUTION_ROW_HEIGHT = 24
ROW_GAP = 5
AXIS_HEIGHT = 26
TEXT_MIN_PX = 70  # wide rects at least this wide get their name written inside
CHAR_PX = 6.2


def representative_step(diag: Diagnosis) -> int:
    """Position of the steady step whose duration is closest to the median (earliest on ties)."""
    positions = diag.steady_positions
    if not len(positions):
        return 0
    durations = diag.steps.table["duration"][positions].astype(np.float64)
    median = float(np.median(durations))
    return int(positions[int(np.argmin(np.abs(durations - median)))])


def timeline_block(diag: Diagnosis) -> str:
    table = diag.steps.table
    if not len(table):
        return ""
    pos = representative_step(diag)
    row = table.take([pos]).records()[0]
    svg, groups_used = timeline_svg(diag, pos)
    legend_events = "".join(
        f"<span>{swatch(EVENT_GROUPS[g][2])}{esc(EVENT_GROUPS[g][1])}</span>" for g in sorted(groups_used)
    )
    legend_buckets = "".join(f"<span>{swatch(BUCKET_COLOR[b])}{esc(BUCKET_LABEL[b])}</span>" for b in diag.buckets)
    return (
        f"<h3>Timeline of step #{esc(row['number'])} ({esc(fmt_ns(row['duration']))})</h3>"
        f'<p class="sub">the steady step closest to the median; top row: what each stretch of the step is '
        f"attributed to; below: one row per host thread (a sub-row per nesting level) and per device stream. "
        f"Faded columns are only partly covered by events too short to draw one by one.</p>"
        + svg
        + f'<div class="legend"><b>events</b>{legend_events}</div>'
        + f'<div class="legend"><b>attribution</b>{legend_buckets}</div>'
    )


def _event_groups(diag: Diagnosis) -> np.ndarray:
    """Colour group of every event (-1: not drawn)."""
    ev = diag.timeline.table
    kind = ev["kind"]
    lookup = np.array([_KIND_GROUP.get(k, -1) for k in kind.categories.tolist()] + [-1], dtype=np.int64)
    groups = lookup[kind.codes] if len(kind) else np.array([], dtype=np.int64)
    if not diag.timeline.has_device and len(kind):
        host_op = kind.isin([Kind.HOST_OP.value]) & (ev["device"] < 0)
        groups = np.where(leaf_compute_ops(ev, host_op), _GROUP_INDEX["leaf"], groups)
    communication = ev["role"].isin([Role.DEVICE_COMMUNICATION.value])
    return np.where(communication, _GROUP_INDEX["communication"], groups)


def timeline_svg(diag: Diagnosis, position: int) -> tuple[str, set[int]]:
    """The SVG picture of one step window, and the event groups it shows (for the legend)."""
    ev = diag.timeline.table
    table = diag.steps.table
    start = int(table["start"][position])
    end = int(table["end"][position])
    span = max(end - start, 1)
    scale = PLOT_WIDTH / span
    ts = ev["ts"].astype(np.int64)
    te = ts + ev["dur"].astype(np.int64)
    groups = _event_groups(diag)
    inside = (ts < end) & ((te > start) | ((te == ts) & (ts >= start))) & (groups >= 0)
    rows_idx = np.flatnonzero(inside)
    x0 = (np.clip(ts[rows_idx], start, end) - start) * scale
    x1 = (np.clip(te[rows_idx], start, end) - start) * scale
    grp = groups[rows_idx]
    names = ev["name"].at(rows_idx)
    durs = (te - ts)[rows_idx]
    tracks = ev["track"].at(rows_idx)
    device = ev["device"][rows_idx]
    depth = ev["depth"][rows_idx]

    # Rows: host threads first (by pid, tid), then device streams (by device, stream).
    key_a = np.where(device >= 0, device, ev["pid"][rows_idx])
    key_b = np.where(device >= 0, ev["stream"][rows_idx], ev["tid"][rows_idx])
    track_keys: dict[str, tuple[int, int, int, str]] = {}
    for t, d, a, b in zip(tracks.tolist(), device.tolist(), key_a.tolist(), key_b.tolist()):
        if t not in track_keys:
            track_keys[t] = (int(d >= 0), int(a), int(b), str(t))
    ordered = sorted(track_keys, key=lambda t: track_keys[t])

    colors = [g[2] for g in EVENT_GROUPS]
    body: list[str] = []
    y = 6.0
    # Attribution row.
    segments = diag.attribution.segments
    segments = segments.take(segments["step"] == position)
    s0 = (segments["start"] - start) * scale
    s1 = (segments["end"] - start) * scale
    sb = segments["bucket"].codes.astype(np.int64)  # (codes into BUCKETS)
    seg_names = [BUCKET_LABEL[BUCKETS[code]] for code in sb.tolist()]
    seg_durs = (segments["end"] - segments["start"])
    body.append(_row_label("attribution", y, ATTRIBUTION_ROW_HEIGHT, bold=True))
    body.extend(_draw_level(s0, s1, sb, seg_names, seg_durs, [BUCKET_COLOR[b] for b in BUCKETS], y,
                            ATTRIBUTION_ROW_HEIGHT, text_colors=[text_color(BUCKET_COLOR[b]) for b in BUCKETS]))
    y += ATTRIBUTION_ROW_HEIGHT + ROW_GAP + 2
    body.append(f'<line x1="0" x2="{SVG_WIDTH}" y1="{coordinate(y - ROW_GAP / 2 - 1)}" y2="{coordinate(y - ROW_GAP / 2 - 1)}" '
                f'stroke="#adb5bd" stroke-width="1"/>')
    used: set[int] = set()
    for t in ordered:
        sel = np.flatnonzero(tracks == t)
        is_device = track_keys[t][0] == 1
        if is_device:
            levels = np.zeros(len(sel), dtype=np.int64)
            n_levels, height = 1, DEVICE_ROW_HEIGHT
        else:
            levels = np.clip(depth[sel].astype(np.int64), 0, MAX_LEVELS - 1)
            n_levels = int(levels.max()) + 1 if len(levels) else 1
            height = LEVEL_HEIGHT
        row_height = n_levels * height
        body.append(f'<rect x="0" y="{coordinate(y - 2)}" width="{SVG_WIDTH}" height="{coordinate(row_height + 4)}" '
                    f'fill="{"#f8f9fa" if is_device else "#ffffff"}"/>')
        body.append(_row_label(str(t), y, min(row_height, 18)))
        for level in range(n_levels):
            part = sel[levels == level]
            if not len(part):
                continue
            used.update(int(g) for g in np.unique(grp[part]))
            body.extend(_draw_level(x0[part], x1[part], grp[part], names[part], durs[part], colors,
                                    y + level * height, height - 1, text_colors=[text_color(c) for c in colors]))
        y += row_height + ROW_GAP
        body.append(f'<line x1="0" x2="{SVG_WIDTH}" y1="{coordinate(y - ROW_GAP / 2)}" y2="{coordinate(y - ROW_GAP / 2)}" '
                    f'stroke="#e9ecef" stroke-width="1"/>')
    plot_bottom = y
    axis = _axis(span, plot_bottom)
    height = plot_bottom + AXIS_HEIGHT
    svg = (f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SVG_WIDTH} {coordinate(height)}" '
           f'width="{SVG_WIDTH}" height="{coordinate(height)}" role="img" aria-label="timeline of one step">'
           + "".join(axis[0]) + "".join(body) + "".join(axis[1]) + "</svg>")
    return svg, used


def _row_label(text: str, y: float, height: float, bold: bool = False) -> str:
    label = shorten(text, 40)
    weight = ' font-weight="600"' if bold else ""
    return (f'<text x="6" y="{coordinate(y + min(height, 18) / 2 + 4)}" font-size="11"{weight} fill="#343a40">'
            f"<title>{esc(text)}</title>{esc(label)}</text>")


def _draw_level(x0: np.ndarray, x1: np.ndarray, group: np.ndarray, names: Sequence[Any], durs: np.ndarray,
                colors: Sequence[str], y: float, height: float, text_colors: Sequence[str]) -> list[str]:
    """Rects for one row level: all events rasterized into columns, wide ones also drawn one by one."""
    out: list[str] = []
    widths = x1 - x0
    wide = np.flatnonzero(widths >= WIDE_PX)
    if len(wide) > MAX_WIDE_PER_LEVEL:
        keep = np.argsort(-widths[wide], kind="stable")[:MAX_WIDE_PER_LEVEL]
        wide = np.sort(wide[keep])
    # Everything is rasterized (so column opacities are right at the edges of wide events); wide
    # events are then drawn on top, exactly, with a tooltip.
    out.extend(_raster(x0, x1, group, colors, y, height))
    ox = LABEL_WIDTH
    for i in wide.tolist():
        g = int(group[i])
        tip = f"{names[i]} · {fmt_ns(durs[i])}"
        rect = (f'<rect x="{coordinate(ox + x0[i])}" y="{coordinate(y)}" width="{coordinate(widths[i])}" height="{coordinate(height)}" '
                f'fill="{colors[g]}"><title>{esc(tip)}</title></rect>')
        out.append(rect)
        if widths[i] >= TEXT_MIN_PX and height >= 12:
            chars = int((widths[i] - 6) / CHAR_PX)
            label = shorten(str(names[i]), max(chars, 4))
            out.append(f'<text x="{coordinate(ox + x0[i] + 3)}" y="{coordinate(y + height / 2 + 4)}" font-size="10.5" '
                       f'fill="{text_colors[g]}" pointer-events="none">{esc(label)}</text>')
    return out


def _raster(x0: np.ndarray, x1: np.ndarray, group: np.ndarray, colors: Sequence[str], y: float,
            height: float) -> list[str]:
    """Columns of RESOLUTION px: the colour covering most of each, opacity = covered share; runs merged."""
    if not len(x0):
        return []
    n_cols = int(math.ceil(PLOT_WIDTH / RESOLUTION))
    grid = np.arange(n_cols + 1, dtype=np.float64) * RESOLUTION
    n_groups = len(colors)
    coverage = np.zeros((n_groups, n_cols), dtype=np.float64)
    for g in np.unique(group).tolist():
        mask = group == g
        a = np.sort(x0[mask])
        b = np.sort(x1[mask])
        coverage[g] = np.diff(_covered_upto(a, grid) - _covered_upto(b, grid))
    total = np.minimum(coverage.sum(axis=0) / RESOLUTION, 1.0)
    best = coverage.argmax(axis=0)
    # Opacity in quarters so neighbouring columns merge; anything covered shows at least faintly.
    level = np.where(total > 0, np.maximum(np.ceil(total * 4 - 1e-9), 1), 0).astype(np.int64)
    code = np.where(level > 0, best * 8 + level, -1)
    out: list[str] = []
    change = np.flatnonzero(np.diff(code)) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [n_cols]))
    for s, e in zip(starts.tolist(), ends.tolist()):
        c = int(code[s])
        if c < 0:
            continue
        g, lvl = divmod(c, 8)
        opacity = "" if lvl == 4 else f' fill-opacity="{lvl / 4:g}"'
        out.append(f'<rect x="{coordinate(LABEL_WIDTH + s * RESOLUTION)}" y="{coordinate(y)}" width="{coordinate((e - s) * RESOLUTION)}" '
                   f'height="{coordinate(height)}" fill="{colors[g]}"{opacity} shape-rendering="crispEdges"/>')
    return out


def _covered_upto(sorted_points: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """For each grid value g: Σ max(0, g − p) over the points (a piecewise-linear running sum)."""
    count = np.searchsorted(sorted_points, grid, side="left")
    prefix = np.concatenate(([0.0], np.cumsum(sorted_points)))
    return count * grid - prefix[count]


def _axis(span: int, bottom: float) -> tuple[list[str], list[str]]:
    """Grid lines (drawn under the rows) and tick labels (drawn at the bottom)."""
    step = _nice_step(span / 8)
    unit, unit_name = next((u, name) for u, name in ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))
                           if step >= u)
    grid: list[str] = []
    labels: list[str] = [f'<line x1="{LABEL_WIDTH}" x2="{LABEL_WIDTH + PLOT_WIDTH}" y1="{coordinate(bottom)}" '
                         f'y2="{coordinate(bottom)}" stroke="#495057" stroke-width="1"/>']
    scale = PLOT_WIDTH / span
    t = 0
    while t <= span:
        x = LABEL_WIDTH + t * scale
        grid.append(f'<line x1="{coordinate(x)}" x2="{coordinate(x)}" y1="2" y2="{coordinate(bottom)}" stroke="#e9ecef" stroke-width="1"/>')
        value = t / unit
        text = f"{value:g} {unit_name}" if t else "0"
        anchor = "start" if t == 0 else "middle"
        labels.append(f'<line x1="{coordinate(x)}" x2="{coordinate(x)}" y1="{coordinate(bottom)}" y2="{coordinate(bottom + 4)}" stroke="#495057"/>')
        labels.append(f'<text x="{coordinate(x)}" y="{coordinate(bottom + 16)}" font-size="11" text-anchor="{anchor}" '
                      f'fill="#495057">{esc(text)}</text>')
        t += step
    return grid, labels


def _nice_step(raw: float) -> int:
    """The 1-2-5 step (integer ns) at or above ``raw``."""
    if raw <= 1:
        return 1
    exponent = 10 ** int(math.floor(math.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * exponent >= raw:
            return int(m * exponent)
    return int(10 * exponent)
