"""A queue's figures from what one pipeline of ``XINFO`` calls returned, and rates from counter deltas.

- ``messages`` is the stream's length; every entry in it is either ready or pending, because tqadmin deletes
  an entry when it settles it (and ``lag`` is unknown after ``XDEL``, BROKERS.md trap 4).
- ``unacked`` is what the group has pending, less what sits with ``tq:released`` (given back, ready again);
  ``ready`` is the rest.
- ``consumers`` counts the group's consumers heard from within twice their lease.
- ``delayed`` is the size of the delay set; the oldest age is that of the oldest message that can be
  taken now (:data:`~tqadmin_redis.scripts.OLDEST_TAKEABLE`, on the server's clock): a retry past its due
  time counts from that time, one still waiting out its delay not at all, an entry never delivered or given
  back from its id, an entry a live consumer holds not at all. The DLQ's oldest age is its first entry's
  (when it died).
- Rates are deltas between two polls of the stream's ``entries-added`` (published), the group's
  ``entries-read`` (delivered) and entries added less the length (settled: acked, retried, dead-lettered):
  ``None`` on the first poll, and on a Redis older than 7.0, which keeps no such counters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tqadmin.connect.redis_client import text
from tqadmin.plugin.models import QueueStats, dlq_name
from tqadmin_redis.entries import entry_id_ms
from tqadmin_redis.naming import GROUP, RELEASED


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """What one poll read of one stream (``stream`` is ``None`` when the stream does not exist)."""

    stream: Mapping[str, Any] | None
    groups: Sequence[Mapping[str, Any]]
    consumers: Sequence[Mapping[str, Any]]
    delayed: int
    leases_ms: Mapping[bytes, bytes]
    takeable_ms: int = -1  # ms since the oldest takeable message became takeable; -1: none is


@dataclass(frozen=True, slots=True)
class Counters:
    at_s: float
    added: int | None
    read: int | None
    settled: int | None


class Rates:
    """The previous poll's counters per queue, to turn the next poll's into rates."""

    def __init__(self) -> None:
        self._last: dict[str, Counters] = {}

    def update(self, name: str, now: Counters) -> tuple[float | None, float | None, float | None]:
        before = self._last.get(name)
        self._last[name] = now
        if before is None or now.at_s <= before.at_s:
            return None, None, None
        span = now.at_s - before.at_s

        def rate(a: int | None, b: int | None) -> float | None:
            return None if a is None or b is None else max(a - b, 0) / span

        return rate(now.added, before.added), rate(now.read, before.read), rate(now.settled, before.settled)


def queue_stats(
    name: str,
    info: StreamInfo,
    *,
    dlq_depth: int | None,
    now_s: float,
    default_lease_ms: int,
    rates: Rates,
    dlq_oldest_age_s: float | None = None,
) -> QueueStats | None:
    """The figures of one tqadmin queue, or ``None`` when its stream is gone."""
    stream = info.stream
    if stream is None:
        return None
    length = int(stream.get("length", 0))
    group = next((g for g in info.groups if text(g.get("name")) == GROUP), None)
    pending = int(group.get("pending", 0)) if group else 0
    released = sum(int(c.get("pending", 0)) for c in info.consumers if text(c.get("name")) == RELEASED)
    live = 0
    for consumer in info.consumers:
        consumer_name = text(consumer.get("name"))
        if consumer_name == RELEASED:
            continue
        lease_ms = int(info.leases_ms.get(consumer_name.encode(), default_lease_ms))
        if int(consumer.get("idle", 0)) < 2 * lease_ms:
            live += 1
    added = _number(stream.get("entries-added"))
    read = _number(group.get("entries-read")) if group else None
    publish, deliver, ack = rates.update(
        name, Counters(now_s, added, read, None if added is None else added - length)
    )
    return QueueStats(
        name=name,
        messages=length,
        ready=length - pending + released,
        unacked=pending - released,
        consumers=live,
        publish_rate=publish,
        deliver_rate=deliver,
        ack_rate=ack,
        oldest_age_s=info.takeable_ms / 1000 if info.takeable_ms >= 0 else None,
        dlq=None if dlq_depth is None else dlq_name(name),
        dlq_messages=dlq_depth,
        dlq_oldest_age_s=dlq_oldest_age_s,
        kind="stream",
        delayed=info.delayed,
    )


def first_entry_age(stream: Mapping[str, Any] | None, now_s: float) -> float | None:
    """How long ago the stream's first entry was added (a DLQ's: when its oldest dead letter died)."""
    if not stream or not int(stream.get("length", 0)):
        return None
    first = stream.get("recorded-first-entry-id")
    if not first or text(first) == "0-0":
        entry = stream.get("first-entry")
        first = entry[0] if entry else None
    if not first:
        return None
    return max(0.0, round(now_s - entry_id_ms(text(first)) / 1000, 3))


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
