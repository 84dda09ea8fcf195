"""What every report must satisfy whatever the trace held; shared by the hostile corpus, the
property tests and the fuzz target.

- JSON (:func:`json_violations`): per trace, events kept + dropped = events in the file; per step,
  the buckets are non-negative integers that sum to the step's duration exactly; no finding's
  advice denies what another finding grades high.
- Text (:func:`text_violations`): every output encodes as UTF-8; no control character reaches
  the terminal, markdown or HTML output, and no trace-derived string that means something to the format appears verbatim (it
  would be markup, a link, a tag or a table cell boundary).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Every control character but tab and newline, and the Unicode bidirectional controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_MARKDOWN_ACTIVE = set("|`*_[]!<>&\n")
_HTML_ACTIVE = set("<>&\"'")


def json_violations(document: Any) -> list[str]:
    """Broken invariants of a ``--format json`` document (one trace or ``{"traces": [...]}``)."""
    if not isinstance(document, dict):
        return [f"report is a {type(document).__name__}, not an object"]
    traces = document["traces"] if "traces" in document else [document]
    out: list[str] = []
    for report in traces:
        trace, steps = report["trace"], report["steps"]
        where = str(trace.get("source"))[-60:]
        dropped = trace["dropped_by_reason"]
        kept_by_kind = trace["kept_by_kind"]
        counts = [trace["events_in_file"], trace["events_kept"], *dropped.values(), *kept_by_kind.values()]
        if any(type(c) is not int or c < 0 for c in counts):
            out.append(f"{where}: an event count is negative or not an integer: {counts}")
            continue
        if trace["events_kept"] + sum(dropped.values()) != trace["events_in_file"]:
            out.append(f"{where}: kept {trace['events_kept']} + dropped {sum(dropped.values())} != "
                       f"{trace['events_in_file']} events in the file")
        if sum(kept_by_kind.values()) != trace["events_kept"]:
            out.append(f"{where}: kept by kind {sum(kept_by_kind.values())} != kept {trace['events_kept']}")
        if steps["count"] != len(steps["table"]):
            out.append(f"{where}: step count {steps['count']} != {len(steps['table'])} rows")
        for step in steps["table"]:
            duration, buckets = step["duration_ns"], step["buckets_ns"]
            label = f"{where}: step {step['number']}"
            if type(duration) is not int or duration < 0:
                out.append(f"{label}: duration {duration!r} is not a non-negative integer")
                continue
            bad = {b: v for b, v in buckets.items() if type(v) is not int or v < 0}
            if bad:
                out.append(f"{label}: buckets not non-negative integers: {bad}")
            elif sum(buckets.values()) != duration:
                out.append(f"{label}: buckets sum to {sum(buckets.values())}, the step lasts {duration} "
                           f"({buckets})")
        findings = {f["rule"]: f for f in report.get("findings", [])}
        compute, launch = findings.get("compute_bound"), findings.get("launch_bound")
        if compute and launch and launch["grade"] == "high" and "overhead is not the bottleneck" in compute["advice"]:
            out.append(f"{where}: compute_bound says overhead is not the bottleneck beside a high launch_bound")
    return out


def text_violations(outputs: dict[str, str], hostile: Iterable[str] = ()) -> list[str]:
    """Trace text that shaped a text report. ``outputs``: format name (terminal, md, html) -> text;
    ``hostile``: strings from the trace that must not appear verbatim where they mean something."""
    out: list[str] = []
    for fmt, text in outputs.items():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            out.append(f"{fmt}: not encodable as UTF-8 ({err.reason} at {err.start}); writing it would fail")
        if fmt == "json":
            continue
        control = _CONTROL.search(text)
        if control:
            out.append(f"{fmt}: control character {control.group()!r} at {control.start()}: "
                       f"{text[max(0, control.start() - 30):control.start() + 10]!r}")
        for string in hostile:
            active = {"md": _MARKDOWN_ACTIVE, "html": _HTML_ACTIVE}.get(fmt, set("\x1b\x07"))
            if len(string) > 2 and set(string) & active and string in text:
                out.append(f"{fmt}: trace text {string!r} appears verbatim")
            head = string.split("\n")[0].rstrip("\r")
            if fmt != "html" and "\n" in string and len(head) > 2 and re.search(re.escape(head) + r"[ │|]*\n", text):
                out.append(f"{fmt}: trace text {string!r} breaks a line")
    return out
