"""Heartbeats on both stores: live and dead workers with ages, bounded history, windows from two readings."""

from __future__ import annotations

import time

from storekit import StoreFactory

from tqadmin.store.completion.base import Retention, StateStore
from tqadmin.telemetry.counters import Telemetry
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.telemetry.window import window_stats

STARTED_AT = time.time() - 60  # one process per worker id: its start time never changes


def snapshot(
    worker: str, telemetry: Telemetry | None = None, current: tuple[str, ...] = ()
) -> WorkerSnapshot:
    now = time.time()
    stats = telemetry.read() if telemetry else {}
    return WorkerSnapshot(worker, "host-1", 4242, ("orders",), STARTED_AT, now, current, stats)


def test_a_beating_worker_is_listed_alive_with_its_snapshot_and_a_fresh_age(store: StateStore) -> None:
    telemetry = Telemetry()
    telemetry.finished("orders", "charge", 0.2, ok=True)
    store.beat(snapshot("w-1", telemetry, ("job-9",)), ttl_s=30)
    [record] = store.workers()
    assert record.alive
    assert 0 <= record.age_s < 30
    assert record.snapshot.worker_id == "w-1"
    assert record.snapshot.current_job == "job-9"
    assert record.snapshot.totals().done == 1


def test_a_worker_that_stopped_beating_is_listed_dead_with_its_age(store: StateStore) -> None:
    store.beat(snapshot("w-live"), ttl_s=30)
    store.beat(snapshot("w-gone"), ttl_s=0.05)
    time.sleep(0.2)
    records = {r.snapshot.worker_id: r for r in store.workers()}
    assert records["w-live"].alive
    assert not records["w-gone"].alive
    assert records["w-gone"].age_s >= 0.1


def test_dead_workers_are_forgotten_after_the_retention(stores: StoreFactory) -> None:
    store = stores.make(Retention(dead_worker_s=0.1))
    store.beat(snapshot("w-old"), ttl_s=0.01)
    time.sleep(0.3)
    store.beat(snapshot("w-new"), ttl_s=30)
    assert [r.snapshot.worker_id for r in store.workers()] == ["w-new"]


def test_a_window_subtracts_the_reading_at_its_start_from_the_latest(stores: StoreFactory) -> None:
    store = stores.make(Retention(history_step_s=0))
    telemetry = Telemetry()
    for _ in range(5):
        telemetry.finished("orders", "charge", 0.1, ok=True)
    store.beat(snapshot("w-1", telemetry), ttl_s=30)  # 5 done before the window
    # the window starts between the beats as long as reading it takes less than its 3 s after the second
    # (it had 0.15 s: a loaded machine's turn outlasts that)
    window_s = 3.0
    time.sleep(window_s + 0.5)
    for _ in range(7):
        telemetry.started("orders", "charge", 0.05)
        telemetry.finished("orders", "charge", 0.1, ok=False)
    store.beat(snapshot("w-1", telemetry), ttl_s=30)
    now_s, histories = store.history(window_s)
    [history] = histories
    assert history.baseline is not None
    assert history.baseline.at_s <= now_s - window_s < history.latest.at_s
    stats = window_stats(now_s, window_s, histories)
    charge = stats.task_types["charge"]
    assert (charge.done, charge.failed) == (0, 7)
    assert stats.failure_rate == 1.0


def test_history_is_capped_per_worker(stores: StoreFactory) -> None:
    store = stores.make(Retention(history_step_s=0, history_cap=3))
    telemetry = Telemetry()
    for _ in range(6):
        telemetry.finished("orders", "charge", 0.1, ok=True)
        store.beat(snapshot("w-1", telemetry), ttl_s=30)
        time.sleep(0.01)
    _, [history] = store.history(3600)
    assert history.baseline is not None
    assert history.baseline.snapshot.totals().done == 4  # the oldest of the three kept readings


def test_workers_that_beat_before_the_window_are_left_out_of_it(store: StateStore) -> None:
    store.beat(snapshot("w-early"), ttl_s=0.01)
    time.sleep(0.2)
    store.beat(snapshot("w-now"), ttl_s=30)
    _, histories = store.history(0.1)
    assert [h.latest.snapshot.worker_id for h in histories] == ["w-now"]
