"""The Redis plugin's figures and alarms from what Redis answered: pure, no server."""

from __future__ import annotations

from tqadmin_redis.alarms import alarms_of
from tqadmin_redis.listing import Rates, StreamInfo, first_entry_age, queue_stats

NOW_S = 1_700_000_010.0
STREAM = {"length": 10, "entries-added": 100, "recorded-first-entry-id": b"1700000000000-0"}
GROUPS = [{"name": b"tq", "pending": 4, "entries-read": 90}]
CONSUMERS = [
    {"name": b"host:1:aaa", "pending": 3, "idle": 500},
    {"name": b"host:2:bbb", "pending": 0, "idle": 120_000},  # silent past twice its lease: not counted
    {"name": b"tq:released", "pending": 1, "idle": 10**12},
]


def info(stream: dict[str, object] | None = STREAM, takeable_ms: int = 4_000) -> StreamInfo:
    return StreamInfo(
        stream, GROUPS, CONSUMERS, delayed=2, leases_ms={b"host:1:aaa": b"30000"}, takeable_ms=takeable_ms
    )


def test_ready_counts_what_was_given_back_and_in_flight_what_a_consumer_holds() -> None:
    stats = queue_stats(
        "orders",
        info(),
        dlq_depth=3,
        now_s=NOW_S,
        default_lease_ms=30_000,
        rates=Rates(),
        dlq_oldest_age_s=first_entry_age(STREAM, NOW_S),
    )
    assert stats is not None
    assert (stats.messages, stats.ready, stats.unacked, stats.delayed) == (10, 7, 3, 2)
    assert stats.consumers == 1
    assert stats.oldest_age_s == 4.0  # what the script found takeable, not the first entry (held, 10 s)
    assert (stats.dlq, stats.dlq_messages, stats.dlq_oldest_age_s) == ("orders.dlq", 3, 10.0)


def test_nothing_takeable_has_no_age_and_an_empty_stream_no_first_entry() -> None:
    stats = queue_stats(
        "orders", info(takeable_ms=-1), dlq_depth=0, now_s=NOW_S, default_lease_ms=1, rates=Rates()
    )
    assert stats is not None and stats.oldest_age_s is None
    assert first_entry_age({**STREAM, "length": 0}, NOW_S) is None
    assert first_entry_age(None, NOW_S) is None


def test_rates_are_deltas_of_the_counters_between_two_polls() -> None:
    rates = Rates()
    queue_stats("orders", info(), dlq_depth=None, now_s=NOW_S, default_lease_ms=30_000, rates=rates)
    later = {**STREAM, "entries-added": 120, "length": 5}
    groups = [{"name": b"tq", "pending": 4, "entries-read": 110}]
    stats = queue_stats(
        "orders",
        StreamInfo(later, groups, CONSUMERS, 0, {}),
        dlq_depth=None,
        now_s=NOW_S + 2,
        default_lease_ms=30_000,
        rates=rates,
    )
    assert stats is not None
    assert (stats.publish_rate, stats.deliver_rate, stats.ack_rate) == (10.0, 10.0, 12.5)


def test_a_queue_whose_stream_is_gone_is_not_listed() -> None:
    assert (
        queue_stats("gone", info(None), dlq_depth=None, now_s=NOW_S, default_lease_ms=1, rates=Rates())
        is None
    )


def test_alarms_name_eviction_a_full_memory_failed_writes_and_no_persistence() -> None:
    healthy = {"maxmemory_policy": "noeviction", "aof_enabled": 1, "aof_last_write_status": "ok"}
    assert alarms_of("n:1", healthy, save="3600 1") == []
    sick = {
        "maxmemory_policy": "allkeys-lru",
        "used_memory": 95,
        "maxmemory": 100,
        "rdb_last_bgsave_status": "err",
        "aof_enabled": 0,
    }
    assert [a.kind for a in alarms_of("n:1", sick, save="")] == [
        "eviction",
        "memory",
        "persistence",
        "no_persistence",
    ]
    assert [a.kind for a in alarms_of("n:1", {"aof_enabled": 0}, save=None)] == []  # CONFIG refused: unknown
