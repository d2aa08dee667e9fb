"""Queue and task history that survives a restart: the contract, the point encoding and the size bound.

Why fixed tiers and buckets: a point is keyed by (series, tier, bucket start), the bucket start being
``floor(t / resolution) * resolution``. Two pollers writing at the same moment (two dashboards, an exporter)
write the same point, never two, and every record call writes the point of every tier, so the coarser tiers
are downsampled for free: their point holds the latest value seen in its bucket. That is right for gauges
(depth, age, rates: last writer wins) and for the task types' cumulative counters and histograms, where a
window is the difference of two points (:meth:`~tqadmin.telemetry.counters.TaskStats.minus`), never an
average of percentiles.

Why bounded: a tier keeps at most ``points`` buckets, a profile at most ``max_series`` queues and as many
task types (name order, the exporter's ``--max-queues`` rule), a series that nobody recorded for the
coarsest tier's span is forgotten, a name longer than :data:`MAX_NAME_BYTES` is not recorded and a
histogram keeps at most :data:`HISTORY_BUCKETS` buckets, each :data:`HISTORY_COARSENING` of the live
ones. So :func:`size_bound` is a worst case whatever the brokers hold. A bucket nobody polled has no
point: readers return only points that exist (gaps are gaps).

No driver is imported here; :func:`open_history` picks the backend by the URL's scheme.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tqadmin.errors import ConfigError
from tqadmin.file_access import Access
from tqadmin.plugin.models import QueueStats
from tqadmin.prefixes import split_prefix
from tqadmin.store.factory import by_scheme
from tqadmin.store.keys import DEFAULT_PREFIX
from tqadmin.telemetry.counters import COUNTERS, TaskStats
from tqadmin.telemetry.histogram import Histogram
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

QUEUE_FIGURES = (
    "messages",
    "ready",
    "in_flight",
    "oldest_age_s",
    "publish_rate",
    "deliver_rate",
    "ack_rate",
)
"""A queue point's gauges, in the order they are stored (a JSON array: no names repeated per point)."""

DEFAULT_MAX_SERIES = 2000
"""The exporter's ``--max-queues``."""
MAX_NAME_BYTES = MAX_TASK_TYPE_BYTES
"""Longest recorded queue or task type name (UTF-8): any task type a job may have, and any queue name
RabbitMQ takes (255 bytes); longer names are not recorded."""
HISTORY_COARSENING = 8
"""A stored histogram bucket is 8 of the telemetry's 1 % buckets (``GAMMA ** 8``, a factor of 1.17): a
percentile read from history is within about 9 % of the exact value, and a point is 8 times smaller than
the live histogram's. Charts of a day or a week need no finer resolution; the live panel keeps 1 %."""
HISTORY_BUCKETS = 64
"""Coarse buckets a stored histogram keeps (more than four orders of magnitude); lower ones fold into the
lowest kept one."""
_DECIMALS = 3

Figures = dict[str, float]
"""A queue point: the figures of :data:`QUEUE_FIGURES` the broker reported (missing ones are absent)."""


QUEUES, TASKS = "q", "t"
"""The kinds of series: a queue's gauges, a task type's cumulative figures."""


class HistoryStore(ABC):
    """Points of queue gauges and task types' cumulative figures, per profile, at every tier of ``tiers``.

    A backend writes and reads encoded points (:meth:`_record`, :meth:`_points`); what a point holds and
    how it is encoded is decided here, once.
    """

    tiers: tuple[Tier, ...] = TIERS
    max_series: int = DEFAULT_MAX_SERIES

    def record_queues(self, profile: str, now_s: float, stats: Sequence[QueueStats]) -> int:
        """Write each queue's figures at ``now_s`` into every tier; returns how many queues were recorded
        (past :attr:`max_series` known queues, new ones are not, in name order)."""
        return self._record(profile, QUEUES, now_s, {q.name: encode_queue_point(q) for q in stats})

    def record_tasks(self, profile: str, now_s: float, tasks: Mapping[str, TaskStats]) -> int:
        """Write each task type's cumulative figures at ``now_s`` into every tier; returns how many."""
        values = {name: encode_task_point(figures) for name, figures in tasks.items()}
        return self._record(profile, TASKS, now_s, values)

    def queue_history(self, profile: str, queue: str, tier: Tier) -> list[tuple[int, Figures]]:
        """The points of ``queue`` at ``tier``, oldest first: (bucket start, figures)."""
        return self.queue_histories(profile, [queue], tier).get(queue, [])

    def task_history(self, profile: str, task_type: str, tier: Tier) -> list[tuple[int, TaskStats]]:
        """The points of ``task_type`` at ``tier``, oldest first: (bucket start, cumulative figures)."""
        return self.task_histories(profile, [task_type], tier).get(task_type, [])

    def queue_histories(
        self, profile: str, queues: Sequence[str], tier: Tier
    ) -> dict[str, list[tuple[int, Figures]]]:
        """The points of each of ``queues`` at ``tier`` in one read (a chart of many rows); a queue with no
        point is left out."""
        read = self._points(profile, QUEUES, queues, tier)
        return {name: [(t, decode_queue_point(v)) for t, v in points] for name, points in read.items()}

    def task_histories(
        self, profile: str, task_types: Sequence[str], tier: Tier
    ) -> dict[str, list[tuple[int, TaskStats]]]:
        read = self._points(profile, TASKS, task_types, tier)
        return {name: [(t, decode_task_point(v)) for t, v in points] for name, points in read.items()}

    def task_types(self, profile: str) -> list[str]:
        """The task types recorded for ``profile`` within :attr:`keep_s`, in name order."""
        return sorted(self._names(profile, TASKS))

    @abstractmethod
    def _record(self, profile: str, kind: str, now_s: float, values: Mapping[str, str]) -> int:
        """Write the encoded ``values`` by name at ``now_s`` into every tier, admitting names by
        :func:`admitted` against the series of (profile, kind) recorded within :attr:`keep_s`, and
        forgetting those that were not; returns how many names were written."""

    @abstractmethod
    def _points(
        self, profile: str, kind: str, names: Sequence[str], tier: Tier
    ) -> dict[str, list[tuple[int, str]]]:
        """The encoded points of each named series at ``tier``, oldest first; names with none left out."""

    @abstractmethod
    def _names(self, profile: str, kind: str) -> list[str]:
        """The names of the series of (profile, kind) known to the index."""

    @abstractmethod
    def close(self) -> None: ...

    @property
    def keep_s(self) -> int:
        """How long a series nobody records is kept: the coarsest tier's span."""
        return max(tier.span_s for tier in self.tiers)


# -- points --------------------------------------------------------------------------------------------


def queue_figures(stats: QueueStats) -> list[float | None]:
    """The stored figures of one queue, in :data:`QUEUE_FIGURES` order (``None``: not reported)."""
    values: list[float | None] = [
        stats.messages,
        stats.ready,
        stats.unacked,
        stats.oldest_age_s,
        stats.publish_rate,
        stats.deliver_rate,
        stats.ack_rate,
    ]
    return [_compact(value) for value in values]


def _compact(value: float | None) -> float | None:
    if value is None or isinstance(value, int):
        return value
    if not math.isfinite(value):
        return None  # no JSON for it, and no figure either
    rounded = round(value, _DECIMALS)
    return int(rounded) if rounded.is_integer() else rounded


def encode_queue_point(stats: QueueStats) -> str:
    return _dumps(queue_figures(stats))


def decode_queue_point(text: str) -> Figures:
    values = json.loads(text)
    return {name: v for name, v in zip(QUEUE_FIGURES, values, strict=False) if v is not None}


def clamp_histogram(histogram: Histogram, keep: int = HISTORY_BUCKETS) -> Histogram:
    """``histogram`` with at most ``keep`` buckets, counts below them folded into the lowest kept one: the
    high percentiles a chart shows keep their accuracy, and a stored point has a bounded size."""
    if not histogram.buckets or max(histogram.buckets) - min(histogram.buckets) < keep:
        return histogram
    floor = max(histogram.buckets) - keep + 1
    clamped = histogram.copy()
    folded = sum(n for index, n in clamped.buckets.items() if index < floor)
    clamped.buckets = {index: n for index, n in clamped.buckets.items() if index >= floor}
    clamped.buckets[floor] = clamped.buckets.get(floor, 0) + folded
    return clamped


def coarsened(histogram: Histogram, factor: int = HISTORY_COARSENING) -> Histogram:
    """``histogram`` on buckets ``factor`` times wider (fine bucket ``i`` in coarse bucket ``i // factor``):
    still mergeable bucket by bucket, and windows are still differences of two points."""
    coarse = Histogram()
    for index, n in histogram.buckets.items():
        coarse.buckets[index // factor] = coarse.buckets.get(index // factor, 0) + n
    coarse.zero, coarse.count, coarse.sum = histogram.zero, histogram.count, histogram.sum
    return coarse


def refined(coarse: Histogram, factor: int = HISTORY_COARSENING) -> Histogram:
    """A coarse histogram back on the telemetry's buckets, each count at the middle of its coarse bucket."""
    fine = coarse.copy()
    fine.buckets = {index * factor + factor // 2: n for index, n in coarse.buckets.items()}
    return fine


def encode_task_point(stats: TaskStats) -> str:
    """Counters and both histograms, coarsened; the dead-letter reasons are not kept (their names are
    unbounded)."""
    return _dumps(
        [
            [getattr(stats, name) for name in COUNTERS],
            clamp_histogram(coarsened(stats.wait)).to_json(),
            clamp_histogram(coarsened(stats.run)).to_json(),
        ]
    )


def decode_task_point(text: str) -> TaskStats:
    counts, wait, run = json.loads(text)
    stats = TaskStats(wait=refined(Histogram.from_json(wait)), run=refined(Histogram.from_json(run)))
    for name, value in zip(COUNTERS, counts, strict=False):
        setattr(stats, name, int(value))
    return stats


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


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
_LARGEST_INT = -(2**63)
_WIDEST_FLOAT = -1.2345678901234567e-123  # 24 characters, the longest a float prints


def worst_queue_point() -> str:
    return _dumps([_LARGEST_INT] * 3 + [_WIDEST_FLOAT] * 4)


def worst_task_point() -> str:
    wide = Histogram()
    wide.buckets = {index: 2**63 - 1 for index in range(-1000, -1000 + HISTORY_BUCKETS)}
    wide.zero = 2**63 - 1
    wide.sum = _WIDEST_FLOAT
    counts = [2**63 - 1] * len(COUNTERS)
    return _dumps([counts, wide.to_json(), wide.to_json()])


def size_bound(max_series: int = DEFAULT_MAX_SERIES, *, tiers: Sequence[Tier] = TIERS) -> int:
    """Worst-case bytes one profile's history takes in a store: ``max_series`` queues and as many task
    types, each with names of :data:`MAX_NAME_BYTES`, every point full, every figure at its widest."""
    bucket_bytes = 20
    per_point = {
        "queue": len(worst_queue_point()) + bucket_bytes + POINT_OVERHEAD,
        "task": len(worst_task_point()) + bucket_bytes + POINT_OVERHEAD,
    }
    total = 0
    for point_bytes in per_point.values():
        per_series = sum(tier.points * point_bytes + SERIES_OVERHEAD + MAX_NAME_BYTES for tier in tiers)
        total += max_series * (per_series + MAX_NAME_BYTES + SERIES_OVERHEAD)
    return total


# -- opening -----------------------------------------------------------------------------------------------


def open_history(
    url: str,
    *,
    timeout_s: float = 10.0,
    access: Access = Access.CREATE,
    max_series: int = DEFAULT_MAX_SERIES,
    prefix: str | None = None,
    tiers: Sequence[Tier] = TIERS,
) -> HistoryStore:
    """The history kept in the state store at ``url`` (``redis://``, ``rediss://``, ``sqlite:///PATH``),
    under the same prefix as :func:`~tqadmin.store.open_store` uses. ``access`` says what the caller does
    with an SQLite file (:class:`~tqadmin.file_access.Access`): a reader's is ``READ``, which writes nothing
    and finds a file that does not exist :class:`~tqadmin.errors.NoDatabase`."""
    url, url_prefix = split_prefix(url)
    chosen = prefix or url_prefix or DEFAULT_PREFIX
    if max_series < 0:
        raise ConfigError("the history's max_series must be 0 or more")
    options: dict[str, Any] = {"url": url, "prefix": chosen, "max_series": max_series, "tiers": tiers}

    def on_redis() -> HistoryStore:
        from tqadmin.store.redis_history import RedisHistory, redis_client

        return RedisHistory(redis_client(url, timeout_s), **options)

    def on_sqlite() -> HistoryStore:
        from tqadmin.sqlite_file import path_of
        from tqadmin.store.sqlite_history import SQLiteHistory

        return SQLiteHistory(path_of(url), timeout_s=timeout_s, access=access, **options)

    return by_scheme(url, "history store", {"redis": on_redis, "sqlite": on_sqlite})
