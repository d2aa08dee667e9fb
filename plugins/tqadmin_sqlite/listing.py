"""Every queue's figures in one read transaction: a few indexed aggregates, however many queues there are.

- depth, ready (due, or claimed by a consumer whose lease ended), in flight (claimed under a live lease) and
  delayed (waiting out a retry delay), from the ``(queue, available_ms)`` indexes;
- the oldest ready message's age: how long the head of the queue has been due (a retry counts from its due
  time, so one waiting out its delay never ages the queue); the DLQ's oldest: how long its first dead letter
  has been there (every insert stamps ``enqueued_ms`` with its due time, which is now for a dead letter);
- publish, deliver and ack rates: the counters the writers bump per second, over the last complete
  ``RATE_WINDOW_S`` seconds;
- consumers: those that said they were alive within ``LIVE_S`` (every consumer touches its row each second).
"""

from __future__ import annotations

import sqlite3

from tqadmin.plugin.models import QueueStats
from tqadmin_sqlite.consuming import LIVE_S

RATE_WINDOW_S = 10
KIND = "sqlite"


def queue_stats(db: sqlite3.Connection, now_ms: int) -> list[QueueStats]:
    declared = dict(db.execute("SELECT name, dlq FROM tqb_queues").fetchall())
    totals = {
        queue: (int(depth), int(ready or 0), oldest, first)
        for queue, depth, ready, oldest, first in db.execute(
            "SELECT queue, COUNT(*), SUM(available_ms <= ?), MIN(available_ms), MIN(enqueued_ms)"
            " FROM tqb_messages GROUP BY queue",
            (now_ms,),
        )
    }
    in_flight = dict(
        db.execute(
            "SELECT queue, COUNT(*) FROM tqb_messages WHERE consumer IS NOT NULL AND available_ms > ?"
            " GROUP BY queue",
            (now_ms,),
        ).fetchall()
    )
    second = now_ms // 1000
    rates = {
        queue: (published / RATE_WINDOW_S, delivered / RATE_WINDOW_S, acked / RATE_WINDOW_S)
        for queue, published, delivered, acked in db.execute(
            "SELECT queue, SUM(published), SUM(delivered), SUM(acked) FROM tqb_rates"
            " WHERE second >= ? AND second < ? GROUP BY queue",
            (second - RATE_WINDOW_S, second),
        )
    }
    consumers = dict(
        db.execute(
            "SELECT queue, COUNT(*) FROM tqb_consumers WHERE seen_ms >= ? GROUP BY queue",
            (now_ms - int(LIVE_S * 1000),),
        ).fetchall()
    )
    stats = []
    for name in sorted({*declared, *totals}):
        dlq = declared.get(name)
        depth, ready, oldest, _ = totals.get(name, (0, 0, None, None))
        dlq_first = totals.get(dlq, (0, 0, None, None))[3] if dlq else None
        held = int(in_flight.get(name, 0))
        publish, deliver, ack = rates.get(name, (0.0, 0.0, 0.0))
        stats.append(
            QueueStats(
                name=name,
                messages=depth,
                ready=ready,
                unacked=held,
                consumers=int(consumers.get(name, 0)),
                publish_rate=publish,
                deliver_rate=deliver,
                ack_rate=ack,
                oldest_age_s=max(0.0, (now_ms - oldest) / 1000) if ready and oldest is not None else None,
                dlq=dlq,
                dlq_messages=totals.get(dlq, (0, 0, None, None))[0] if dlq else None,
                dlq_oldest_age_s=max(0.0, (now_ms - dlq_first) / 1000) if dlq_first is not None else None,
                kind=KIND,
                delayed=depth - ready - held,
            )
        )
    return stats
