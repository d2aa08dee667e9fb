"""Task counters that never go down while workers come and go.

Each worker's snapshot holds its own cumulative counts; the exporter sums them. A worker that stops (its
heartbeat record ages out of the store) or whose id a new process reuses would take its counts with it and a
``_total`` counter would fall, which Prometheus reads as a reset and turns into a false spike. So the ledger
keeps each worker's last counts, and folds those of departed workers into one running total per task type:
memory grows with task types, not with the workers a deployment ever ran.
"""

from __future__ import annotations

from collections.abc import Iterable

from tqadmin.telemetry.counters import TaskStats, by_task_type
from tqadmin.telemetry.snapshot import WorkerSnapshot


class WorkerLedger:
    def __init__(self) -> None:
        self._current: dict[str, tuple[float, dict[str, TaskStats]]] = {}  # id -> (started_at, by task type)
        self._departed: dict[str, TaskStats] = {}

    def update(self, snapshots: Iterable[WorkerSnapshot]) -> None:
        """Take the workers the store lists now; those it no longer lists have departed."""
        listed: set[str] = set()
        for snapshot in snapshots:
            listed.add(snapshot.worker_id)
            kept = self._current.get(snapshot.worker_id)
            if kept is not None and kept[0] != snapshot.started_at:  # the id reused by a new process
                self._retire(kept[1])
            self._current[snapshot.worker_id] = (snapshot.started_at, by_task_type(snapshot.stats))
        for worker_id in [w for w in self._current if w not in listed]:
            self._retire(self._current.pop(worker_id)[1])

    def totals(self) -> dict[str, TaskStats]:
        """Per task type, every worker's counts: the listed ones' latest plus the departed ones' last."""
        total = {name: stats.copy() for name, stats in self._departed.items()}
        for _, tasks in self._current.values():
            for name, stats in tasks.items():
                total.setdefault(name, TaskStats()).add(stats)
        return total

    def _retire(self, tasks: dict[str, TaskStats]) -> None:
        for name, stats in tasks.items():
            self._departed.setdefault(name, TaskStats()).add(stats)
