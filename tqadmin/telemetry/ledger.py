"""Task counters that never go down while workers come and go, and never count a worker twice.

Each worker's snapshot holds its own cumulative counts; the exporter sums them. A worker that stops (its
heartbeat record ages out of the store) or whose id a new process reuses would take its counts with it and a
``_total`` counter would fall, which Prometheus reads as a reset and turns into a false spike. So the ledger
keeps each worker's last counts once it is no longer listed.

A worker is one process: its id and its ``started_at``. One that vanishes from the store and comes back
(a Redis restart without persistence, a failover, a FLUSHDB, its keys deleted: its next heartbeat writes
them again) is the same process, with the same counts and more: while it is gone its last counts stay in
the totals, and when it returns they are its own again, never added a second time. The ledger remembers a
departed process for :data:`RETURN_WINDOW_S` (at most :data:`MAX_REMEMBERED` of them); after that its
counts fold into one running total per task type, so memory grows with task types and the processes of
the last hour, not with every worker a deployment ever ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from tqadmin.telemetry.counters import TaskStats, by_task_type
from tqadmin.telemetry.snapshot import WorkerSnapshot

RETURN_WINDOW_S = 3600.0
"""How long a departed worker process is remembered by itself, so that it can come back: a store that
lost its keys is written again by the next heartbeat, seconds later; an hour is a wide margin."""
MAX_REMEMBERED = 1000
"""Departed processes remembered at most (the oldest fold first): a crash loop stays bounded."""

Incarnation = tuple[str, float]
"""A worker process: its id and its ``started_at`` (an id reused by a new process is another one)."""


@dataclass(frozen=True, slots=True)
class WorkerFigures:
    """One worker process's cumulative figures per task type, as its last heartbeat gave them: what the
    history records (:mod:`tqadmin.store.history.increments`), each process by itself."""

    worker_id: str
    started_at: float
    tasks: Mapping[str, TaskStats] = field(default_factory=dict)

    @property
    def incarnation(self) -> Incarnation:
        return (self.worker_id, self.started_at)


class WorkerLedger:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        return_window_s: float = RETURN_WINDOW_S,
        remember: int = MAX_REMEMBERED,
    ) -> None:
        self._clock = clock
        self._return_window_s = return_window_s
        self._remember = remember
        self._current: dict[str, WorkerFigures] = {}  # id -> the listed process
        self._gone: dict[Incarnation, tuple[float, WorkerFigures]] = {}  # departed lately: (when, last)
        self._departed: dict[str, TaskStats] = {}  # folded: departed long enough ago

    def update(self, snapshots: Iterable[WorkerSnapshot]) -> None:
        """Take the workers the store lists now; those it no longer lists have departed, and one that is
        listed again (the same id and ``started_at``) takes its counts back from the departed."""
        now = self._clock()
        self._fold(now)  # gone too long to be taken back
        listed: set[str] = set()
        for snapshot in snapshots:
            listed.add(snapshot.worker_id)
            figures = WorkerFigures(snapshot.worker_id, snapshot.started_at, by_task_type(snapshot.stats))
            kept = self._current.get(snapshot.worker_id)
            if kept is not None and kept.started_at != snapshot.started_at:  # the id reused by a new process
                self._leave(kept, now)
            self._gone.pop(figures.incarnation, None)  # back: its counts are in ``figures`` again
            self._current[snapshot.worker_id] = figures
        for worker_id in [w for w in self._current if w not in listed]:
            self._leave(self._current.pop(worker_id), now)
        self._fold(now)

    def totals(self) -> dict[str, TaskStats]:
        """Per task type, every worker's counts: the listed ones' latest plus the departed ones' last."""
        total = {name: stats.copy() for name, stats in self._departed.items()}
        figures = [*(last for _, last in self._gone.values()), *self._current.values()]
        for worker in figures:
            for name, stats in worker.tasks.items():
                total.setdefault(name, TaskStats()).add(stats)
        return total

    def workers(self) -> list[WorkerFigures]:
        """The processes the store listed at the last update, each with its own figures."""
        return list(self._current.values())

    def _leave(self, figures: WorkerFigures, now: float) -> None:
        self._gone.pop(figures.incarnation, None)
        self._gone[figures.incarnation] = (now, figures)  # last in: the order is the order they left

    def _fold(self, now: float) -> None:
        """The departed processes past the return window, or past the count kept, fold into the totals."""
        while self._gone:
            key, (left_at, figures) = next(iter(self._gone.items()))
            if len(self._gone) <= self._remember and now - left_at <= self._return_window_s:
                return
            del self._gone[key]
            for name, stats in figures.tasks.items():
                self._departed.setdefault(name, TaskStats()).add(stats)
