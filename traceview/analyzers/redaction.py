"""A diagnosis as someone else may see it: paths, host names and user names replaced in
everything a report shows (the words: :mod:`traceview.redact`), and each finding's sentence
phrased anew from its redacted evidence."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from traceview.analyzers.findings.diagnosis import rephrased
from traceview.redact import host_field, redact_path, redact_text, secrets_of
from traceview.results import Diagnosis, LeftOut
from traceview.table import Labels, Table


def redact_diagnoses(diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    """Copies of the diagnoses with paths, host and user names replaced in everything a report
    shows (source, host, track and event names, step rule text, findings, the quality section's
    notes). The originals are left untouched; placeholders are shared across the list so a
    comparison stays consistent."""
    secrets = secrets_of(*(d.timeline.meta for d in diagnoses))

    def text(value: str) -> str:
        return redact_text(str(value), secrets)

    out = []
    for diag in diagnoses:
        meta = dataclasses.replace(
            diag.timeline.meta,
            source=redact_path(diag.timeline.meta.source, secrets),
            host_name=host_field(diag.timeline.meta.host_name, secrets) if diag.timeline.meta.host_name else "",
            notes=[text(n) for n in diag.timeline.meta.notes],
        )
        events = diag.timeline.table.copy()
        for column in ("name", "track", "launcher"):
            labels = events[column]
            events[column] = Labels(labels.codes, _unique_renames([text(c) for c in labels.categories.tolist()]))
        timeline = dataclasses.replace(diag.timeline, table=events, meta=meta)
        steps = dataclasses.replace(diag.steps, rule_detail=text(diag.steps.rule_detail))
        clone = dataclasses.replace(
            diag, timeline=timeline, steps=steps,
            kernels=_renamed(diag.kernels, text), ops=_renamed(diag.ops, text),
            # A finding's sentence is phrased from its evidence: the names in it (the top kernel) go.
            findings=tuple(rephrased(dataclasses.replace(f, evidence={k: text(v) if isinstance(v, str) else v
                                                                      for k, v in f.evidence.items()}))
                           for f in diag.findings),
            quality=dataclasses.replace(diag.quality, notes=tuple(text(n) for n in diag.quality.notes)),
            notes=tuple(text(n) for n in diag.notes))
        out.append(clone)
    return out


def redact_left_out(left_out: tuple[LeftOut, ...], diagnoses: list[Diagnosis]) -> tuple[LeftOut, ...]:
    """The folder's unreadable traces with their paths, host and user names replaced as in the
    ``diagnoses`` (the originals) beside them."""
    secrets = secrets_of(*(d.timeline.meta for d in diagnoses))
    return tuple(LeftOut(redact_path(item.source, secrets), redact_text(item.reason, secrets)) for item in left_out)


def _renamed(table: Table, text: Callable[[str], str]) -> Table:
    """A top table with its names redacted."""
    if not len(table):
        return table
    out = table.copy()
    names = np.empty(len(table), dtype=object)
    names[:] = [text(n) for n in table["name"].tolist()]
    out["name"] = names
    return out


def _unique_renames(names: list[str]) -> list[str]:
    """Redaction can make two category names equal; keep them distinct with a suffix."""
    taken = set(names)
    seen: dict[str, int] = {}
    result = []
    for name in names:
        count = seen.get(name, 0)
        seen[name] = count + 1
        if count == 0:
            result.append(name)
            continue
        renamed = f"{name} [{count + 1}]"
        while renamed in taken:  # a suffix that reads as another name already there: the next one
            count += 1
            renamed = f"{name} [{count + 1}]"
        seen[name] = count + 1
        taken.add(renamed)
        result.append(renamed)
    return result
