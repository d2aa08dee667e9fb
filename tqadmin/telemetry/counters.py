"""Per (queue, task type) cumulative counters and latency histograms, and the worker's thread-safe recorder.

Counters only ever grow during a worker's life, so any two readings give the activity between them by
subtraction; that is what makes a window cheap to compute (see :mod:`tqadmin.telemetry.window`). Task types
are names from messages, so the recorder keeps a bounded number of them a queue and folds the rest
(:mod:`tqadmin.telemetry.task_names`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.task_names import LABELS, MAX_FOLDED_COUNTED, MAX_TASK_TYPES, OTHER_TASKS

COUNTERS = ("done", "failed", "retried", "dead_lettered", "deduplicated")
UNKNOWN_REASON = "unknown"
"""The reason given to dead letters counted by a worker that did not record reasons (an older version)."""
StatsKey = tuple[str, str]
"""(queue, task_type)"""


@dataclass(slots=True)
class TaskStats:
    """Cumulative figures of one (queue, task type) on one worker, or merged over several.

    ``done`` and ``failed`` count runs (a job retried twice then done is 2 failed + 1 done); ``retried`` and
    ``dead_lettered`` count what became of failures (dead-lettering also covers jobs never run: malformed,
    unknown task, crash loop); ``deduplicated`` counts deliveries of done jobs acked without running.
    ``wait`` is published -> started, ``run`` is the run time, both in seconds. ``dead_letter_reasons``
    splits ``dead_lettered`` by ``x-tq-reason``; :meth:`by_reason` gives the split with what older
    workers counted without a reason as :data:`UNKNOWN_REASON`, so the parts always add up.
    """

    done: int = 0
    failed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    deduplicated: int = 0
    wait: Histogram = field(default_factory=Histogram)
    run: Histogram = field(default_factory=Histogram)
    dead_letter_reasons: dict[str, int] = field(default_factory=dict)

    def by_reason(self) -> dict[str, int]:
        """Dead letters by reason, adding up to ``dead_lettered``."""
        reasons = {reason: n for reason, n in self.dead_letter_reasons.items() if n > 0}
        unknown = self.dead_lettered - sum(reasons.values())
        if unknown > 0:
            reasons[UNKNOWN_REASON] = reasons.get(UNKNOWN_REASON, 0) + unknown
        return reasons

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTERS}

    def add(self, other: TaskStats) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.wait.add(other.wait)
        self.run.add(other.run)
        for reason, n in other.by_reason().items():
            self.dead_letter_reasons[reason] = self.dead_letter_reasons.get(reason, 0) + n

    def copy(self) -> TaskStats:
        clone = TaskStats()
        clone.add(self)
        return clone

    def minus(self, earlier: TaskStats) -> TaskStats:
        """Activity since ``earlier``; a counter that went down (never expected) counts as zero."""
        delta = TaskStats(wait=self.wait.minus(earlier.wait), run=self.run.minus(earlier.run))
        for name in COUNTERS:
            setattr(delta, name, max(getattr(self, name) - getattr(earlier, name), 0))
        before = earlier.by_reason()
        for reason, n in self.by_reason().items():
            if n > before.get(reason, 0):
                delta.dead_letter_reasons[reason] = n - before.get(reason, 0)
        return delta

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "c": [getattr(self, name) for name in COUNTERS],
            "w": self.wait.to_json(),
            "r": self.run.to_json(),
        }
        if self.dead_letter_reasons:
            document["d"] = dict(self.dead_letter_reasons)
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> TaskStats:
        stats = cls(
            wait=Histogram.from_json(document.get("w", {})), run=Histogram.from_json(document.get("r", {}))
        )
        for name, value in zip(COUNTERS, document.get("c", ()), strict=False):
            setattr(stats, name, int(value))
        stats.dead_letter_reasons = {str(k): int(v) for k, v in document.get("d", {}).items()}
        return stats


def merge_stats(tables: Iterable[Mapping[StatsKey, TaskStats]]) -> dict[StatsKey, TaskStats]:
    """Add several workers' tables key by key (associative and commutative)."""
    total: dict[StatsKey, TaskStats] = {}
    for table in tables:
        for key, stats in table.items():
            total.setdefault(key, TaskStats()).add(stats)
    return total


def summed(stats: Iterable[TaskStats]) -> TaskStats:
    """Several figures added into one."""
    total = TaskStats()
    for figures in stats:
        total.add(figures)
    return total


def by_task_type(table: Mapping[StatsKey, TaskStats]) -> dict[str, TaskStats]:
    """(queue, task type) figures summed per task type."""
    return _grouped(table, 1)


def by_queue(table: Mapping[StatsKey, TaskStats]) -> dict[str, TaskStats]:
    """(queue, task type) figures summed per queue."""
    return _grouped(table, 0)


def _grouped(table: Mapping[StatsKey, TaskStats], part: int) -> dict[str, TaskStats]:
    groups: dict[str, TaskStats] = {}
    for key, stats in table.items():
        groups.setdefault(key[part], TaskStats()).add(stats)
    return groups


def fold_task_types(tasks: Mapping[str, TaskStats], room: int) -> tuple[dict[str, TaskStats], int]:
    """``tasks`` with at most ``room`` task types besides the labels (the first in name order, so a name
    keeps its place from one reading to the next), the figures of the rest added to :data:`OTHER_TASKS`;
    and how many were folded there."""
    kept: dict[str, TaskStats] = {}
    rest: list[TaskStats] = []
    for name, stats in sorted(tasks.items()):
        if name in LABELS:
            kept[name] = stats
        elif room > 0:
            kept[name] = stats
            room -= 1
        else:
            rest.append(stats)
    if rest:
        kept[OTHER_TASKS] = summed([*rest, *((kept[OTHER_TASKS],) if OTHER_TASKS in kept else ())])
    return kept, len(rest)


def subtract_stats(
    latest: Mapping[StatsKey, TaskStats], earlier: Mapping[StatsKey, TaskStats]
) -> dict[StatsKey, TaskStats]:
    """Key by key ``latest - earlier``; keys new since ``earlier`` are taken whole."""
    empty = TaskStats()
    return {key: stats.minus(earlier.get(key, empty)) for key, stats in latest.items()}


class Telemetry:
    """What a worker records as it runs jobs; safe to call from the worker's threads.

    Use the labels of :mod:`tqadmin.telemetry.task_names` for jobs without a task type of their own
    (``(malformed)``, ``(unknown)``). Past ``max_task_types`` task types in a queue, a new one is recorded
    under ``(other)`` and counted in :attr:`folded`: whatever names the messages make up, a snapshot holds
    at most that many task types a queue, and the labels.
    """

    def __init__(self, max_task_types: int = MAX_TASK_TYPES) -> None:
        self._lock = threading.Lock()
        self._stats: dict[StatsKey, TaskStats] = {}
        self._max_task_types = max_task_types
        self._named: dict[str, int] = {}  # queue -> task types kept besides the labels
        self._folded: set[int] = set()  # hashes of the names folded, at most MAX_FOLDED_COUNTED

    def _entry(self, queue: str, task_type: str) -> TaskStats:
        entry = self._stats.get((queue, task_type))
        if entry is None:  # not setdefault: that would build a TaskStats on every call
            if task_type not in LABELS:
                named = self._named.get(queue, 0)
                if named >= self._max_task_types:
                    if len(self._folded) < MAX_FOLDED_COUNTED:
                        self._folded.add(hash(task_type))
                    return self._entry(queue, OTHER_TASKS)
                self._named[queue] = named + 1
            entry = self._stats[(queue, task_type)] = TaskStats()
        return entry

    @property
    def folded(self) -> int:
        """How many task types were recorded under ``(other)`` for want of room (at most
        :data:`~tqadmin.telemetry.task_names.MAX_FOLDED_COUNTED`)."""
        with self._lock:
            return len(self._folded)

    def started(self, queue: str, task_type: str, wait_s: float) -> None:
        """A run began ``wait_s`` after the job was published (its ``timestamp``)."""
        with self._lock:
            self._entry(queue, task_type).wait.record(wait_s)

    def finished(self, queue: str, task_type: str, run_s: float, *, ok: bool) -> None:
        with self._lock:
            entry = self._entry(queue, task_type)
            entry.run.record(run_s)
            if ok:
                entry.done += 1
            else:
                entry.failed += 1

    def retried(self, queue: str, task_type: str) -> None:
        self._count(queue, task_type, "retried")

    def dead_lettered(self, queue: str, task_type: str, reason: str) -> None:
        with self._lock:
            entry = self._entry(queue, task_type)
            entry.dead_lettered += 1
            entry.dead_letter_reasons[reason] = entry.dead_letter_reasons.get(reason, 0) + 1

    def deduplicated(self, queue: str, task_type: str) -> None:
        self._count(queue, task_type, "deduplicated")

    def _count(self, queue: str, task_type: str, name: str) -> None:
        with self._lock:
            entry = self._entry(queue, task_type)
            setattr(entry, name, getattr(entry, name) + 1)

    def read(self) -> dict[StatsKey, TaskStats]:
        """A consistent copy of every figure, for a heartbeat snapshot."""
        with self._lock:
            return {key: stats.copy() for key, stats in self._stats.items()}
