"""Queue and task history on Redis and SQLite: one point per bucket whoever writes it, every tier filled,
trimmed, bounded, with gaps left as gaps. (Task activity with many writers, departed and returning workers,
clocks ahead and unreadable points: ``test_history_writers.py``.)"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tqadmin.errors import NoDatabase
from tqadmin.files.access import Access
from tqadmin.plugin.models import QueueStats
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history import redis as redis_history
from tqadmin.store.history.base import MAX_NAME_BYTES, TIERS, HistoryStore, Tier, size_bound
from tqadmin.store.history.points import (
    HISTORY_COARSENING,
    clamp_histogram,
    decode_task_point,
    encode_task_point,
)
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.histogram import Histogram
from tqadmin.telemetry.ledger import WorkerFigures
from tqadmin.telemetry.task_names import MAX_TASK_TYPE_CHARS

REDIS_URL = "redis://127.0.0.1:6379/0"
SMALL = (Tier(1, 6), Tier(5, 4), Tier(20, 3))  # a full cycle in 60 s of fake time
FINE, MIDDLE, COARSE = SMALL
HOSTILE = ['it\'s "quoted"', "new\nline", "{braces}:and:colons", "ünïcødé 队列 🐇", "a:1", "a", " "]

History = Callable[..., HistoryStore]


@pytest.fixture(params=["redis", "sqlite"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(kind: str, unique: str, tmp_path: Path) -> Iterator[str]:
    url = (
        f"{REDIS_URL}?prefix=hist{unique}"
        if kind == "redis"
        else f"sqlite:///{tmp_path / 'store.db'}?prefix=hist{unique}"
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


def queue(name: str, messages: int = 3, **figures: Any) -> QueueStats:
    return QueueStats(name=name, messages=messages, ready=messages - 1, unacked=1, consumers=2, **figures)


def tasks(done: int, wait_s: float = 0.05) -> TaskStats:
    stats = TaskStats(done=done, failed=1, dead_lettered=2)
    stats.wait.record(wait_s, times=done)
    stats.run.record(0.2, times=done)
    return stats


def worker(
    tasks_by_type: dict[str, TaskStats], worker_id: str = "w-1", started_at: float = 0.0
) -> WorkerFigures:
    """A worker process with ``tasks_by_type`` as its cumulative figures."""
    return WorkerFigures(worker_id, started_at, tasks_by_type)


def record_runs(store: HistoryStore, profile: str, now_s: float, runs: dict[str, int]) -> None:
    """A worker that ran ``runs`` of each task type in the bucket of ``now_s``: recorded once before (its
    first sighting, nothing added) and once with the runs (what was added), one point per tier."""
    store.record_tasks(profile, now_s, [worker({name: TaskStats() for name in runs})])
    store.record_tasks(profile, now_s, [worker({name: tasks(n) for name, n in runs.items()})])


def test_a_queue_point_reads_back_with_its_figures_and_none_for_what_the_broker_did_not_report(
    history: History,
) -> None:
    store = history()
    stats = queue("orders", 10, oldest_age_s=4.25, publish_rate=1.5, deliver_rate=None, ack_rate=0.1234)
    assert store.record_queues("prod", 1000.4, [stats]).series == 1
    [(t, figures)] = store.queue_history("prod", "orders", FINE)
    assert t == 1000
    assert figures == {
        "messages": 10,
        "ready": 9,
        "in_flight": 1,
        "oldest_age_s": 4.25,
        "publish_rate": 1.5,
        "ack_rate": 0.123,
    }


def test_a_task_point_keeps_what_the_bucket_added_with_mergeable_histograms(history: History) -> None:
    store = history()
    before = tasks(40)
    after = tasks(40)
    after.done += 60
    after.wait.record(2.0, times=60)
    after.run.record(0.2, times=60)
    store.record_tasks("prod", 1000, [worker({"send_email": before})])  # first sighting: nothing added
    store.record_tasks("prod", 1001, [worker({"send_email": after})])
    points = store.task_history("prod", "send_email", FINE)
    assert [(t, stats.done) for t, stats in points] == [(1000, 0), (1001, 60)]
    added = points[1][1]
    assert (added.failed, added.dead_lettered) == (0, 0)
    assert added.wait.count == added.run.count == 60
    assert added.wait.quantile(0.5) == pytest.approx(2.0, rel=0.09)  # stored coarser than live (9 %)


def test_two_writers_at_the_same_moment_make_one_point_the_last_one_wins(history: History) -> None:
    one, two = history(), history()
    one.record_queues("prod", 1000.1, [queue("orders", 5)])
    two.record_queues("prod", 1000.7, [queue("orders", 6)])
    for tier in SMALL:
        [(_, figures)] = one.queue_history("prod", "orders", tier)
        assert figures["messages"] == 6


def test_every_record_fills_the_coarser_tiers_with_the_latest_value_of_their_bucket(history: History) -> None:
    store = history()
    for t in range(20, 40):
        store.record_queues("prod", t, [queue("orders", t)])
    assert [(t, f["messages"]) for t, f in store.queue_history("prod", "orders", MIDDLE)] == [
        (20, 24),
        (25, 29),
        (30, 34),
        (35, 39),
    ]
    assert [(t, f["messages"]) for t, f in store.queue_history("prod", "orders", COARSE)] == [(20, 39)]


def test_each_tier_keeps_at_most_its_points_the_newest(history: History) -> None:
    store = history()
    for t in range(0, 200, 1):
        store.record_queues("prod", t, [queue("orders", t)])
        store.record_tasks("prod", t, [worker({"job": tasks(t)})])
    for tier in SMALL:
        points = store.queue_history("prod", "orders", tier)
        assert len(points) == tier.points
        assert points[-1][0] == tier.bucket(199)
        assert len(store.task_history("prod", "job", tier)) == tier.points


def test_a_late_writer_with_an_old_clock_adds_no_point_past_the_window(history: History) -> None:
    store = history()
    for t in range(100, 106):
        store.record_queues("prod", t, [queue("orders")])
    store.record_queues("prod", 10, [queue("orders")])  # a poller whose clock is far behind
    assert [t for t, _ in store.queue_history("prod", "orders", FINE)] == list(range(100, 106))


def test_buckets_nobody_polled_have_no_point(history: History) -> None:
    store = history()
    for t in (100, 101, 105):
        store.record_queues("prod", t, [queue("orders")])
    assert [t for t, _ in store.queue_history("prod", "orders", FINE)] == [100, 101, 105]
    assert store.queue_history("prod", "never-polled", FINE) == []
    assert store.task_history("prod", "never-run", FINE) == []


def test_profiles_and_kinds_are_separate(history: History) -> None:
    store = history()
    store.record_queues("prod", 100, [queue("orders", 1)])
    store.record_queues("staging", 100, [queue("orders", 2)])
    record_runs(store, "prod", 100, {"orders": 3})
    assert store.queue_history("prod", "orders", FINE)[0][1]["messages"] == 1
    assert store.queue_history("staging", "orders", FINE)[0][1]["messages"] == 2
    assert store.task_history("prod", "orders", FINE)[-1][1].done == 3
    assert store.task_history("staging", "orders", FINE) == []


def test_hostile_names_round_trip_each_to_its_own_series(history: History) -> None:
    store = history()
    profile = "p{r}o:f'ile\n"
    store.record_queues(profile, 100, [queue(name, i + 1) for i, name in enumerate(HOSTILE)])
    record_runs(store, profile, 100, {name: i + 1 for i, name in enumerate(HOSTILE)})
    for i, name in enumerate(HOSTILE):
        [(_, figures)] = store.queue_history(profile, name, FINE)
        assert figures["messages"] == i + 1
        [(_, stats)] = store.task_history(profile, name, COARSE)
        assert stats.done == i + 1


def test_past_max_series_new_names_are_not_recorded_in_name_order(history: History) -> None:
    store = history(max_series=3)
    assert store.record_queues("prod", 100, [queue(name) for name in "edcba"]).series == 3
    assert [n for n in "abcde" if store.queue_history("prod", n, FINE)] == ["a", "b", "c"]
    # known ones keep being recorded, a newcomer waits for a known one to be forgotten
    assert store.record_queues("prod", 101, [queue(name) for name in "0bc"]).series == 2
    assert store.queue_history("prod", "0", FINE) == []
    later = 101 + COARSE.span_s + 1
    assert store.record_queues("prod", later, [queue(name) for name in "0bc"]).series == 3
    assert store.queue_history("prod", "0", FINE) != []
    assert store.queue_history("prod", "a", FINE) == []  # forgotten with its points


def test_names_too_long_to_bound_are_not_recorded(history: History) -> None:
    store = history()
    long_name = "x" * (MAX_NAME_BYTES + 1)
    assert store.record_queues("prod", 100, [queue(long_name), queue("ok")]).series == 1
    assert store.queue_history("prod", long_name, FINE) == []


def test_every_task_type_a_job_may_have_is_recorded_however_wide_its_characters(history: History) -> None:
    store = history()
    widest = "🐇" * MAX_TASK_TYPE_CHARS  # four bytes each
    record_runs(store, "prod", 100, {widest: 3})
    assert [figures.done for _, figures in store.task_history("prod", widest, FINE)] == [3]


def test_a_reader_of_a_missing_sqlite_file_raises_no_database_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "store.db"
    with pytest.raises(NoDatabase):
        open_history(f"sqlite:///{path}", access=Access.READ)
    assert not path.parent.exists()


def test_stored_histograms_keep_their_top_buckets() -> None:
    wide = Histogram()
    wide.record(1e-5, times=10)  # ten orders of magnitude below the rest
    wide.record(100.0, times=90)
    clamped = clamp_histogram(wide, keep=50)
    assert max(clamped.buckets) - min(clamped.buckets) < 50
    assert clamped.count == wide.count
    assert clamped.quantile(0.99) == wide.quantile(0.99)


def test_a_stored_histogram_keeps_percentiles_within_nine_percent_at_an_eighth_of_the_buckets() -> None:
    live = Histogram()
    for i in range(1, 3001):
        live.record(0.001 * 1.003**i)  # a millisecond to eight seconds
    stored = decode_task_point(encode_task_point(TaskStats(wait=live))).wait
    assert stored.count == live.count
    assert len(stored.buckets) <= len(live.buckets) / HISTORY_COARSENING + 2  # both ends partly filled
    for q in (0.5, 0.9, 0.99, 0.999):
        assert stored.quantile(q) == pytest.approx(live.quantile(q), rel=0.09)


def test_the_default_bound_for_two_thousand_queues_and_task_types() -> None:
    assert size_bound(2000) == size_bound(2000, tiers=TIERS)
    assert size_bound(2000) == 2000 * (size_bound(1))
    assert size_bound(0) == 0


def _stored_bytes(store_url: str, kind: str) -> int:
    if kind == "redis":
        client: Any = redis.Redis.from_url(REDIS_URL)
        prefix = store_url.partition("prefix=")[2]
        keys = list(client.scan_iter(match="{" + prefix + ":*", count=1000))
        return sum(int(client.memory_usage(key, samples=0)) for key in keys)
    path = Path(store_url.partition(":///")[2].partition("?")[0])
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


@pytest.mark.slow  # a scale test: a whole tier cycle of the most series a store keeps
def test_a_full_tier_cycle_of_max_series_queues_and_tasks_stays_under_the_size_bound(
    history: History, url: str, kind: str
) -> None:
    max_series, listed, max_departed = 200, 2, 4
    store = history(max_series=max_series, max_departed=max_departed)
    names = [f"queue-{i:04d}-" + "n" * 40 for i in range(max_series + 50)]  # 50 past the guard
    for t in range(0, COARSE.span_s + 5):
        store.record_queues("prod", t, [queue(n, t, publish_rate=t / 3, oldest_age_s=t * 1.1) for n in names])
        # two workers, each restarting every 2 s: departed processes pile up past what is kept
        figures = {n: tasks(t % 2 + 1, wait_s=0.001 * (t + 1)) for n in names}
        store.record_tasks(
            "prod", t, [worker(figures, f"w-{i}", started_at=t - t % 2) for i in range(listed)]
        )
    assert len(store.queue_history("prod", names[0], FINE)) == FINE.points
    assert store.queue_history("prod", names[-1], FINE) == []
    assert len(store.task_history("prod", names[0], FINE)) == FINE.points
    used = _stored_bytes(url, kind)
    assert 0 < used < size_bound(max_series, tiers=SMALL, workers=listed + max_departed)


def test_the_guard_holds_across_the_scripts_of_one_redis_record(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_history, "SCRIPT_CHUNK", 2)  # five names: three scripts in one pipeline
    store = history(max_series=3)
    assert store.record_queues("prod", 100, [queue(name) for name in "edcba"]).series == 3
    assert [n for n in "abcde" if store.queue_history("prod", n, FINE)] == ["a", "b", "c"]


def test_a_reader_shares_the_state_stores_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    state = open_store(url)  # the file the workers' store made
    writer = open_history(url, tiers=SMALL)
    writer.record_queues("prod", 100, [queue("orders", 7)])
    reader = open_history(url, tiers=SMALL, access=Access.READ)
    assert reader.queue_history("prod", "orders", FINE)[0][1]["messages"] == 7
    for opened in (reader, writer, state):
        opened.close()


def test_many_series_are_read_in_one_call_and_the_recorded_task_types_are_listed(history: History) -> None:
    store = history()
    store.record_queues("prod", 100, [queue("a", 1), queue("b", 2)])
    record_runs(store, "prod", 100, {"send": 3, "bill": 4})
    read = store.queue_histories("prod", ["a", "b", "never-recorded"], FINE)
    assert {name: [f["messages"] for _, f in points] for name, points in read.items()} == {"a": [1], "b": [2]}
    assert store.task_types("prod") == ["bill", "send"]
    assert store.task_types("staging") == []
    assert [s.done for _, s in store.task_histories("prod", ["bill"], FINE)["bill"]] == [4]
