"""Allocator samples of an XPlane (``MemoryAllocation`` / ``MemoryDeallocation``) as the timeline's memory table.

TensorFlow's and XLA's BFC allocators (TF on GPUs, and on the CPU when ``TF_CPU_ALLOCATOR_USE_BFC``
is set; JAX / PJRT on GPUs) record every allocation and free as a zero-length event on the thread
that allocates, with the allocator's state after it as stats (tsl ``BFCAllocator::AddTraceMe``; the
same stats xprof's memory profile reads):

==================== ==================================================================================
stat                 meaning
==================== ==================================================================================
``allocator_name``   the allocator: ``GPU_0_bfc``, ``bfc_cpu_allocator_for_gpu`` (TF's CPU BFC allocator),
                     ``gpu_host_bfc`` / ``xla_gpu_host_bfc`` (pinned host memory)
``bytes_allocated``  bytes in use in that allocator after the sample (xprof: heap allocated bytes)
``requested_bytes``  the bytes asked for
``allocation_bytes`` the chunk handed out or taken back: the request rounded up to 256 bytes, or a
                     whole free chunk of up to twice the request; what ``bytes_allocated`` moves by
``peak_bytes_in_use`` the allocator's peak since it was created (not since the profile started)
``bytes_reserved``   reserved stack memory (xprof: stack reserved bytes; 0 for a BFC allocator)
``tf_op``            allocations only: the op the tensor is for (``sequential/dense/Relu``)
``addr``             the chunk's address (a free names the address of the allocation it frees)
``region_type``, ``data_type``, ``shape``, ``id``: the tensor's role (output, temp …), dtype,
                     shape and the step id of the executor
==================== ==================================================================================

Mapping onto the memory table (``traceview.schema.MEMORY_COLUMNS``):

- ``bytes``: ``+allocation_bytes`` for an allocation, ``-allocation_bytes`` for a free
  (``requested_bytes`` where ``allocation_bytes`` is missing);
- ``total_allocated``: per device, the sum over its allocators of each one's latest
  ``bytes_allocated`` (each TF allocator keeps its own total; a host can have several);
  -1 on a sample without ``bytes_allocated``;
- ``total_reserved``: -1 (TF has no caching pool total in these stats; ``bytes_reserved`` is
  another quantity);
- ``device``: from the allocator's name (``categories.XPLANE_DEVICE_ALLOCATOR``), else -1 (host);
- ``op``: ``tf_op`` of an allocation; a free takes the op of the allocation at the same address of
  the same allocator before it ("" when that allocation happened before the profile);
- ``allocator``: ``allocator_name``.

A sample with neither ``allocation_bytes`` nor ``requested_bytes`` (as a byte count up to 16 TiB)
has no size: it is dropped, counted under :data:`NO_SIZE_REASON`; a ``bytes_allocated`` beyond
that is unknown (-1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from traceview import categories as cat
from traceview.readers.xplane_classify import int_stat, str_stat
from traceview.readers.xplane_stats import StatColumn
from traceview.schema import memory_frame
from traceview.table import Labels, Table

# Stats the reader decodes for allocator samples (others on those events are skipped).
MEMORY_STATS = frozenset({"allocator_name", "bytes_allocated", "requested_bytes", "allocation_bytes", "addr",
                          "tf_op"})
NO_SIZE_REASON = "allocator sample without a size (no usable allocation_bytes or requested_bytes stat)"
_MAX_DEVICE_INDEX = 2**31 - 1  # the memory table's device column is int32
_MAX_BYTES = 2**44  # 16 TiB: more than one allocator holds; 2**19 of them still sum inside int64


@dataclass
class Samples:
    """The usable allocator samples among a plane walk's events (arrays in the order of ``rows``)."""

    rows: np.ndarray  # event rows (positions in the reader's columns)
    nbytes: np.ndarray  # int64: > 0 allocated, < 0 freed
    allocator_total: np.ndarray  # int64: the allocator's bytes_allocated after the sample; -1 unknown
    op: np.ndarray  # object: tf_op of an allocation, "" otherwise
    allocator: np.ndarray  # object: allocator_name
    addr: np.ndarray  # int64: chunk address; -1 unknown
    unsized: int  # samples dropped for having no size


def samples(names: Labels, stats: dict[str, StatColumn], candidates: np.ndarray) -> Samples:
    """The allocator samples among ``candidates`` (rows of zero-length host events named
    ``MemoryAllocation`` / ``MemoryDeallocation``)."""
    size = _bytes(_at(int_stat, stats["allocation_bytes"], candidates))
    size = np.where(size >= 0, size, _bytes(_at(int_stat, stats["requested_bytes"], candidates)))
    sized = size >= 0
    rows = candidates[sized]
    size = size[sized]
    free = names.at(rows) == cat.XPLANE_MEMORY_FREE if len(rows) else np.zeros(0, dtype=bool)
    op = _at(str_stat, stats["tf_op"], rows)
    op[free] = ""  # a free's op is that of the allocation it frees (memory_table)
    return Samples(
        rows=rows,
        nbytes=np.where(free, -size, size),
        allocator_total=_bytes(_at(int_stat, stats["bytes_allocated"], rows)),
        op=op,
        allocator=_at(str_stat, stats["allocator_name"], rows),
        addr=_at(int_stat, stats["addr"], rows),
        unsized=int((~sized).sum()),
    )


def _bytes(values: np.ndarray) -> np.ndarray:
    """Byte counts, -1 where a value is not one (negative, or beyond any memory there is: the
    device totals add allocators up, which must not overflow int64)."""
    return np.where((values >= 0) & (values <= _MAX_BYTES), values, -1)


def _at(convert: Callable[[StatColumn, int], np.ndarray], column: StatColumn, rows: np.ndarray) -> np.ndarray:
    """A stat at the chosen rows only (``int_stat`` / ``str_stat`` over the whole plane walk would
    build an array per event of the trace)."""
    positions, values = column.at(rows)
    return convert(StatColumn(positions, values), len(rows))


def memory_table(found: Samples, ts: np.ndarray, pid: np.ndarray, tid: np.ndarray,
                 track: np.ndarray) -> Table | None:
    """The memory table of the samples (``ts`` in ns on the event table's clock, and the sampling
    thread's ``pid`` / ``tid`` / ``track``, one per sample); None when there are none."""
    if not len(found.rows):
        return None
    order = np.argsort(ts, kind="stable")
    allocator = found.allocator[order]
    device = _devices(allocator)
    return memory_frame(
        ts=ts[order], nbytes=found.nbytes[order],
        total_allocated=_device_totals(found.allocator_total[order], allocator, device),
        total_reserved=np.full(len(order), -1, dtype=np.int64), device=device,
        pid=pid[order], tid=tid[order], track=track[order],
        op=_ops_of_frees(found.op[order], found.nbytes[order], allocator, found.addr[order]),
        allocator=allocator,
    )


def _devices(allocator: np.ndarray) -> np.ndarray:
    """Device index of each sample's allocator: ``GPU_<n>_…`` → n, any other name host (-1)."""
    names, codes = np.unique(allocator.astype(str), return_inverse=True)
    index = np.full(len(names), -1, dtype=np.int64)
    for i, name in enumerate(names.tolist()):
        match = cat.XPLANE_DEVICE_ALLOCATOR.match(name)
        if match is not None and int(match.group(1)) <= _MAX_DEVICE_INDEX:
            index[i] = int(match.group(1))
    return index[codes.reshape(-1)]


def _device_totals(allocator_total: np.ndarray, allocator: np.ndarray, device: np.ndarray) -> np.ndarray:
    """Bytes held on each sample's device after it: every allocator of the device at its latest
    ``bytes_allocated``, summed (samples in ts order; -1 where the sample has no total)."""
    known = allocator_total >= 0
    rows = np.flatnonzero(known)
    import pandas as pd  # (only an XPlane with memory records imports pandas, here)

    frame = pd.DataFrame({"allocator": allocator[rows], "device": device[rows], "total": allocator_total[rows]})
    previous = frame.groupby("allocator", sort=False)["total"].shift(1, fill_value=0)
    frame["change"] = frame["total"] - previous  # how the allocator's latest total moved
    out = np.full(len(allocator_total), -1, dtype=np.int64)
    out[rows] = frame.groupby("device", sort=False)["change"].cumsum().to_numpy()
    return out


def _ops_of_frees(op: np.ndarray, nbytes: np.ndarray, allocator: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Each free takes the op of the latest earlier allocation at its address in its allocator
    (samples in ts order); allocations keep their own."""
    op = op.copy()
    rows = np.flatnonzero(addr >= 0)
    if not len(rows):
        return op
    import pandas as pd  # (only an XPlane with memory records imports pandas, here)

    frame = pd.DataFrame({"allocator": allocator[rows], "addr": addr[rows],
                          "op": np.where(nbytes[rows] > 0, op[rows], None)})
    # An allocation without a tf_op still ends the previous allocation's claim on the address.
    filled = frame.groupby(["allocator", "addr"], sort=False)["op"].ffill()
    free = nbytes[rows] < 0
    op[rows[free]] = filled.to_numpy()[free]
    op[pd.isna(op)] = ""
    return op
