"""History and the exporter's counters over real `tqadmin worker` processes, with more than one writer and
a store that loses keys: on the embedded SQLite broker and store, and on Redis (broker and store).

The exporter (its poller, polling in a thread) and a dashboard (the app, under Pilot) record one profile's
history at once, one worker having departed before the dashboard opened: the hour's activity is the jobs
that ran. A worker whose heartbeat keys are deleted comes back at its next heartbeat: the exporter's totals
do not count it twice. Both recorders run on one clock twenty times faster than the wall's, fifty minutes
behind it (a record every 5 s of that clock is one every quarter second; the store refuses clocks ahead of
its own).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from redis_pipeline import RedisPipeline, redis_pipeline_fixture  # noqa: F401 - the fixture
from textual.pilot import Pilot
from worker_harness import REDIS_URL, Pipeline, SQLitePipeline, sqlite_pipeline_fixture  # noqa: F401

from tqadmin.config import Overrides, Settings, resolve
from tqadmin.exporter.polling import ProfilePoller
from tqadmin.reading.recording import SPANS, HistoryReader
from tqadmin.store import open_store
from tqadmin.store.keys import heartbeat_keys
from tqadmin.telemetry.counters import TaskStats
from tqadmin.tui.app import TqadminApp

pytestmark = pytest.mark.anyio
WORKER = ("--concurrency", "2", "--heartbeat", "0.5")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite_pipeline", pytest.param("redis_pipeline", marks=pytest.mark.redis)])
def pipeline(request: pytest.FixtureRequest) -> Pipeline:
    """Workers on the embedded broker and store, or on Redis (broker and store)."""
    chosen: Pipeline = request.getfixturevalue(request.param)
    return chosen


class FastClock:
    """The wall clock twenty times faster, from fifty minutes ago."""

    def __init__(self) -> None:
        self.origin = time.time()
        self.start = self.origin - 3000

    def __call__(self) -> float:
        return self.start + 20 * (time.time() - self.origin)


@contextlib.contextmanager
def exporter(settings: Settings, clock: Callable[[], float]) -> Iterator[ProfilePoller]:
    """The exporter's poller of the profile, polling every 0.1 s in a thread until the block ends."""
    poller = ProfilePoller(settings, 0.1, clock=clock)
    stop = threading.Event()
    thread = threading.Thread(target=poller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield poller
    finally:
        stop.set()
        thread.join(30)
        poller.close()


def exported(poller: ProfilePoller) -> int:
    return poller.reading().tasks.get("count", TaskStats()).done


def seen(poller: ProfilePoller) -> None:
    """Until a poll of the exporter listed a worker: that poll recorded it (its first sighting)."""
    wait(lambda: sum(poller.reading().workers.values()) > 0, "the exporter to list the worker")


def settle(poller: ProfilePoller, done: int, clock: Callable[[], float]) -> None:
    """Until the exporter's totals show ``done`` runs, then two more records' worth of its clock."""
    wait(lambda: exported(poller) == done, f"the exporter to count {done} runs")
    then = clock()
    wait(lambda: clock() > then + 12, "two more records")


def wait(condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.05)


async def until(pilot: Pilot[Any], condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        await pilot.pause(0.05)


def listed(pipeline: Pipeline) -> list[str]:
    store = open_store(pipeline.store_url)
    try:
        return [record.snapshot.worker_id for record in store.workers()]
    finally:
        store.close()


def forget_workers(pipeline: Pipeline, worker_ids: list[str]) -> None:
    """Delete the workers' heartbeat records, as a store that lost its keys (or their retention) does."""
    if isinstance(pipeline, SQLitePipeline):
        with contextlib.closing(sqlite3.connect(pipeline.file, timeout=30)) as db, db:
            db.executemany("DELETE FROM tq_workers WHERE worker_id = ?", [(w,) for w in worker_ids])
        return
    client: Any = redis.Redis.from_url(REDIS_URL)
    latest, seen, ttl = heartbeat_keys(pipeline.store_prefix)
    client.hdel(latest, *worker_ids)
    client.zrem(seen, *worker_ids)
    client.hdel(ttl, *worker_ids)
    client.close()


def hour_done(settings: Settings, clock: Callable[[], float]) -> int:
    reading = HistoryReader(settings.store_url, "default", clock=clock).read(SPANS[1], [], width=12)
    return reading.tasks.get("count", TaskStats()).done


def jobs(pipeline: Pipeline, name: str, n: int) -> None:
    pipeline.publish([{"task_type": "count", "id": f"{name}-{i}"} for i in range(n)])
    ran = lambda: sum(1 for job in pipeline.effects() if job.startswith(f"{name}-"))  # noqa: E731
    pipeline.wait_for(lambda: ran() == n, 60, f"the {name} jobs")


async def test_the_exporter_and_a_dashboard_recording_at_once_count_each_job_once(pipeline: Pipeline) -> None:
    settings = resolve(Overrides(broker_url=pipeline.broker_url, store_url=pipeline.store_url))
    clock = FastClock()
    pipeline.start(*WORKER)
    pipeline.wait_for(lambda: len(listed(pipeline)) == 1, 60, "the first worker's heartbeat")
    [departed] = listed(pipeline)
    with exporter(settings, clock) as poller:
        seen(poller)  # the worker recorded before it runs anything
        jobs(pipeline, "before", 30)
        settle(poller, 30, clock)
        pipeline.stop_all()  # it departs, and its record ages out of the store
        forget_workers(pipeline, [departed])
        pipeline.start(*WORKER)
        pipeline.wait_for(lambda: len(listed(pipeline)) == 1, 60, "the second worker's heartbeat")
        app = TqadminApp(settings=settings, cron=None, refresh_s=0.05, clock=clock)
        async with app.run_test() as pilot:  # a dashboard that never saw the departed worker
            await until(pilot, lambda: app.telemetry is not None, "the dashboard's first telemetry")
            jobs(pipeline, "after", 40)
            settle(poller, 70, clock)
            await until(
                pilot,
                lambda: app.telemetry is not None and sum(w.done for w in app.telemetry.workers) == 40,
                "the dashboard to see the second worker's runs",
            )
            then = clock()  # two minutes of both recording (24 records each)
            await until(pilot, lambda: clock() > then + 120, "two minutes more of both recording")
    assert hour_done(settings, clock) == 70


async def test_a_worker_whose_keys_the_store_lost_is_not_counted_twice(pipeline: Pipeline) -> None:
    settings = resolve(Overrides(broker_url=pipeline.broker_url, store_url=pipeline.store_url))
    clock = FastClock()
    pipeline.start(*WORKER)
    pipeline.wait_for(lambda: len(listed(pipeline)) == 1, 60, "the worker's heartbeat")
    with exporter(settings, clock) as poller:
        seen(poller)
        jobs(pipeline, "before", 25)
        settle(poller, 25, clock)
        forget_workers(pipeline, listed(pipeline))  # between two heartbeats
        wait(lambda: not poller.reading().workers, "a poll that lists no worker")
        assert exported(poller) == 25  # gone, its counts kept
        wait(lambda: sum(poller.reading().workers.values()) == 1, "the worker's next heartbeat")
        assert exported(poller) == 25  # back: its counts its own again, never twice
        jobs(pipeline, "after", 10)
        settle(poller, 35, clock)
    assert hour_done(settings, clock) == 35
