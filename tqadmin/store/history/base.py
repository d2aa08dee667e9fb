"""Queue and task history that survives a restart: the contract, the point encoding and the size bound.

Why fixed tiers and buckets: a point is keyed by (series, tier, bucket start), the bucket start being
``floor(t / resolution) * resolution``. Two pollers writing at the same moment (two dashboards, an exporter)
write the same point, never two, and every record call writes the point of every tier. A queue's point holds
its gauges (depth, age, rates): the last writer of a bucket wins, so a coarser tier holds the latest value
of its bucket. A task type's point holds its *activity in that bucket*, an increment (runs, failures and the
wait and run histograms' bucket counts), computed from each worker process's own cumulative figures
(:mod:`tqadmin.store.history.increments`): a run is added once whoever writes, and a span's activity is the
sum of its buckets, never an average of percentiles.

Why bounded: a tier keeps at most ``points`` buckets (the newest, counted, so that no clock, ahead or
behind, erases the others' points), a profile at most ``max_series`` queues and as many task types (name
order, the exporter's ``--max-queues`` rule), a series that nobody recorded for the coarsest tier's span is
forgotten, a name longer than :data:`MAX_NAME_BYTES` is not recorded, a histogram keeps at most
:data:`HISTORY_BUCKETS` buckets, each :data:`HISTORY_COARSENING` of the live ones, and the per-worker
figures are kept for the workers listed plus at most ``max_departed`` departed ones for the finest tier's
span. So :func:`size_bound` is a worst case whatever the brokers hold. A bucket nobody polled has no point:
readers return only points that exist (gaps are gaps).

Why a writer's clock is checked against the store's: a writer whose clock runs hours ahead would fill the
buckets of a time that has not come, and forgetting by its clock would erase what others recorded. So a
record whose clock is more than :data:`CLOCK_TOLERANCE_S` ahead of the store's own (Redis ``TIME``; the
embedded file's host clock) is refused whole, and says so (:class:`Recorded`); every write removes the
points of its series that start more than that after the store's clock (left by an older version, or a
clock set back), a task point's increments moved into the writer's bucket so that no run is lost. A writer
whose clock is behind is accepted: its points are the oldest, the first a tier's count lets go, and it
forgets later, never sooner. A point that cannot be read is skipped and counted (:class:`Histories`), never
failing the read of the others.

No driver is imported here; :func:`~tqadmin.store.factory.open_history` picks the backend by the URL's scheme.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tqadmin.plugin.models import QueueStats
from tqadmin.store.history.points import (
    HISTORY_BUCKETS,
    Figures,
    decode_queue_point,
    decode_task_point,
    dumps,
    encode_queue_point,
)
from tqadmin.telemetry.counters import COUNTERS, TaskStats
from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.ledger import WorkerFigures
from tqadmin.telemetry.task_names import MAX_TASK_TYPE_BYTES


@dataclass(frozen=True, slots=True)
class Tier:
    """``points`` buckets of ``resolution_s`` seconds each: a window of ``span_s``."""

    resolution_s: int
    points: int

    @property
    def span_s(self) -> int:
        return self.resolution_s * self.points

    def bucket(self, now_s: float) -> int:
        """The start of the bucket holding ``now_s``: the same for every writer at that moment."""
        return math.floor(now_s / self.resolution_s) * self.resolution_s


TIERS: tuple[Tier, ...] = (Tier(10, 360), Tier(300, 288), Tier(1800, 336))
"""1 hour at 10 s, 1 day at 5 min, 1 week at 30 min."""

DEFAULT_MAX_SERIES = 2000
"""The exporter's ``--max-queues``."""
DEFAULT_MAX_DEPARTED = 200
"""Departed worker processes whose figures are kept (for the finest tier's span) besides the listed ones."""
MAX_NAME_BYTES = MAX_TASK_TYPE_BYTES
"""Longest recorded queue or task type name (UTF-8): any task type a job may have, and any queue name
RabbitMQ takes (255 bytes); longer names are not recorded."""
CLOCK_TOLERANCE_S = 60.0
"""How far ahead of the store's clock a writer's may be: NTP keeps hosts within milliseconds, a point a
minute ahead is harmless (a chart shows it when its time comes), and a host further off is broken."""

QUEUES, TASKS = "q", "a"
"""The kinds of series: a queue's gauges, a task type's activity (increments per bucket; ``t``, the
cumulative points of older versions, is read no more and expires)."""

P = TypeVar("P")
RawPoints = dict[str, list[tuple[Any, Any]]]
"""Each series' stored (bucket, value) pairs as the backend read them, not yet checked."""


class Histories(dict[str, list[tuple[int, P]]], Generic[P]):
    """The points read of each series, oldest first (a series with none is left out), and how many stored
    points could not be read and were skipped (``skipped``): a face says so, and shows the rest."""

    skipped: int = 0


@dataclass(frozen=True, slots=True)
class Recorded:
    """What one record call did: ``series`` written (admitted by :attr:`HistoryStore.max_series`);
    ``refused`` points: those of this call when the writer's clock was ``ahead_s`` seconds ahead of the
    store's (more than :data:`CLOCK_TOLERANCE_S`), else stored points found ahead of the store's clock and
    removed (their task increments moved into the writer's bucket); ``skipped`` stored points or figures
    that could not be read and were ignored."""

    series: int
    refused: int = 0
    skipped: int = 0
    ahead_s: float = 0.0


class HistoryStore(ABC):
    """Points of queue gauges and task types' activity, per profile, at every tier of ``tiers``.

    A backend writes and reads encoded points (:meth:`_record`, :meth:`_record_tasks`, :meth:`_points`);
    what a point holds and how it is encoded is decided in :mod:`tqadmin.store.history.points` and
    :mod:`tqadmin.store.history.increments`, once.
    """

    tiers: tuple[Tier, ...] = TIERS
    max_series: int = DEFAULT_MAX_SERIES
    max_departed: int = DEFAULT_MAX_DEPARTED

    def record_queues(self, profile: str, now_s: float, stats: Sequence[QueueStats]) -> Recorded:
        """Write each queue's figures at ``now_s`` into every tier; ``series`` says how many queues were
        recorded (past :attr:`max_series` known queues, new ones are not, in name order)."""
        values = {q.name: [encode_queue_point(q)] * len(self.tiers) for q in stats}
        return self._record(profile, QUEUES, now_s, values)

    def record_tasks(self, profile: str, now_s: float, workers: Sequence[WorkerFigures]) -> Recorded:
        """Add what each listed worker process did since any writer last recorded it into the buckets of
        ``now_s`` (:func:`~tqadmin.store.history.increments.plan_tasks`); ``series`` says how many task
        types."""
        if not workers:
            return Recorded(0)
        return self._record_tasks(profile, now_s, workers)

    def queue_history(self, profile: str, queue: str, tier: Tier) -> list[tuple[int, Figures]]:
        """The points of ``queue`` at ``tier``, oldest first: (bucket start, figures)."""
        return self.queue_histories(profile, [queue], tier).get(queue, [])

    def task_history(self, profile: str, task_type: str, tier: Tier) -> list[tuple[int, TaskStats]]:
        """The points of ``task_type`` at ``tier``, oldest first: (bucket start, activity in the bucket)."""
        return self.task_histories(profile, [task_type], tier).get(task_type, [])

    def queue_histories(self, profile: str, queues: Sequence[str], tier: Tier) -> Histories[Figures]:
        """The points of each of ``queues`` at ``tier`` in one read (a chart of many rows); a queue with no
        point is left out."""
        return checked(*self._points(profile, QUEUES, queues, tier), decode_queue_point)

    def task_histories(self, profile: str, task_types: Sequence[str], tier: Tier) -> Histories[TaskStats]:
        return checked(*self._points(profile, TASKS, task_types, tier), decode_task_point)

    def task_types(self, profile: str) -> list[str]:
        """The task types recorded for ``profile`` within :attr:`keep_s`, in name order."""
        return sorted(self._names(profile, TASKS))

    @abstractmethod
    def _record(self, profile: str, kind: str, now_s: float, values: Mapping[str, Sequence[str]]) -> Recorded:
        """Write the encoded ``values`` by name (one per tier, in tier order) at ``now_s``, admitting names
        by :func:`admitted` against the series of (profile, kind) recorded within :attr:`keep_s` and
        forgetting those that were not; remove the points more than :data:`CLOCK_TOLERANCE_S` after the
        store's clock; keep each tier's newest :attr:`Tier.points` buckets. Nothing is written when
        ``now_s`` is more than that ahead of the store's clock."""

    @abstractmethod
    def _record_tasks(self, profile: str, now_s: float, workers: Sequence[WorkerFigures]) -> Recorded:
        """Read the :class:`~tqadmin.store.history.increments.TaskState`, plan and write the plan, at once: no
        other record of the profile's tasks between the read and the write."""

    @abstractmethod
    def _points(self, profile: str, kind: str, names: Sequence[str], tier: Tier) -> tuple[RawPoints, int]:
        """The stored points of each named series at ``tier``, oldest first (names with none left out), and
        how many series could not be read at all."""

    @abstractmethod
    def _names(self, profile: str, kind: str) -> list[str]:
        """The names of the series of (profile, kind) known to the index."""

    @abstractmethod
    def close(self) -> None: ...

    @property
    def keep_s(self) -> int:
        """How long a series nobody records is kept: the coarsest tier's span."""
        return max(tier.span_s for tier in self.tiers)

    def refused(self, now_s: float, store_now_s: float, points: int) -> Recorded | None:
        """A record at ``now_s`` refused whole when it is too far ahead of the store's clock, else None."""
        ahead = now_s - store_now_s
        return Recorded(0, points * len(self.tiers), ahead_s=ahead) if ahead > CLOCK_TOLERANCE_S else None

    @property
    def departed_keep_s(self) -> int:
        """How long a departed worker process's figures are kept: the finest tier's span."""
        return min(tier.span_s for tier in self.tiers)


def checked(raw: RawPoints, unreadable: int, decode: Callable[[Any], P]) -> Histories[P]:
    """The points of ``raw`` decoded; a point whose bucket or value does not decode is skipped and
    counted, with the series that could not be read (``unreadable``), in :attr:`Histories.skipped`."""
    read: Histories[P] = Histories()
    read.skipped = unreadable
    for name, points in raw.items():
        kept = []
        for bucket, value in points:
            try:
                kept.append((_bucket(bucket), decode(value)))
            except (ValueError, TypeError, AttributeError, KeyError, OverflowError, RecursionError):
                read.skipped += 1
        if kept:
            read[name] = sorted(kept, key=lambda point: point[0])
    return read


def _bucket(value: Any) -> int:
    if isinstance(value, bytes | str):
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"a bucket is a whole number of seconds, not {value!r:.40}")
    return value


def admitted(names: Iterable[str], known: Iterable[str], max_series: int) -> list[str]:
    """The names to record, in name order: every known one, and new ones while fewer than ``max_series``
    are known. A name too long to bound is never recorded."""
    seen = set(known)
    room = max_series - len(seen)
    chosen = []
    for name in sorted(set(names)):
        if len(name.encode()) > MAX_NAME_BYTES:
            continue
        if name in seen:
            chosen.append(name)
        elif room > 0:
            chosen.append(name)
            room -= 1
    return chosen


# -- the bound ---------------------------------------------------------------------------------------------

POINT_OVERHEAD = 128
"""Bytes a point costs beside its value and bucket: a Redis sorted-set entry (skiplist node, dict entry,
allocator rounding) or an SQLite b-tree cell and its share of a page's free space."""
SERIES_OVERHEAD = 512
"""Bytes a series costs per tier beside its points: a Redis key with its TTL, or an index row."""
WORKER_KEY_BYTES = 32
"""A worker process's key in the history (a digest of its id and start: any id takes the same room)."""
_LARGEST_INT = -(2**63)
_WIDEST_FLOAT = -1.2345678901234567e-123  # 24 characters, the longest a float prints
_WIDEST_NAME = 6 * MAX_NAME_BYTES + 2  # every byte a control character, escaped as \u00XX, in quotes


def worst_queue_point() -> str:
    return dumps([_LARGEST_INT] * 3 + [_WIDEST_FLOAT] * 4)


def worst_task_point() -> str:
    wide = Histogram()
    wide.buckets = {index: 2**63 - 1 for index in range(-1000, -1000 + HISTORY_BUCKETS)}
    wide.zero = 2**63 - 1
    wide.sum = _WIDEST_FLOAT
    counts = [2**63 - 1] * len(COUNTERS)
    return dumps([counts, wide.to_json(), wide.to_json()])


def worst_worker_figures(max_series: int = DEFAULT_MAX_SERIES) -> int:
    """Bytes one worker process's kept figures take at most: ``max_series`` task types of the widest name,
    each with the widest point, and its entries in the figures and in the index of when each was seen."""
    per_name = _WIDEST_NAME + 2 + len(worst_task_point())
    return max_series * per_name + 2 * (WORKER_KEY_BYTES + POINT_OVERHEAD)


def size_bound(
    max_series: int = DEFAULT_MAX_SERIES, *, tiers: Sequence[Tier] = TIERS, workers: int = 0
) -> int:
    """Worst-case bytes one profile's history takes in a store: ``max_series`` queues and as many task
    types, each with names of :data:`MAX_NAME_BYTES`, every point full, every figure at its widest; and
    the figures of ``workers`` worker processes (those listed plus :attr:`HistoryStore.max_departed`)."""
    bucket_bytes = 20
    per_point = {
        "queue": len(worst_queue_point()) + bucket_bytes + POINT_OVERHEAD,
        "task": len(worst_task_point()) + bucket_bytes + POINT_OVERHEAD,
    }
    total = 0
    for point_bytes in per_point.values():
        per_series = sum(tier.points * point_bytes + SERIES_OVERHEAD + MAX_NAME_BYTES for tier in tiers)
        total += max_series * (per_series + MAX_NAME_BYTES + SERIES_OVERHEAD)
    if workers:
        total += workers * worst_worker_figures(max_series) + 3 * SERIES_OVERHEAD
    return total
