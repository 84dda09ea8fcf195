"""XPlane stats as columns: for each stat the reader keeps, the rows that carry it and the values.

A TensorFlow eager trace carries a stat on every op event (``eager_op``): 640,000 of them in a
100 MB trace. Held as a dict per stat ({row: value}) they cost a Python entry each and a Python
loop to fill; held as (rows, values) arrays they are gathered line by line with array
operations, and each rule asks for them as a column.

Which value a row gets follows the protobuf reading of the reader: an event's own stat wins over
its metadata's stat of the same name; of two stats of one name on one event, the later one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np


@dataclass
class StatColumn:
    """One stat over the plane walk's rows: the rows that carry it (ascending, each once) and the
    value at each, as the protobuf runtime gives it (int, float, str, bytes; a ref as its name)."""

    rows: np.ndarray  # int64
    values: np.ndarray  # object

    def __len__(self) -> int:
        return len(self.rows)

    def items(self) -> Iterator[tuple[int, Any]]:
        return zip(self.rows.tolist(), self.values.tolist())

    def at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``rows`` whose row carries the stat, the values there)."""
        if not len(self.rows) or not len(rows):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
        pos = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
        hit = np.flatnonzero(self.rows[pos] == rows)
        return hit, self.values[pos[hit]]

    def mask(self, n: int) -> np.ndarray:
        """Whether each of ``n`` rows carries the stat."""
        out = np.zeros(n, dtype=bool)
        out[self.rows] = True
        return out


def empty_column() -> StatColumn:
    return StatColumn(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object))


@dataclass
class StatGatherer:
    """Stat columns built line by line (lines come in row order, so rows stay ascending)."""

    names: frozenset[str]
    parts: dict[str, list[StatColumn]] = field(default_factory=dict)

    def add_line(self, base: int, metadata_id: np.ndarray, event_stats: dict[str, StatColumn],
                 metadata_stats: dict[str, StatColumn]) -> None:
        """One line's stats: ``event_stats`` by event position in the line; ``metadata_stats`` by
        event-metadata id (``rows`` holding the ids), applying to every event of that metadata
        that has no stat of the name itself."""
        for name in self.names:
            own = event_stats.get(name)
            by_metadata = metadata_stats.get(name)
            if by_metadata is not None and len(by_metadata):
                inherited = _inherited(metadata_id, by_metadata, own)
                own = inherited if own is None else _merged(own, inherited)
            if own is not None and len(own):
                self.parts.setdefault(name, []).append(StatColumn(own.rows + base, own.values))

    def columns(self) -> dict[str, StatColumn]:
        out = {}
        for name in self.names:
            parts = self.parts.get(name)
            out[name] = (StatColumn(np.concatenate([p.rows for p in parts]), np.concatenate([p.values for p in parts]))
                         if parts else empty_column())
        return out


def last_per_row(positions: np.ndarray, values: np.ndarray) -> StatColumn:
    """Records of one stat in event order (an event's records in the order written): the last one
    of each event, as the runtime's reading keeps it."""
    if len(positions) > 1:
        last = np.ones(len(positions), dtype=bool)
        last[:-1] = positions[1:] != positions[:-1]
        if not last.all():
            positions, values = positions[last], values[last]
    return StatColumn(positions.astype(np.int64, copy=False), values)


def _inherited(metadata_id: np.ndarray, by_metadata: StatColumn, own: StatColumn | None) -> StatColumn:
    """The metadata stat on each event of that metadata without its own stat of the name."""
    keys = by_metadata.rows  # metadata ids, ascending
    pos = np.minimum(np.searchsorted(keys, metadata_id), len(keys) - 1)
    hit = keys[pos] == metadata_id
    if own is not None and len(own):
        hit[own.rows] = False
    rows = np.flatnonzero(hit)
    return StatColumn(rows, by_metadata.values[pos[rows]])


def _merged(a: StatColumn, b: StatColumn) -> StatColumn:
    """Two columns over disjoint rows, as one (rows ascending)."""
    if not len(b):
        return a
    rows = np.concatenate((a.rows, b.rows))
    order = np.argsort(rows, kind="stable")
    return StatColumn(rows[order], np.concatenate((a.values, b.values))[order])


def column_from_dict(values: dict[int, Any]) -> StatColumn:
    """A column from {row: value} (the runtime reading of a line, and metadata stats)."""
    if not values:
        return empty_column()
    rows = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
    vals = np.empty(len(values), dtype=object)
    vals[:] = list(values.values())
    order = np.argsort(rows, kind="stable")
    return StatColumn(rows[order], vals[order])
