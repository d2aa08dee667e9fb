"""Celery's workers and task latencies from a real Celery worker with task events on (``-E``), read by a
listener that only listens: the worker alive with its current task, per task name the run times the events
report in the same histograms as tqadmin's own, failures and retries, and the worker dead within its
heartbeat window once SIGKILLed. Without events the worker is still listed, by its control queue."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from framework_brokers import HERE, wait_for
from tqadmin_redis.admin import RedisAdmin

from tests.conftest import REDIS_URL
from tests.support.rabbit_queues import amqp_url, api, vhost_of_its_own
from tqadmin.frameworks.celery_events import events_in_envelope
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.kit.listening import KEPT
from tqadmin.plugin.workers import ForeignWorker, WorkerReading
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.histogram import Histogram

pytestmark = pytest.mark.redis

Tq = Callable[..., tuple[int, Any, str]]


@contextmanager
def celery_events_worker(node: str, queue: str, broker: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``celery worker -E`` of :mod:`celery_events_app`, heartbeats on, a prefork pool of 2: its main
    process sends the task events from its own event loop (a solo pool blocks that loop, and the events, for
    as long as a task runs; a threads pool can leave the last ones buffered until the next)."""
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "TQT_CELERY_BROKER": broker, "TQT_CELERY_QUEUE": queue}
    command = [sys.executable, "-m", "celery", "-A", "celery_events_app", "worker", "-E"]
    command += ["--pool=prefork", "-c", "2"]
    command += ["-Q", queue, "-n", node, "--without-gossip", "--without-mingle", "-l", "INFO"]
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, env=env, stdout=out, stderr=out, cwd=log.parent, start_new_session=True
        )
    try:
        wait_for(lambda: b" ready." in log.read_bytes(), "the Celery worker to start", 60)
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the pool's children too
        process.wait(30)


def app_for(broker: str, queue: str) -> Any:
    os.environ.update(TQT_CELERY_BROKER=broker, TQT_CELERY_QUEUE=queue)
    sys.modules.pop("celery_events_app", None)  # a fresh app: one made for another broker keeps its pool
    sys.path.insert(0, str(HERE))
    try:
        import celery_events_app
    finally:
        sys.path.remove(str(HERE))
    celery_events_app.app.conf.update(broker_url=broker, task_default_queue=queue)
    return celery_events_app


class RuntimesSeen:
    """The ``runtime`` of each ``task-succeeded`` Celery publishes on Redis for the tasks ``of`` (ids), as
    redis-py reads them."""

    def __init__(self, node: str, of: set[str]) -> None:
        self.node, self.of, self.runtimes, self._stop = node, of, Histogram(), threading.Event()
        self._pubsub = redis.Redis.from_url(REDIS_URL).pubsub(ignore_subscribe_messages=True)
        self._pubsub.psubscribe("/0.celeryev/*")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self._pubsub.get_message(timeout=0.2)
            for event in events_in_envelope(message["data"]) if message else ():
                if (event["type"], event["hostname"]) == ("task-succeeded", self.node) and event[
                    "uuid"
                ] in self.of:
                    self.runtimes.record(event["runtime"])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._pubsub.close()


@pytest.fixture
def celery_keys(unique: str) -> Iterator[None]:
    """Afterwards: the test's keys deleted, and its workers' control queue bindings, which a killed worker
    leaves behind as a crash does."""
    yield
    client = redis.Redis.from_url(REDIS_URL)
    stale = [m for m in client.smembers("_kombu.binding.celery.pidbox") if unique.encode() in m]
    if stale:
        client.srem("_kombu.binding.celery.pidbox", *stale)
    for key in client.scan_iter(f"*{unique}*"):
        client.delete(key)
    client.close()


def celery(reading: WorkerReading, node: str) -> ForeignWorker | None:
    return next((w for w in reading.workers if (w.framework, w.name) == ("celery", node)), None)


def tasks_heard(admin: RedisAdmin) -> Mapping[str, TaskStats]:
    return admin.framework_workers().tasks["celery"]


def test_a_celery_worker_on_redis_with_task_events_is_alive_busy_timed_and_dead_once_killed(
    celery_keys: None, isolated_env: Any, unique: str, tmp_path: Path
) -> None:
    node, queue = f"tqt-{unique}@tests", f"tqt-{unique}-celery"
    tasks = app_for(REDIS_URL, queue)
    naps = {f"tqt-{unique}-nap-{n}": 0.05 * n for n in range(1, 12)}  # runtimes from 0.05 to 0.55 s
    seen = RuntimesSeen(node, set(naps))
    admin = RedisAdmin(BrokerConfig(REDIS_URL, celery_events=True))
    release = tmp_path / "release"
    try:
        with celery_events_worker(node, queue, REDIS_URL, tmp_path / "celery.log") as worker:
            # the first reading listens one heartbeat interval; a loaded machine may send that beat later
            first = wait_for(
                lambda: (w := celery(admin.framework_workers(), node)) and w.alive and w, "alive"
            )
            assert (first.alive, first.state, first.pid) == (True, "idle", worker.pid)
            holding = tasks.hold.delay(str(release)).id
            busy = wait_for(
                lambda: (w := celery(admin.framework_workers(), node)) and w.current_jobs and w, "busy"
            )
            assert [(j.id, j.task) for j in busy.current_jobs] == [(holding, "events.hold")]
            release.touch()  # busy until seen so, however late the look
            for task_id, seconds in naps.items():
                tasks.nap.apply_async((seconds,), task_id=task_id)
            tasks.boom.delay()
            tasks.flaky.delay()
            stats = wait_for(
                lambda: (s := admin.framework_workers().tasks["celery"]).get("events.flaky")
                and s["events.flaky"].done == 1 and s["events.nap"].done == 11 and s["events.hold"].done
                and s,
                "every task's last event", 60,
                seen=lambda: (
                    {t: (c.done, c.failed, c.retried) for t, c in tasks_heard(admin).items()},
                    (tmp_path / "celery.log").read_text()[-1500:],
                ),
            )  # fmt: skip
            nap, boom, flaky = stats["events.nap"], stats["events.boom"], stats["events.flaky"]
            assert (nap.failed, boom.done, boom.failed, flaky.failed, flaky.retried) == (0, 0, 1, 1, 1)
            assert nap.wait.count == 11 and admin.framework_workers().wait_from == {"celery": "sent"}
            wait_for(lambda: seen.runtimes.count == 11, "the events redis-py saw")
            ours, theirs = nap.run.percentiles(), seen.runtimes.percentiles()
            for p in ("p50", "p95", "p99"):
                assert ours[p] == pytest.approx(theirs[p], rel=0.02), p  # the same events, one histogram

            os.killpg(worker.pid, signal.SIGKILL)
            # dead by the age of its last beat (the reason says 2 x its interval): the wait is only a deadline
            dead = wait_for(
                lambda: (w := celery(admin.framework_workers(), node)) and not w.alive and w, "dead", 60
            )
            assert (
                dead.dead_reason == "no worker-heartbeat in 2 x its 2 s interval" and dead.current_jobs == ()
            )
    finally:
        seen.close()
        admin.close()


def test_without_task_events_a_celery_worker_is_listed_by_its_control_queue_alive_unknown(
    celery_keys: None, isolated_env: Any, unique: str, tmp_path: Path, tq: Tq
) -> None:
    node, queue = f"tqt-{unique}@tests", f"tqt-{unique}-celery"
    with celery_events_worker(node, queue, REDIS_URL, tmp_path / "celery.log"):
        code, doc, _ = tq("workers")
    (shown,) = [w for w in doc["workers"] if w["name"] == node]
    assert (code, shown["framework"], shown["alive"], shown["heartbeat_age_s"]) == (0, "celery", None, None)
    assert shown["dead_reason"] is None  # null where nothing can tell, never a guess


@pytest.fixture
def vhost() -> Iterator[str]:
    """A vhost of the test's own (Celery's queues and exchanges go with it): its listings stay quick whatever
    the shared broker's "/" holds."""
    with vhost_of_its_own() as name:
        yield name


@pytest.mark.rabbitmq
def test_a_celery_worker_on_rabbitmq_with_task_events_is_read_through_one_exclusive_queue_of_its_own(
    isolated_env: Any, unique: str, tmp_path: Path, vhost: str
) -> None:
    from tqadmin_rabbitmq.admin import RabbitMQAdmin

    node, queue, broker = f"tqt-{unique}@tests", f"tqt-{unique}-celery", amqp_url(vhost)
    tasks = app_for(broker, queue)
    admin = RabbitMQAdmin(BrokerConfig(broker, celery_events=True))
    try:
        with celery_events_worker(node, queue, broker, tmp_path / "celery.log") as worker:
            first = wait_for(
                lambda: (w := celery(admin.framework_workers(), node)) and w.alive and w, "the worker, alive"
            )
            assert (first.alive, first.state, first.pid) == (True, "idle", worker.pid)
            listener = (admin._celery.queue if admin._celery else None) or ""
            declared = management_queue(vhost, listener)
            assert declared is not None and (declared["exclusive"], declared["auto_delete"]) == (True, True)
            assert declared["arguments"] == {"x-max-length": 10_000, "x-overflow": "drop-head"}
            release = tmp_path / "release"
            holding = tasks.hold.delay(str(release)).id
            busy = wait_for(
                lambda: (w := celery(admin.framework_workers(), node)) and w.current_jobs and w, "busy"
            )
            assert [(j.id, j.task) for j in busy.current_jobs] == [(holding, "events.hold")]
            release.touch()  # busy until seen so, however late the look
            tasks.boom.delay()
            stats = wait_for(
                lambda: (s := admin.framework_workers().tasks["celery"]).get("events.boom") and s,
                "boom's end",
            )
            wait_for(
                lambda: (s := admin.framework_workers().tasks["celery"].get("events.hold")) and s.done,
                "hold's end",
            )
            held = admin.framework_workers().tasks["celery"]["events.hold"]
            reported = runtime_logged(tmp_path / "celery.log", holding)  # the runtime Celery's event gave
            assert held.run.percentiles()["p50"] == pytest.approx(reported, rel=0.02)
            assert stats["events.boom"].failed == 1

            os.killpg(worker.pid, signal.SIGKILL)
            dead = wait_for(
                lambda: (w := celery(admin.framework_workers(), node)) and not w.alive and w, "dead", 60
            )
            assert dead.dead_reason in (
                "no worker-heartbeat in 2 x its 2 s interval",
                "its control queue has no consumer",
            )
    finally:
        admin.close()
    assert management_queue(vhost, listener) is not None  # kept for the next admin (a reconnect)
    KEPT.close_all()
    wait_for(lambda: management_queue(vhost, listener) is None, "the listener's queue gone with it")


def runtime_logged(log: Path, task_id: str) -> float:
    """The runtime the Celery worker reported for ``task_id`` in its log (``succeeded in 3.0012s``)."""
    found = re.search(rf"\[{task_id}\] succeeded in ([0-9.]+)s", log.read_text(errors="replace"))
    assert found is not None, f"no success of {task_id} in the worker's log"
    return float(found[1])


def management_queue(vhost: str, name: str) -> dict[str, Any] | None:
    """The queue as RabbitMQ's management API shows it, ``None`` once it is gone."""
    try:
        return dict(api(f"queues/{vhost}/{name}"))
    except httpx.HTTPStatusError as error:
        if error.response.status_code == 404:
            return None
        raise


def saw(stats: dict[str, Any] | None) -> dict[str, Any]:
    """The Celery task names a ``tqadmin stats --json`` document shows figures for."""
    return dict((stats or {}).get("frameworks", {}).get("celery", {}).get("task_types", {}))


def test_stats_with_celery_events_on_counts_the_tasks_it_saw_under_frameworks(
    celery_keys: None, isolated_env: Any, unique: str, tmp_path: Path, tq: Tq, monkeypatch: pytest.MonkeyPatch
) -> None:
    node, queue = f"tqt-{unique}@tests", f"tqt-{unique}-celery"
    tasks = app_for(REDIS_URL, queue)
    monkeypatch.setenv("TQADMIN_CELERY_EVENTS", "1")
    stop = threading.Event()

    def traffic() -> None:
        while not stop.wait(0.1):
            tasks.nap.delay(0.01)

    try:
        with celery_events_worker(node, queue, REDIS_URL, tmp_path / "celery.log"):
            sender = threading.Thread(target=traffic, daemon=True)
            sender.start()
            log = tmp_path / "celery.log"
            wait_for(lambda: log.read_bytes().count(b" succeeded in ") >= 3, "the worker running the traffic")
            # one stats listens 2.5 s: on a loaded machine that listen may see no task end, so ask again
            code, doc, _ = wait_for(
                lambda: (r := tq("stats")) and (r[0] != 0 or "events.nap" in saw(r[1])) and r,
                "a stats with naps",
                60,
            )
            stop.set()
            sender.join(5)
        celery = doc["frameworks"]["celery"]
        assert (
            code == 0
            and celery["wait_from"] in ("sent", "received")
            and "events.nap" not in doc["task_types"]
        )
        nap = celery["task_types"]["events.nap"]
        assert nap["done"] >= 1 and nap["run"]["p50"] is not None  # what one heartbeat interval saw
    finally:
        stop.set()
