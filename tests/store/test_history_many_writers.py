"""Task activity in the history with any number of writers, on Redis and SQLite: each writer hands the worker
processes the store lists (each with its own cumulative figures) and a run is added once, whoever records
it, whatever departed, came back or restarted; points ahead of the store's clock are refused; a point that
cannot be read is skipped and counted, never failing the read of the others."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tqadmin.plugin.models import QueueStats
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import HistoryStore, Tier
from tqadmin.store.history.increments import START_SLACK_S
from tqadmin.store.history.points import encode_queue_point, encode_task_point
from tqadmin.store.history.redis import series_key, worker_keys
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.ledger import WorkerFigures

REDIS_URL = "redis://127.0.0.1:6379/0"
SMALL = (Tier(1, 60), Tier(5, 24), Tier(20, 12))  # 60 s of fine points: room for every step below
FINE = SMALL[0]

History = Callable[..., HistoryStore]


@pytest.fixture(params=["redis", "sqlite"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(kind: str, unique: str, tmp_path: Path) -> Iterator[str]:
    url = (
        f"{REDIS_URL}?prefix=hw{unique}"
        if kind == "redis"
        else f"sqlite:///{tmp_path / 'store.db'}?prefix=hw{unique}"
    )
    yield url
    if kind == "redis":
        cleanup: Any = open_store(url)
        cleanup.delete_prefix()
        cleanup.close()


@pytest.fixture
def history(url: str) -> Iterator[History]:
    opened: list[HistoryStore] = []

    def make(**options: Any) -> HistoryStore:
        options.setdefault("tiers", SMALL)
        store = open_history(url, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def ran(done: int, failed: int = 0) -> TaskStats:
    stats = TaskStats(done=done, failed=failed)
    stats.run.record(0.25, times=done + failed)
    return stats


def process(worker_id: str, done: int, started_at: float = 0.0, task_type: str = "send") -> WorkerFigures:
    return WorkerFigures(worker_id, started_at, {task_type: ran(done)})


def added(store: HistoryStore, task_type: str = "send") -> int:
    """Every run the fine tier's points hold."""
    return sum(stats.done for _, stats in store.task_history("prod", task_type, FINE))


def test_two_writers_listing_the_same_workers_add_each_run_once_whatever_the_order(history: History) -> None:
    exporter, dashboard = history(), history()
    exporter.record_tasks("prod", 100, [process("a", 0), process("b", 0)])  # first sighting
    for step in range(1, 21):
        workers = [process("a", 3 * step), process("b", 5 * step)]
        exporter.record_tasks("prod", 100 + step, workers)
        dashboard.record_tasks("prod", 100 + step + 0.5, workers)  # the same figures, a moment later
        if step % 4 == 0:  # a writer that read the workers before the last record: an older heartbeat
            dashboard.record_tasks("prod", 100 + step + 0.7, [process("a", 3 * step - 3), process("b", 0)])
    assert added(exporter) == 20 * 3 + 20 * 5


def test_a_departed_worker_adds_nothing_and_is_not_what_a_writer_that_never_saw_it_takes_away(
    history: History,
) -> None:
    exporter, dashboard = history(), history()
    exporter.record_tasks("prod", 100, [process("gone", 0), process("b", 0)])
    exporter.record_tasks("prod", 101, [process("gone", 10_000), process("b", 0)])
    for step in range(2, 30):  # "gone" departed: the exporter's ledger knows it, the dashboard's never did
        exporter.record_tasks("prod", 100 + step, [process("b", step)])
        dashboard.record_tasks("prod", 100 + step + 0.5, [process("b", step)])
    assert added(exporter) == 10_000 + 29


def test_a_worker_that_vanished_and_came_back_adds_only_what_it_did_since(history: History) -> None:
    store = history()
    store.record_tasks("prod", 100, [process("a", 50_000)])  # seen first after it ran a lifetime
    store.record_tasks("prod", 101, [process("a", 50_010)])
    store.record_tasks("prod", 102, [process("b", 0, started_at=102)])  # a's keys lost for a poll
    store.record_tasks("prod", 103, [process("a", 50_012), process("b", 1, started_at=102)])
    assert added(store) == 10 + 2 + 1


def test_a_worker_started_after_the_last_record_counts_from_zero_one_seen_first_later_from_then(
    history: History,
) -> None:
    store = history()
    store.record_tasks("prod", 1000, [process("a", 0, started_at=900)])
    store.record_tasks("prod", 1001, [process("a", 0, started_at=900), process("new", 7, started_at=1000.5)])
    old = 1001 - START_SLACK_S - 100
    store.record_tasks("prod", 1002, [process("a", 0, started_at=900), process("late", 40, started_at=old)])
    store.record_tasks("prod", 1003, [process("a", 0, started_at=900), process("late", 42, started_at=old)])
    assert added(store) == 7 + 2


def test_after_a_store_flush_no_workers_lifetime_lands_in_one_bucket(history: History, url: str) -> None:
    store = history()
    store.record_tasks("prod", 100, [process("a", 1000)])
    store.record_tasks("prod", 101, [process("a", 1010)])
    _flush(url)
    store.record_tasks("prod", 102, [process("a", 1020)])  # its heartbeat written again
    store.record_tasks("prod", 103, [process("a", 1025)])
    assert added(store) == 5


def test_a_restarting_worker_keeps_no_more_than_the_departed_processes_allowed(
    history: History, url: str, kind: str
) -> None:
    store = history(max_departed=3)
    for t in range(30):  # a new process every second, each listed once
        store.record_tasks("prod", 100 + t, [process("crashy", t % 3, started_at=100 + t)])
    assert added(store) == sum(t % 3 for t in range(1, 30))  # each counted from zero, none twice
    assert _kept_processes(url, kind) == 1 + 3


def test_a_record_ahead_of_the_stores_clock_is_refused_whole(history: History) -> None:
    store = history()
    now = time.time()
    store.record_queues("prod", now, [_queue(3)])
    refused = store.record_queues("prod", now + 7200, [_queue(99)])
    assert (refused.series, refused.refused) == (0, len(SMALL))
    assert refused.ahead_s == pytest.approx(7200, abs=60)
    assert store.record_tasks("prod", now + 7200, [process("a", 1)]).refused == len(SMALL)
    assert [f["messages"] for _, f in store.queue_history("prod", "orders", FINE)] == [3]
    assert store.task_history("prod", "send", FINE) == []


def test_points_an_older_version_left_ahead_of_the_clock_are_removed_their_runs_kept(
    history: History, url: str, kind: str
) -> None:
    store = history()
    now = time.time()
    store.record_queues("prod", now - 2, [_queue(1)])
    store.record_tasks("prod", now - 2, [process("a", 0)])
    later = FINE.bucket(now + 7200)
    _put(url, kind, "q", "orders", later, encode_queue_point(_queue(99)))
    _put(url, kind, "a", "send", later, encode_task_point(ran(5)))
    assert store.record_queues("prod", now, [_queue(2)]).refused == 1
    assert store.record_tasks("prod", now, [process("a", 1)]).refused == 1
    assert [f["messages"] for _, f in store.queue_history("prod", "orders", FINE)] == [1, 2]
    assert [s.done for _, s in store.task_history("prod", "send", FINE)] == [0, 6]  # 5 moved, 1 run


def test_a_corrupt_point_is_skipped_and_counted_and_every_other_point_read(
    history: History, url: str, kind: str
) -> None:
    store = history()
    for t in (100, 101, 102):
        store.record_queues("prod", t, [_queue(t, "orders"), _queue(t, "emails")])
    _put(url, kind, "q", "orders", 101, b"\xff\xfe\x00 not a point")
    read = store.queue_histories("prod", ["orders", "emails"], FINE)
    assert [t for t, _ in read["orders"]] == [100, 102]
    assert [t for t, _ in read["emails"]] == [100, 101, 102]
    assert read.skipped == 1
    for garbage in ("[1, 2", '{"a": 1}', '["x"]', "[1e999]", "[NaN]", "[[0,0,0,0,0], 7, {}]"):
        _put(url, kind, "q", "orders", 101, garbage)
        assert store.queue_histories("prod", ["orders"], FINE).skipped == 1
    store.record_tasks("prod", 100, [process("a", 0)])
    store.record_tasks("prod", 101, [process("a", 4)])
    _put(url, kind, "a", "send", 101, "[[-1, 0, 0, 0, 0], {}, {}]")
    assert store.task_histories("prod", ["send"], FINE).skipped == 1
    store.record_tasks("prod", 101.5, [process("a", 6)])  # the bucket it adds to is unreadable: rewritten
    assert [s.done for _, s in store.task_history("prod", "send", FINE)] == [0, 2]


def test_a_series_that_is_not_a_history_key_is_skipped_on_redis(
    history: History, url: str, kind: str
) -> None:
    if kind != "redis":
        pytest.skip("SQLite has no key of another type")
    store = history()
    store.record_queues("prod", 100, [_queue(1, "orders"), _queue(2, "emails")])
    client: Any = redis.Redis.from_url(REDIS_URL)
    key = series_key(url.partition("prefix=")[2], "prod", "q", FINE, "orders")
    client.delete(key)
    client.set(key, "another program's")
    read = store.queue_histories("prod", ["orders", "emails"], FINE)
    assert list(read) == ["emails"] and read.skipped == 1
    client.close()


def test_unreadable_figures_of_a_worker_are_skipped_and_it_counts_as_first_seen(
    history: History, url: str, kind: str
) -> None:
    store = history()
    store.record_tasks("prod", 100, [process("a", 10)])
    _put_figures(url, kind, "not json")
    done = store.record_tasks("prod", 101, [process("a", 30)])
    assert done.skipped == 1
    store.record_tasks("prod", 102, [process("a", 31)])
    assert added(store) == 1  # from the figures read again at 101, nothing of the lost 20 twice


# -- helpers -------------------------------------------------------------------------------------------


def _queue(messages: int, name: str = "orders") -> QueueStats:
    return QueueStats(name=name, messages=messages, ready=messages, unacked=0, consumers=1)


def _prefix(url: str) -> str:
    return url.partition("prefix=")[2]


def _path(url: str) -> Path:
    return Path(url.partition(":///")[2].partition("?")[0])


def _put(url: str, kind: str, series: str, name: str, bucket: int, value: str | bytes) -> None:
    """Write ``value`` as the fine point of ``bucket`` of a series, past the history's own code."""
    if kind == "redis":
        client: Any = redis.Redis.from_url(REDIS_URL)
        key = series_key(_prefix(url), "prod", series, FINE, name)
        client.zremrangebyscore(key, bucket, bucket)
        client.zadd(
            key, {f"{bucket}:".encode() + (value if isinstance(value, bytes) else value.encode()): bucket}
        )
        client.close()
        return
    with sqlite3.connect(_path(url)) as db:
        (series_id,) = db.execute(
            "SELECT id FROM tq_history_series WHERE ns = ? AND profile = 'prod' AND kind = ? AND name = ?",
            (_prefix(url), series, name),
        ).fetchone()
        db.execute(
            "INSERT INTO tq_history_points VALUES (?, ?, ?, ?)"
            " ON CONFLICT DO UPDATE SET value = excluded.value",
            (series_id, FINE.resolution_s, bucket, value),
        )


def _put_figures(url: str, kind: str, value: str) -> None:
    """Overwrite every kept worker process's figures."""
    if kind == "redis":
        client: Any = redis.Redis.from_url(REDIS_URL)
        figures = worker_keys(_prefix(url), "prod")[2]
        client.hset(figures, mapping={key: value for key in client.hkeys(figures)})
        client.close()
        return
    with sqlite3.connect(_path(url)) as db:
        db.execute("UPDATE tq_history_workers SET figures = ? WHERE ns = ?", (value, _prefix(url)))


def _kept_processes(url: str, kind: str) -> int:
    if kind == "redis":
        client: Any = redis.Redis.from_url(REDIS_URL)
        _, seen, figures = worker_keys(_prefix(url), "prod")
        kept = int(client.zcard(seen))
        assert int(client.hlen(figures)) == kept
        client.close()
        return kept
    with sqlite3.connect(_path(url)) as db:
        (kept,) = db.execute(
            "SELECT COUNT(*) FROM tq_history_workers WHERE ns = ?", (_prefix(url),)
        ).fetchone()
    return int(kept)


def _flush(url: str) -> None:
    """Everything the store held, gone (a Redis restart without persistence, a FLUSHDB of the store)."""
    cleanup: Any = open_store(url)
    cleanup.delete_prefix()
    cleanup.close()
    if url.startswith("sqlite"):
        delete: Any = open_history(url, tiers=SMALL)
        delete.delete_prefix()
        delete.close()
