"""Several ranks of one distributed run, side by side.

Two steps, so the per-trace part can run anywhere (a process pool, Dask, Spark):

- :func:`summarize` turns one :class:`~traceview.results.Diagnosis` into a
  :class:`RankSummary`: a few kilobytes (per-step times and bucket ns, the steady attribution,
  the rank the trace declares), picklable, with no event rows. ``traceview.loader.summarize_trace`` does
  load → diagnose → summarize for one path: the per-rank function to map over thousands of traces.
- :func:`multi_rank` groups summaries into runs and compares the ranks of each run that has at
  least two: per-rank steady step time, stragglers per step, and the spread of every bucket.

Which rank a trace is:

1. Kineto ``distributedInfo`` (``{"backend", "rank", "world_size"}``, written by torch.profiler
   when torch.distributed is initialised). Ranks with the same backend and world size are one
   run; when a rank appears twice, runs are split by folder.
2. XPlane files that share a profile run folder are the hosts of one run (TensorBoard writes one
   ``<host>.xplane.pb`` per host there): rank = position in path order.
3. Anything else is not a rank (a folder of unrelated captures gets no multi-rank section).

Under synchronous data parallelism every rank waits for the slowest at each collective, so step
times converge; the straggler then shows as the rank with the *least* waiting — read the bucket
spread (which rank has the most compute, which the most communication) with the step times. When
the others wait in communication at least ``HOLDUP_SHARE`` of a step longer than one rank, and
that rank spends at least ``HOLDUP_MATCH`` of the wait more than they do in a cause of its own, a
note names it and the cause ("rank 1 holds the collectives up … host compute").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceview.results import RANK_FROM_DISTRIBUTED, RANK_FROM_HOST_ORDER, MultiRank, RankInfo, RankSummary, short_names
from traceview.schema import TraceMeta

# A step is a straggler step when its slowest rank is this much above the median of the ranks:
# ranks in lock-step (synchronous collectives) differ by a few percent of profiler noise.
STRAGGLER_SHARE = 0.05

# ---------------------------------------------------------------------------------------------
# Per trace


def declared_rank(meta: TraceMeta) -> RankInfo | None:
    """The rank a trace declares: Kineto ``distributedInfo``, kept by the reader in
    ``meta.extra["distributed"]``; None for a trace that says nothing (or nonsense)."""
    info = meta.extra.get("distributed")
    if not isinstance(info, dict):
        return None
    rank, world = info.get("rank"), info.get("world_size")
    if type(rank) is not int or rank < 0:
        return None
    return RankInfo(rank=rank, world_size=world if type(world) is int and world > 0 else None,
                    backend=str(info.get("backend") or ""), origin=RANK_FROM_DISTRIBUTED)


def summarize(diag: Any) -> RankSummary:
    """The compact per-rank result of one diagnosis."""
    meta = diag.timeline.meta
    per = diag.attribution.per_step
    buckets = [c for c in per.columns if c != "total"]  # whatever buckets the attribution has
    table = diag.steps.table
    steps = pd.DataFrame({"number": table["number"].astype(np.int64), "duration": table["duration"].astype(np.int64),
                          "cold": table["cold"].astype(bool)})
    for b in buckets:
        steps[b] = per[b].astype(np.int64)
    return RankSummary(source=str(meta.source), format=meta.format, framework=meta.framework,
                       declared=declared_rank(meta), steady_step_ns=float(diag.steady_step_ns),
                       steady_buckets_ns=dict(diag.steady_attribution()), steps=steps)


# ---------------------------------------------------------------------------------------------
# Across traces


def host_order(traces: Iterable[tuple[str, str]]) -> dict[str, RankInfo]:
    """Ranks of XPlane files by position in their run folder, for folders with two or more.

    ``traces``: (source path, reader format) pairs."""
    folders: dict[str, list[str]] = {}
    for source, fmt in traces:
        if fmt == "xplane":
            folders.setdefault(str(Path(source).parent), []).append(source)
    out: dict[str, RankInfo] = {}
    for members in folders.values():
        if len(members) >= 2:
            for rank, source in enumerate(sorted(members)):
                out[source] = RankInfo(rank=rank, world_size=len(members), origin=RANK_FROM_HOST_ORDER)
    return out


def multi_rank(summaries: Sequence[RankSummary]) -> list[MultiRank]:
    """One comparison per run with two or more ranks, in a deterministic order (whatever the
    order of ``summaries``): a trace's rank is the one it declares, else its host order."""
    ordered = sorted(summaries, key=lambda s: s.source)
    hosts = host_order((s.source, s.format) for s in ordered)
    runs: dict[tuple[str, ...], list[tuple[RankInfo, RankSummary]]] = {}
    for s in ordered:
        info = s.declared or hosts.get(s.source)
        if info is None:
            continue
        key = ((RANK_FROM_DISTRIBUTED, info.backend, str(info.world_size)) if info.origin == RANK_FROM_DISTRIBUTED
               else (RANK_FROM_HOST_ORDER, str(Path(s.source).parent)))
        runs.setdefault(key, []).append((info, s))
    out: list[MultiRank] = []
    for key, members in sorted(runs.items()):
        for group, notes in _split_duplicates(members):
            if len(group) >= 2:
                out.append(_compare_ranks(key, group, notes))
    return out


Member = tuple[RankInfo, RankSummary]


def _split_duplicates(members: list[Member]) -> list[tuple[list[Member], tuple[str, ...]]]:
    """The sets of traces compared as one run, each with its notes. A rank that appears twice
    means several runs share a backend and world size: one set per folder then. A folder that
    still repeats a rank holds several profiling windows of one run (a profiler schedule with
    repeat > 1 writes one trace per rank and window): where every rank has the same number of
    traces, each window is its own set (each rank's traces in the order of their steps); else each
    rank's last trace is compared, and the others are named."""
    ranks = [info.rank for info, _ in members]
    if len(set(ranks)) == len(ranks):
        return [(members, ())]
    by_folder: dict[str, list[Member]] = {}
    for member in members:
        by_folder.setdefault(str(Path(member[1].source).parent), []).append(member)
    sets: list[tuple[list[Member], tuple[str, ...]]] = []
    for _, group in sorted(by_folder.items()):
        by_rank: dict[int, list[Member]] = {}
        for member in group:
            by_rank.setdefault(member[0].rank, []).append(member)
        if all(len(traces) == 1 for traces in by_rank.values()):
            sets.append((group, ()))
            continue
        for traces in by_rank.values():
            traces.sort(key=lambda m: (_first_step(m[1]), m[1].source))
        counts = {len(traces) for traces in by_rank.values()}
        if len(counts) == 1:
            windows = counts.pop()
            for k in range(windows):
                sets.append(([by_rank[r][k] for r in sorted(by_rank)],
                             (f"window {k + 1} of {windows}: each rank has {windows} traces in this folder (a profiler "
                              "schedule with repeat > 1 writes one per window), compared window by window in the "
                              "order of their steps",)))
            continue
        extra = [m[1].source for r in sorted(by_rank) for m in by_rank[r][:-1]]
        sets.append(([by_rank[r][-1] for r in sorted(by_rank)],
                     (f"{len(extra)} trace(s) repeat a rank another trace of this folder has ("
                      + ", ".join(short_names(extra)) + "): each rank's last trace (by its steps) is compared",)))
    return sets


def _first_step(summary: RankSummary) -> int:
    """The trace's first step number (-1 without steps): a later profiling window's are higher."""
    return int(summary.steps["number"].min()) if len(summary.steps) else -1


def _compare_ranks(key: tuple[str, ...], members: list[Member], notes_first: tuple[str, ...] = ()) -> MultiRank:
    members = sorted(members, key=lambda m: m[0].rank)
    infos = [m[0] for m in members]
    summaries = [m[1] for m in members]
    ranks = np.array([i.rank for i in infos], dtype=np.int64)
    world = infos[0].world_size
    backend = infos[0].backend
    if key[0] == RANK_FROM_DISTRIBUTED:
        label = ", ".join(p for p in (backend, f"world size {world}" if world else "") if p) or "distributed run"
    else:
        label = "hosts of one profile run"  # the folder shows in the sources (which --redact rewrites)
    notes: list[str] = list(notes_first)
    if world and len(ranks) < world:
        notes.append(f"{len(ranks)} of {world} ranks are in the input")

    # One long table of every rank's steps, then the rank × step matrix of the steps all ranks have.
    long = pd.concat([s.steps.assign(rank=r) for r, s in zip(ranks, summaries)], ignore_index=True)
    step_ns = long.pivot_table(index="number", columns="rank", values="duration", aggfunc="first").dropna()
    step_ns = step_ns.reindex(columns=ranks).astype(np.int64).sort_index()
    missing = long["number"].nunique() - len(step_ns)
    if missing:
        notes.append(f"{missing} step number(s) are not on every rank; steps are compared on the "
                     f"{len(step_ns)} they share")
    stragglers = _stragglers(step_ns, long)

    steady = np.array([s.steady_step_ns for s in summaries], dtype=float)
    median_steady = float(np.median(steady))
    slowest = stragglers["slowest_rank"].to_numpy()
    table = pd.DataFrame({
        "rank": ranks,
        "source": [s.source for s in summaries],
        "trace": short_names([s.source for s in summaries]),
        "steady_step_ns": steady,
        "vs_median": steady / median_steady - 1.0 if median_steady else np.zeros(len(steady)),
        "steps": [len(s.steps) for s in summaries],
        "slowest_steps": (slowest[None, :] == ranks[:, None]).sum(axis=1) if len(slowest) else 0,
    })
    holdup = _holdup(ranks, summaries, median_steady)
    if holdup:
        notes.append(holdup)
    return MultiRank(label=label, world_size=world, backend=backend, rank_origin=infos[0].origin, ranks=table,
                     step_ns=step_ns, stragglers=stragglers, spread=_spread(ranks, summaries), threshold=STRAGGLER_SHARE,
                     notes=tuple(notes))


# A rank holds the collectives up when the others wait at least this share of a steady step longer
# in communication than it does, and it spends at least HOLDUP_MATCH of that wait more than they do
# in one cause of its own.
HOLDUP_SHARE = 0.05
HOLDUP_MATCH = 0.5


def _holdup(ranks: np.ndarray, summaries: list[RankSummary], median_steady: float) -> str | None:
    """The rank the others wait for in their collectives, and the cause of its own that the wait
    matches: a collective ends when the slowest rank joins, so the rank with the least
    communication is the one the others wait for, and its excess work is what they wait on."""
    comm = np.array([s.steady_buckets_ns.get("communication", 0.0) for s in summaries], dtype=float)
    if len(ranks) < 2 or not comm.any() or not median_steady:
        return None
    culprit = int(np.argmin(comm))
    others = np.arange(len(ranks)) != culprit
    waited = float(np.median(comm[others]) - comm[culprit])
    if waited < HOLDUP_SHARE * median_steady:
        return None
    excess = {bucket: summaries[culprit].steady_buckets_ns.get(bucket, 0.0)
              - float(np.median([s.steady_buckets_ns.get(bucket, 0.0) for s, o in zip(summaries, others) if o]))
              for bucket in summaries[culprit].steady_buckets_ns if bucket not in ("communication", "idle")}
    cause = max(excess, key=lambda b: (excess[b], b)) if excess else None
    if cause is None or excess[cause] < HOLDUP_MATCH * waited:
        return None
    return (f"rank {ranks[culprit]} holds the collectives up: the other ranks wait {waited / 1e6:.3g} ms per step "
            f"longer in communication, and rank {ranks[culprit]} spends {excess[cause] / 1e6:.3g} ms more than they "
            f"do in {cause.replace('_', ' ')} (a collective ends when the slowest rank joins it)")


def _stragglers(step_ns: pd.DataFrame, long: pd.DataFrame) -> pd.DataFrame:
    """Per step on every rank: the median of the ranks, the slowest rank and its excess."""
    matrix = step_ns.to_numpy(dtype=np.int64)
    ranks = step_ns.columns.to_numpy(dtype=np.int64)
    if not matrix.size:
        return pd.DataFrame({c: [] for c in ("number", "cold", "median_ns", "min_ns", "max_ns", "slowest_rank",
                                             "over_median_ns", "over_median_share", "straggler")})
    median = np.median(matrix, axis=1)
    high = matrix.max(axis=1)
    over = high - median
    share = np.divide(over, median, out=np.zeros(len(median)), where=median > 0)
    cold = long.groupby("number")["cold"].any().reindex(step_ns.index).to_numpy(bool)
    return pd.DataFrame({
        "number": step_ns.index.to_numpy(np.int64),
        "cold": cold,
        "median_ns": median,
        "min_ns": matrix.min(axis=1),
        "max_ns": high,
        # The lowest of the slowest ranks; -1 where every rank took the same time (no one is slowest).
        "slowest_rank": np.where(high > matrix.min(axis=1), ranks[matrix.argmax(axis=1)], -1),
        "over_median_ns": over,
        "over_median_share": share,
        "straggler": share > STRAGGLER_SHARE,
    })


def _spread(ranks: np.ndarray, summaries: list[RankSummary]) -> pd.DataFrame:
    """Per bucket, the steady mean per step across ranks: min, median, max and who holds them."""
    buckets: list[str] = []
    for s in summaries:  # buckets in the order the attribution gives them, union over ranks
        buckets.extend(b for b in s.steady_buckets_ns if b not in buckets)
    matrix = np.array([[s.steady_buckets_ns.get(b, 0.0) for b in buckets] for s in summaries], dtype=float)
    return pd.DataFrame({
        "bucket": buckets,
        "min_ns": matrix.min(axis=0),
        "median_ns": np.median(matrix, axis=0),
        "max_ns": matrix.max(axis=0),
        "min_rank": ranks[matrix.argmin(axis=0)],
        "max_rank": ranks[matrix.argmax(axis=0)],
    })
