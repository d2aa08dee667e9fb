"""Recording a profile's history from a poller and reading it back as spans, on Redis and SQLite: what a
dashboard opened after a restart draws, with gaps where nothing polled."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tqadmin.errors import NoDatabase
from tqadmin.files.access import Access
from tqadmin.plugin.models import QueueStats
from tqadmin.reading.recording import (
    LIVE,
    RECORD_EVERY_S,
    SPANS,
    HistoryReader,
    HistoryRecorder,
    activity,
    next_span,
)
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import TIERS
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.ledger import WorkerFigures

REDIS_URL = "redis://127.0.0.1:6379/0"
HOUR, DAY = SPANS[1], SPANS[2]
T0 = (
    1_780_000_200.0  # a bucket boundary of every tier, in the past: the store refuses clocks ahead of its own
)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["redis", "sqlite"])
def url(request: pytest.FixtureRequest, unique: str, tmp_path: Path) -> Iterator[str]:
    if request.param == "redis":
        url = f"{REDIS_URL}?prefix=rec{unique}"
        yield url
        cleanup: Any = open_store(url)
        cleanup.delete_prefix()
        cleanup.close()
    else:
        url = f"sqlite:///{tmp_path / 'store.db'}"
        open_store(url).close()  # the workers' store made the file
        yield url


def depth(name: str, messages: int) -> QueueStats:
    return QueueStats(name=name, messages=messages, ready=messages, unacked=0, consumers=1)


def send_email(done: int, failed: int = 0) -> TaskStats:
    stats = TaskStats(done=done, failed=failed)
    stats.run.record(0.25, times=done)
    return stats


def worker(done: int, failed: int = 0) -> list[WorkerFigures]:
    """The one worker process listed, with its cumulative figures (it started before any record)."""
    return [WorkerFigures("worker-1", T0 - 600, {"send_email": send_email(done, failed)})]


def record_depths(url: str, clock: Clock, depths: dict[float, int]) -> None:
    """A poller that saw ``orders`` at each depth, seconds after ``T0``."""
    recorder = HistoryRecorder(url, "prod", clock=clock)
    for t, messages in depths.items():
        clock.now = T0 + t
        recorder.record_queues([depth("orders", messages)])
    recorder.close()


def test_a_reader_opened_after_a_restart_draws_the_hour_the_poller_recorded(url: str) -> None:
    clock = Clock()
    recorder = HistoryRecorder(url, "prod", clock=clock)
    for minute in range(60):
        clock.now = T0 + 60 * minute
        recorder.record_queues([depth("orders", minute)])
        recorder.record_tasks(worker(done=100 * minute, failed=minute))
    recorder.close()  # the dashboard closes; another opens a minute later

    clock.now += 60
    reading = HistoryReader(url, "prod", clock=clock).read(HOUR, ["orders", "nothing-recorded"], width=12)
    assert list(reading.depths) == ["orders"]
    cells = reading.depths["orders"]
    assert len(cells) == 12 and cells[-1] == 59
    assert None not in cells and list(cells) == sorted(cells)  # rising: each cell its highest depth
    done = reading.tasks["send_email"]
    assert (done.done, done.failed, done.run.count) == (5900, 59, 5900)  # after its first sighting
    assert reading.skipped == 0
    assert reading.covered_s == 59 * 60


def test_a_cell_nobody_polled_is_a_gap_not_a_zero(url: str) -> None:
    clock = Clock()
    record_depths(url, clock, {0: 7, 600: 7, 3000: 7})  # polled at the start, at ten minutes, at fifty
    clock.now = T0 + 3599
    cells = HistoryReader(url, "prod", clock=clock).read(HOUR, ["orders"], width=6).depths["orders"]
    assert cells == (7, 7, None, None, None, 7)


def test_a_poller_writes_at_most_one_point_per_kind_every_five_seconds(url: str) -> None:
    clock = Clock()
    recorder = HistoryRecorder(url, "prod", clock=clock)
    for step in range(10):  # a dashboard polling every second
        clock.now = T0 + step
        recorder.record_queues([depth("orders", step)])
    history = open_history(url, access=Access.READ)
    points = history.queue_history("prod", "orders", TIERS[0])
    history.close()
    assert RECORD_EVERY_S == 5.0
    assert [f["messages"] for _, f in points] == [5]  # written at 0 s and 5 s, one 10 s bucket: the last


def test_the_coarser_spans_read_the_same_recording(url: str) -> None:
    clock = Clock()
    record_depths(url, clock, {3600 * hour: hour for hour in range(24)})
    clock.now = T0 + 23 * 3600 + 1
    day = HistoryReader(url, "prod", clock=clock).read(DAY, ["orders"], width=24).depths["orders"]
    assert [c for c in day if c is not None] == list(range(24))


def test_live_reads_nothing_from_the_store() -> None:
    reader = HistoryReader("redis://127.0.0.1:1", "prod")  # would fail if it connected
    assert reader.read(LIVE, ["orders"], width=12).depths == {}


def test_the_spans_cycle_live_hour_day_week_and_back() -> None:
    names = []
    span = LIVE
    for _ in range(5):
        names.append(span.name)
        span = next_span(span)
    assert names == ["live", "1h", "1d", "1w", "live"]


def test_activity_is_the_sum_of_the_buckets_after_the_spans_start() -> None:
    points = [(0, send_email(100)), (10, send_email(5)), (20, send_email(7)), (30, send_email(1))]
    done, covered = activity(points, since_s=10)
    assert (done.done, done.run.count, covered) == (8, 8, 20.0)  # from the bucket at the start to the newest


def test_a_recorder_on_an_embedded_file_nothing_created_writes_nothing_and_creates_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "home" / "store.db"
    recorder = HistoryRecorder(f"sqlite:///{path}", "prod", fresh=lambda _missing: "not created yet")
    recorder.record_queues([depth("orders", 3)])
    reader = HistoryReader(f"sqlite:///{path}", "prod", fresh=lambda _missing: "not created yet")
    assert reader.read(HOUR, ["orders"], width=4).depths == {}
    assert not path.parent.exists()
    with pytest.raises(NoDatabase):  # unless the caller says the file is one to wait for
        HistoryReader(f"sqlite:///{path}", "prod").read(HOUR, ["orders"], width=4)


def test_a_store_that_fails_is_logged_once_per_outage_and_never_stops_the_poller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    recorder = HistoryRecorder("redis://127.0.0.1:1/0", "prod", timeout_s=0.5, clock=clock)
    with caplog.at_level(logging.WARNING, logger="tqadmin.history"):
        for step in range(3):
            clock.now = T0 + 10 * step
            recorder.record_queues([depth("orders", 1)])
    failures = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert len(failures) == 1 and "profile prod" in failures[0]


def test_an_exporter_and_a_dashboard_recording_at_once_write_one_point_per_bucket_and_add_each_run_once(
    url: str,
) -> None:
    moments = [T0 + 10 * step + 0.5 for step in range(30)]

    def poller(depths: int) -> None:
        clock = Clock()
        recorder = HistoryRecorder(url, "prod", clock=clock)
        for step, now in enumerate(moments):
            clock.now = now
            recorder.record_queues([depth("orders", depths)])
            recorder.record_tasks(worker(done=10 * step))  # both read the same worker, each at its pace
        recorder.close()

    writers = [threading.Thread(target=poller, args=(n,)) for n in (10, 20)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    history = open_history(url, access=Access.READ)
    points = history.queue_history("prod", "orders", TIERS[0])
    tasks = history.task_history("prod", "send_email", TIERS[0])
    history.close()
    assert [t for t, _ in points] == [T0 + 10 * step for step in range(30)]  # one each, none twice
    assert {f["messages"] for _, f in points} <= {10, 20}
    assert len(tasks) == 30
    assert sum(s.done for _, s in tasks) == 290  # what the worker did after its first sighting, once


def test_a_recorder_two_hours_ahead_is_refused_said_once_and_the_last_hour_keeps_its_points(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    now = time.time()
    clock, ahead = Clock(), Clock()
    right = HistoryRecorder(url, "prod", clock=clock)
    wrong = HistoryRecorder(url, "prod", clock=ahead)  # a recorder on a host whose clock is 2 h fast
    with caplog.at_level(logging.WARNING, logger="tqadmin.history"):
        for minute in range(60):
            clock.now = now - 3600 + 60 * minute + 30
            right.record_queues([depth("orders", 5)])
            ahead.now = clock.now + 7200
            wrong.record_queues([depth("orders", 99)])
    right.close()
    wrong.close()
    clock.now = now
    cells = HistoryReader(url, "prod", clock=clock).read(HOUR, ["orders"], width=60).depths["orders"]
    assert cells == (5,) * 60  # every minute's point kept, none of the fast recorder's
    assert wrong.refused == 60 * len(TIERS)
    said = [r.getMessage() for r in caplog.records if "ahead" in r.getMessage()]
    assert len(said) == 1 and "profile prod" in said[0]


def test_an_unreadable_point_is_skipped_and_counted_and_every_other_series_drawn(url: str) -> None:
    record_depths(url, Clock(), {0: 7, 600: 8, 1200: 9})
    history = open_history(url)
    history.record_queues("prod", T0, [depth("emails", 3)])
    history.close()
    garble(url, "orders", T0 + 600)
    clock = Clock()
    clock.now = T0 + 1800
    reading = HistoryReader(url, "prod", clock=clock).read(HOUR, ["orders", "emails"], width=6)
    assert reading.depths["orders"] == (None, None, None, 7, None, 9)  # the garbled one is a gap
    assert reading.depths["emails"] == (None, None, None, 3, None, None)
    assert reading.skipped == 1


def garble(url: str, queue: str, at: float) -> None:
    """Garbage bytes in place of the fine point of ``queue`` at ``at``, as another program could write."""
    bucket = TIERS[0].bucket(at)
    if url.startswith("redis"):
        from tqadmin.store.history.redis import series_key

        client: Any = redis.Redis.from_url(REDIS_URL)
        key = series_key(url.partition("prefix=")[2], "prod", "q", TIERS[0], queue)
        client.zremrangebyscore(key, bucket, bucket)
        client.zadd(key, {b"%d:\xff\xfe\x00garbage" % bucket: bucket})
        client.close()
        return
    with sqlite3.connect(url.partition(":///")[2]) as db:
        db.execute(
            "UPDATE tq_history_points SET value = ? WHERE bucket = ? AND tier = ? AND series ="
            " (SELECT id FROM tq_history_series WHERE kind = 'q' AND name = ?)",
            (b"\xff\xfe\x00garbage", bucket, TIERS[0].resolution_s, queue),
        )
