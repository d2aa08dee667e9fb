"""Task activity that two writers, departed workers and restarts cannot inflate: increments per bucket,
computed from each worker process's own cumulative figures.

Why not totals: every poller (the exporter, each dashboard) sums the workers it knows, departed ones
included, so two pollers write two different totals for one moment, the last writer of a bucket wins, and
every step back up from the lower total counted again (360 runs in an hour read as 940,266).

What is kept instead, beside the points: each worker process's figures as last recorded, keyed by a digest
of its id and ``started_at`` (:func:`worker_key`). A record call adds, for every listed process, what it
did since its last recorded figures into the bucket of ``now`` at every tier, and keeps its figures as the
new last, in one atomic step (an SQLite write transaction; on Redis a script that applies the write only if
no other record of the profile's tasks came between the read and the write). So:

- any number of writers: the second writer of a moment finds the first one's figures as the last and adds
  nothing more; a run is added once, whoever records it;
- a departed process is listed by nobody, so nothing is added for it; its figures are kept for the finest
  tier's span (at most ``max_departed`` of them) and then forgotten;
- a process that vanished from the store and came back (a Redis restart, a failover, its keys deleted)
  finds its figures and adds only what it did since;
- a writer that read the workers before another writer's record (an older heartbeat) adds nothing and
  never moves a process's figures back, so the next writer does not add those runs again;
- a process seen for the first time counts from zero when it started after the last record (less
  :data:`START_SLACK_S`), else from this first sighting: what it did before, nobody was recording (after a
  store flush the history is new too, and no worker's lifetime lands in one bucket).

:func:`plan_tasks` decides all of it from what was read (:class:`TaskState`); a backend only reads and
writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqadmin.store.history.base import MAX_NAME_BYTES, Tier, admitted
from tqadmin.store.history.points import (
    coarse_document,
    coarse_figures,
    coarse_from_document,
    decode_coarse,
    dumps,
    encode_coarse,
    folded_below,
)
from tqadmin.telemetry.counters import COUNTERS, TaskStats
from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.ledger import WorkerFigures

START_SLACK_S = 60.0
"""A process seen for the first time that started at most this long before the last record counts from
zero: its first heartbeat may have come just after that record read the workers (or its host's clock is a
little behind)."""

_UNREADABLE = (ValueError, TypeError, AttributeError, KeyError, OverflowError, RecursionError)


def worker_key(worker: WorkerFigures) -> str:
    """A worker process's key: the same for every writer, 32 characters whatever its id."""
    identity = f"{len(worker.worker_id)}:{worker.worker_id}:{worker.started_at!r}"
    return hashlib.blake2b(identity.encode(errors="replace"), digest_size=16).hexdigest()


def kept_tasks(worker: WorkerFigures, max_series: int) -> list[str]:
    """The task types of ``worker`` whose figures are kept: those whose name can be recorded, the first
    ``max_series`` in name order."""
    names = sorted(name for name in worker.tasks if len(name.encode(errors="replace")) <= MAX_NAME_BYTES)
    return names[:max_series]


def candidates(workers: Sequence[WorkerFigures], max_series: int) -> list[str]:
    """Every task type a record call may write, in name order."""
    return sorted({name for worker in workers for name in kept_tasks(worker, max_series)})


@dataclass(frozen=True, slots=True)
class TaskState:
    """What a record of the profile's task activity reads before it writes, in the same atomic step:
    ``recorded_at``, the last time any writer recorded a process (none after ``now`` plus the tolerance);
    the stored figures of the listed processes that have some (by :func:`worker_key`); the task types
    recorded within the history's keep; and, per (task type, tier resolution), the stored value of the
    bucket of ``now`` and the values of the points ahead of the writer's clock."""

    recorded_at: float | None
    lasts: Mapping[str, Any] = field(default_factory=dict)
    known: Collection[str] = ()
    current: Mapping[tuple[str, int], Any] = field(default_factory=dict)
    ahead: Mapping[tuple[str, int], Sequence[Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """What to write: each admitted task type's new value of the bucket of ``now`` per tier (tier order),
    each listed process's figures, and what was refused or skipped on the way."""

    names: list[str]
    values: dict[str, list[str]]
    lasts: dict[str, str]
    refused: int = 0
    skipped: int = 0


def plan_tasks(
    workers: Sequence[WorkerFigures], state: TaskState, tiers: Sequence[Tier], max_series: int
) -> TaskPlan:
    """The increments of ``workers`` since their stored figures, added into the bucket of ``now`` of each
    admitted task type at every tier, with the points found ahead of the writer's clock moved there too."""
    skipped = 0
    increments: dict[str, TaskStats] = {}
    lasts: dict[str, str] = {}
    for worker in workers:
        key = worker_key(worker)
        figures = {name: coarse_figures(worker.tasks[name]) for name in kept_tasks(worker, max_series)}
        lasts[key] = encode_figures(figures)
        if state.lasts.get(key) == lasts[key]:
            continue  # idle since its last record: nothing to add
        before: dict[str, TaskStats] | None = None
        if key in state.lasts:
            try:
                before = decode_figures(state.lasts[key])
            except _UNREADABLE:
                skipped += 1
        if before is None and not _started_since(worker, state.recorded_at):
            continue  # its first sighting: what it did before, nobody recorded
        for name, now in figures.items():
            earlier = (before or {}).get(name)
            if earlier is not None and _behind(now, earlier):
                figures[name] = earlier  # read before another writer's record: never moved back
                continue
            increments.setdefault(name, TaskStats()).add(since(now, earlier))
        lasts[key] = encode_figures(figures)
    names = admitted(candidates(workers, max_series), state.known, max_series)
    values: dict[str, list[str]] = {}
    refused = 0
    for name in names:
        per_tier = []
        for tier in tiers:
            point, series = TaskStats(), (name, tier.resolution_s)
            ahead = state.ahead.get(series, ())
            refused += len(ahead)
            stored = [state.current[series]] if series in state.current else []
            for value in [*stored, *ahead]:
                try:
                    point.add(decode_coarse(value))
                except _UNREADABLE:
                    skipped += 1
            point.add(increments.get(name, TaskStats()))
            per_tier.append(encode_coarse(point))
        values[name] = per_tier
    return TaskPlan(names, values, lasts, refused, skipped)


def since(now: TaskStats, before: TaskStats | None) -> TaskStats:
    """What a process did between two of its coarse figures (all of ``now`` without earlier ones); the
    earlier histograms are folded at the later ones' floor, where the later ones were clamped."""
    if before is None:
        return now
    earlier = TaskStats(wait=_at_floor(before.wait, now.wait), run=_at_floor(before.run, now.run))
    for name in COUNTERS:
        setattr(earlier, name, getattr(before, name))
    return now.minus(earlier)


def _at_floor(earlier: Histogram, later: Histogram) -> Histogram:
    return folded_below(earlier, min(later.buckets)) if later.buckets else earlier


def _behind(now: TaskStats, earlier: TaskStats) -> bool:
    """``now`` is an older reading of the process than ``earlier`` (counts only grow)."""
    if any(getattr(now, name) < getattr(earlier, name) for name in COUNTERS):
        return True
    return now.wait.count < earlier.wait.count or now.run.count < earlier.run.count


def _started_since(worker: WorkerFigures, recorded_at: float | None) -> bool:
    return recorded_at is not None and worker.started_at >= recorded_at - START_SLACK_S


def encode_figures(figures: Mapping[str, TaskStats]) -> str:
    """A process's coarse figures by task type, as kept."""
    return dumps({name: coarse_document(stats) for name, stats in figures.items()})


def decode_figures(value: Any) -> dict[str, TaskStats]:
    document = json.loads(value)
    if not isinstance(document, dict):
        raise ValueError("a worker's kept figures are an object")
    return {str(name): coarse_from_document(stats) for name, stats in document.items()}
