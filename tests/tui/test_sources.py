"""The dashboard's telemetry and cron panels from readings of the real state store (SQLite here, Redis for
cron)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tqadmin.config import Settings
from tqadmin.errors import TqadminError
from tqadmin.reading.reader import ProfileReader
from tqadmin.reading.reading import Part
from tqadmin.store.completion.sqlite import SQLiteStore
from tqadmin.store.factory import open_store
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.tui.sources import BOUNDS_S, StoreTelemetry, buckets, cron_view


def test_worker_heartbeats_become_the_telemetry_panel_and_the_workers_screen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    stats = TaskStats(done=40, failed=2)
    for value in (0.004, 0.004, 0.3, 2.5):
        stats.run.record(value)
        stats.wait.record(value * 2)
    now = time.time()
    snapshot = WorkerSnapshot(
        "w-1", "host", 1, ("images",), now - 5, now, ("job-7",), {("images", "resize_image"): stats}
    )
    store = open_store(url)
    try:
        store.beat(snapshot, ttl_s=30)
    finally:
        store.close()
    view = StoreTelemetry(Settings(store_url=url)).read()
    (worker,) = view.workers
    assert (worker.id, worker.queue, worker.current_job, worker.alive) == ("w-1", "images", "job-7", True)
    (task_type,) = view.task_types
    assert (task_type.name, task_type.done, task_type.failed) == ("resize_image", 40, 2)
    assert task_type.run.p50 is not None and sum(n for _, n in task_type.run.buckets) == 4
    assert 0 < view.failure_rate < 1


def test_a_store_of_the_callers_own_clock_is_read_in_place_of_the_url(tmp_path: Path) -> None:
    """``connect`` hands the reader an open store (a test's, on a frozen clock): its ages are that clock's."""
    now = [1_780_000_000.0 - 90]
    store = SQLiteStore(tmp_path / "state.db", clock=lambda: now[0])
    store.beat(WorkerSnapshot("w-1", "host", 1, ("images",), now[0] - 60, now[0]), ttl_s=30)
    now[0] += 90
    view = StoreTelemetry(Settings(store_url="sqlite:///nowhere/state.db"), connect=lambda: store).read()
    (worker,) = view.workers
    assert (worker.id, worker.heartbeat_age_s, worker.alive) == ("w-1", 90.0, False)


def test_histograms_are_regrouped_on_shared_bounds() -> None:
    stats = TaskStats()
    for value in (0.0, 0.0015, 0.3, 500.0):
        stats.run.record(value)
    grouped = dict(buckets(stats.run))
    assert tuple(grouped) == BOUNDS_S
    assert grouped[0.001] == 1 and grouped[0.002] == 1 and grouped[0.5] == 1 and grouped[60.0] == 1
    assert buckets(TaskStats().run) == ()


def test_an_unreachable_store_is_an_error_the_panel_can_show() -> None:
    with pytest.raises(TqadminError):
        StoreTelemetry(Settings(store_url="redis://127.0.0.1:1/0", timeout_s=0.5)).read()


@pytest.mark.redis
def test_the_cron_source_reads_leader_and_token_from_redis(unique: str) -> None:
    reader = ProfileReader(Settings(store_url="redis://127.0.0.1:6379/0"), cron_namespace=f"tui{unique}")
    reading = reader.read({Part.CRON})
    reader.close()
    view = cron_view(reading.cron)
    assert view.leader is None
    assert view.schedules == ()
