"""The figures of other frameworks' queues, in two or three pipelines however many there are.

Depth from the lists and sorted sets themselves; in flight from each framework's own record of started jobs
(RQ's ``wip`` registry, kombu's ``unacked`` hash); the oldest job's age where the job says when it was
enqueued (RQ, Sidekiq); consumer groups' pending and lag for a stream. Whatever a job holds, the figures are
finite: an oldest job whose time is no time (``-Infinity``, 401 digits, text, a key of another type) gives
no age (``None``), never an error that would fail the whole listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import redis

from tqadmin.connect.redis_client import text
from tqadmin.frameworks import own_pauses, sidekiq
from tqadmin.frameworks.decoding import epoch_seconds, name
from tqadmin.plugin.bodies import load_json
from tqadmin.plugin.models import QueueStats
from tqadmin.show.finite import finite
from tqadmin_redis.connection import Connection
from tqadmin_redis.foreign_kinds import CELERY, RQ, SIDEKIQ, STREAM, Foreign

SIDEKIQ_DEAD = "sidekiq:dead"  # the dead set, the DLQ of every Sidekiq queue
KOMBU_UNACKED_LIMIT = 1000  # above this many unacked Celery messages, they are not attributed to queues


def stats(conn: Connection, queues: Sequence[Foreign], now_s: float) -> list[QueueStats]:
    """The figures of ``queues``: one pipeline of counts, one of oldest jobs."""
    if not queues:
        return []
    with conn.translated():
        pipe = conn.client.pipeline(transaction=False)
        for f in queues:
            _queue_counts(pipe, f)
        replies = pipe.execute(raise_on_error=False)
        unacked = _celery_unacked(conn, queues)
        ages = _ages(conn, queues, now_s)
        paused = _sidekiq_paused(conn, queues)
    rows = []
    at = 0
    for f in queues:
        width = _count_width(f)
        rows.append((f, [r if not isinstance(r, Exception) else None for r in replies[at : at + width]]))
        at += width
    depth_of = {f.name: counts[0] or 0 for f, counts in rows}
    found = (_to_stats(f, counts, unacked.get(f.name, 0), ages, depth_of) for f, counts in rows)
    return [
        replace(stat, state=own_pauses.PAUSED) if stat.name in paused else stat
        for stat in found
        if stat is not None
    ]


def _sidekiq_paused(conn: Connection, queues: Sequence[Foreign]) -> set[str]:
    """The Sidekiq queues listed whose names Sidekiq's own ``paused`` set holds (Pro's and Enterprise's
    ``Sidekiq::Queue#pause!``), as shown names: one ``SMEMBERS``, a read, when a Sidekiq queue is listed."""
    sidekiq_queues = {f.name for f in queues if f.kind == SIDEKIQ and f.key_type == "list"}
    if not sidekiq_queues:
        return set()
    try:
        members = conn.client.smembers(own_pauses.SIDEKIQ_PAUSED_SET)
    except redis.ResponseError:  # a key of another type: no pause of Sidekiq's there
        return set()
    return {f"sidekiq:{text(m)}" for m in members} & sidekiq_queues


def _celery_unacked(conn: Connection, queues: Sequence[Foreign]) -> dict[str, int]:
    """kombu keeps every unacked message of every queue in one hash, ``[payload, exchange, routing
    key]``: counted per queue by routing key when there are few (the usual case: prefetched tasks)."""
    counted: dict[str, int] = {}
    by_hash: dict[str, dict[str, str]] = {}
    for f in queues:
        if f.kind == CELERY and f.started:
            prefix = f.started.removesuffix("unacked")
            by_hash.setdefault(f.started, {})[f.keys[0].removeprefix(prefix)] = f.name
    hashes = list(by_hash)
    pipe = conn.client.pipeline(transaction=False)
    for unacked in hashes:
        pipe.hlen(unacked)
    sizes = pipe.execute(raise_on_error=False)  # a key of another type answers an error: not attributed
    few = [
        h
        for h, size in zip(hashes, sizes, strict=True)
        if isinstance(size, int) and size <= KOMBU_UNACKED_LIMIT
    ]
    pipe = conn.client.pipeline(transaction=False)
    for unacked in few:
        pipe.hvals(unacked)
    for unacked, values in zip(few, pipe.execute(raise_on_error=False), strict=True):
        for raw in values if isinstance(values, list) else ():
            shown = by_hash[unacked].get(_routing_key(raw) or "")
            if shown is not None:
                counted[shown] = counted.get(shown, 0) + 1
    return counted


def _routing_key(raw: bytes) -> str | None:
    """The routing key of one of kombu's unacked entries, ``[payload, exchange, routing key]``."""
    try:
        entry = load_json(raw)
    except ValueError:
        return None
    return name(entry[2]) if isinstance(entry, list) and len(entry) == 3 else None


def _ages(conn: Connection, queues: Sequence[Foreign], now_s: float) -> dict[str, float]:
    """How long the oldest job of each RQ and Sidekiq queue has waited (Celery's envelopes say not), and
    how long the oldest of Sidekiq's dead set has been dead (its score: the time it died). Sidekiq's retry
    and scheduled sets get none: their jobs wait for their time, and none can be taken before it."""
    ages: dict[str, float] = {}
    lists = [f for f in queues if f.kind in (RQ, SIDEKIQ) and f.key_type == "list"]
    dead = [f for f in queues if f.kind == SIDEKIQ and f.name == SIDEKIQ_DEAD]
    if not lists and not dead:
        return ages
    pipe = conn.client.pipeline(transaction=False)
    for f in lists:
        pipe.lindex(f.keys[0], -1 if f.newest_left else 0)
    for f in dead:
        pipe.zrange(f.keys[0], 0, 0, withscores=True)
    replies = pipe.execute(raise_on_error=False)
    for f, first in zip(dead, replies[len(lists) :], strict=True):
        died = finite(first[0][1]) if _found(first) and first else None
        if died is not None:
            ages[f.name] = max(0.0, round(now_s - died, 3))
    heads = [(f, h) for f, h in zip(lists, replies[: len(lists)], strict=True) if _found(h)]
    rq_heads = [(f, text(h)) for f, h in heads if f.kind == RQ]
    stamps = [(f, sidekiq_enqueued_at(h)) for f, h in heads if f.kind == SIDEKIQ]
    if rq_heads:
        pipe = conn.client.pipeline(transaction=False)
        for _, job_id in rq_heads:
            pipe.hget(f"rq:job:{job_id}", "enqueued_at")
        replies = pipe.execute(raise_on_error=False)
        stamps += [(f, epoch_seconds(stamp)) for (f, _), stamp in zip(rq_heads, replies, strict=True)]
    for f, at in stamps:
        if at is not None:
            ages[f.name] = max(0.0, round(now_s - at, 3))
    return ages


def _found(reply: Any) -> bool:
    """A pipeline reply that holds something: not empty, not an error (a key of another type)."""
    return reply is not None and not isinstance(reply, Exception)


def _count_width(f: Foreign) -> int:
    if f.kind == STREAM:
        return 2
    if f.kind == RQ and f.key_type == "list":
        return 5
    return len(f.keys)


def _queue_counts(pipe: Any, f: Foreign) -> None:
    """Queue the count commands of ``f`` (as many as :func:`_count_width` says)."""
    if f.kind == STREAM:
        pipe.xlen(f.keys[0])
        pipe.xinfo_groups(f.keys[0])
        return
    for key in f.keys:
        if f.key_type == "zset":
            pipe.zcard(key)
        else:
            pipe.llen(key)
    if f.kind == RQ and f.key_type == "list":
        pipe.zcard(f.started)
        pipe.zcard(f.scheduled)
        pipe.scard(f.workers)
        pipe.zcard(f"rq:failed:{f.name.removeprefix('rq:')}")


def _to_stats(
    f: Foreign, counts: list[Any], unacked: int, ages: dict[str, float], depth_of: dict[str, int]
) -> QueueStats | None:
    """One row; ``None`` for a stream without consumer groups (a log, not a queue)."""
    common: dict[str, Any] = {
        "name": f.name,
        "kind": f.kind,
        "read_only": f.read_only,
        "oldest_age_s": ages.get(f.name),
        "dlq_oldest_age_s": ages.get(f.dlq) if f.dlq else None,
    }
    if f.kind == STREAM:
        length, groups = counts[0] or 0, counts[1] or []
        if not groups:
            return None
        pending = sum(int(g.get("pending") or 0) for g in groups)
        lags = [g.get("lag") for g in groups]
        # lag is unknown after an XDEL (BROKERS.md trap 4): then what the group has not settled at most
        ready = max(int(lag) if isinstance(lag, int) else length - pending for lag in lags)
        consumers = sum(int(g.get("consumers") or 0) for g in groups)
        return QueueStats(
            messages=length, ready=max(ready, 0), unacked=pending, consumers=consumers, **common
        )
    if f.kind == RQ and f.key_type == "list":
        waiting, started, scheduled, workers, failed = (c or 0 for c in counts)
        return QueueStats(
            messages=waiting + started,
            ready=waiting,
            unacked=started,
            consumers=workers,
            delayed=scheduled,
            dlq=f.dlq,
            dlq_messages=failed,
            **common,
        )
    depth = sum(c or 0 for c in counts)
    dlq_messages = depth_of.get(f.dlq) if f.dlq else None
    waiting = f.name in ("sidekiq:retry", "sidekiq:scheduled")  # each job waits for its time: none is ready
    return QueueStats(
        messages=depth + unacked,
        ready=0 if waiting else depth,
        unacked=unacked,
        consumers=None,
        delayed=depth if waiting else None,
        dlq=f.dlq if dlq_messages is not None else None,
        dlq_messages=dlq_messages,
        **common,
    )


def sidekiq_enqueued_at(raw: bytes) -> float | None:
    """When the Sidekiq job ``raw`` was enqueued, in epoch seconds; ``None`` for a job that says no time
    Sidekiq could have written (not a JSON object, ``-Infinity``, 401 digits, text, before 1970)."""
    try:
        job = load_json(raw)
    except ValueError:
        return None
    return sidekiq.moment(job.get("enqueued_at")) if isinstance(job, dict) else None
