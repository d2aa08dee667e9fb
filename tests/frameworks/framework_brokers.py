"""Helpers for the tests that publish through the real Celery and Dramatiq into the local RabbitMQ, and that
write other frameworks' registries into Redis as those frameworks do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pika
import redis
from celery_tasks import AMQP_URL, make_app

from tests.conftest import REDIS_URL, AmqpQueues

HERE = Path(__file__).parent
SHARED_SETS = (
    b"rq:queues",
    b"rq:workers",
    b"queues",
    b"processes",
    b"paused",
)  # RQ's and Sidekiq's shared sets
SHARED_SORTED_SETS = (b"dead", b"retry", b"schedule")  # Sidekiq's, shared by every queue
API = "http://127.0.0.1:15672/api"  # RabbitMQ's management API
AUTH = ("guest", "guest")


def wait_for(
    condition: Callable[[], Any],
    what: str,
    timeout_s: float = 60.0,
    seen: Callable[[], object] | None = None,
) -> Any:
    """The condition's first truthy value; on the deadline, a failure that says what ``seen`` read last, so
    that a run on a loaded machine tells what was missing rather than only that something was."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}" + (f"; last seen: {seen()!r}" if seen else ""))


class Rabbit(AmqpQueues):
    """The test's queues, plus what the frameworks create beside them: exchanges, and queues that exist only
    once a framework declared them."""

    def __init__(self, unique: str) -> None:
        super().__init__(unique)
        self.exchanges: list[str] = []

    def consumers(self, queue: str) -> int:
        """Consumers of ``queue``; 0 while it does not exist yet."""
        try:
            return int(self.channel.queue_declare(queue, passive=True).method.consumer_count)
        except pika.exceptions.ChannelClosedByBroker:
            self.channel = self.connection.channel()
            return 0

    def close(self) -> None:
        for name in self.exchanges:
            self.channel.exchange_delete(name)
        super().close()


class CeleryOnRabbit:
    """A Celery app whose work queue dead-letters into ``dlq``, and a real Celery worker to start."""

    def __init__(self, rabbit: Rabbit, tmp: Path) -> None:
        self.rabbit = rabbit
        self.queue = rabbit.name("celery")  # Celery declares it, with its dead-letter arguments, on publish
        self.dlq = rabbit.declare("celery.dlq")
        rabbit.exchanges.append(self.queue)  # and an exchange of the same name, as Celery does by default
        self.runs = tmp / "celery-runs.log"
        self.log = tmp / "celery-worker.log"
        self.app = make_app(self.queue, self.dlq, self.runs)

    def send(self, task: str, *args: Any, **kwargs: Any) -> str:
        """``apply_async`` as a user calls it; the task id."""
        return str(self.app.tasks[task].apply_async(args, kwargs).id)

    def worker(self) -> AbstractContextManager[subprocess.Popen[bytes]]:
        """A Celery worker on the work queue, consuming once RabbitMQ counts it."""
        return celery_worker(
            self.queue, self.dlq, self.runs, self.log, AMQP_URL, lambda: self.rabbit.consumers(self.queue) > 0
        )


@contextmanager
def celery_worker(
    queue: str, dlq: str, runs: Path, log: Path, broker: str, consuming: Callable[[], bool]
) -> Iterator[subprocess.Popen[bytes]]:
    """A Celery worker (solo pool) of :mod:`celery_tasks` in its own process on ``queue``, yielded once
    ``consuming`` says it is, and stopped warm at the end."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "TQT_CELERY_QUEUE": queue,
        "TQT_CELERY_DLQ": dlq,
        "TQT_CELERY_RUNS": str(runs),
        "TQT_CELERY_BROKER": broker,
    }
    command = [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "--pool=solo"]
    command += ["-Q", queue, "-n", f"{queue}@%h", "--without-gossip", "--without-mingle"]
    command += ["--without-heartbeat", "-l", "INFO"]
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=out, cwd=log.parent)
    try:
        wait_for(consuming, "the Celery worker to consume", 60)
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def redis_state(client: Any, unique: str) -> dict[bytes, Any]:
    """What Redis holds of one test: every key naming ``unique`` (``DUMP``ed, so any change shows) and the
    members naming it of the sets and sorted sets the frameworks share (with their scores)."""
    token = unique.encode()
    state: dict[bytes, Any] = {key: client.dump(key) for key in client.scan_iter(f"*{unique}*")}
    for key in SHARED_SETS:
        state[key] = sorted(m for m in client.smembers(key) if token in m)
    for key in SHARED_SORTED_SETS:
        state[key] = sorted((m, s) for m, s in client.zrange(key, 0, -1, withscores=True) if token in m)
    return state


def assert_refused(result: tuple[int, Any, str], *instead: str) -> None:
    """A write tqadmin refused: exit 6, nothing on stdout, one line on stderr that says it was refused,
    names what to use instead (each of ``instead``) and that nothing was written."""
    code, document, err = result
    lines = err.strip().splitlines()
    assert (code, document, len(lines)) == (6, None, 1), err
    assert " refused: " in lines[0] and lines[0].endswith("; nothing was written"), err
    assert all(text in lines[0] for text in instead), err


def sidekiq_process(client: redis.Redis, identity: str, *, milliseconds: bool, busy_jid: str | None) -> float:
    """A process as Sidekiq's launcher writes it each beat: its hash, its ``:work`` hash, its member; the
    time it was written."""
    now = time.time()
    started = int(now * 1000) - 60_000 if milliseconds else now - 60
    info = {"hostname": "web-1", "started_at": started, "pid": 4242, "tag": "app", "concurrency": 5,
            "queues": ["default", "mailers"], "labels": [], "identity": identity,
            "version": "8.0.1" if milliseconds else "7.3.2"}  # fmt: skip
    beat = {"beat": now - 2, "quiet": "false", "rss": 123456, "rtt_us": 150}
    client.hset(identity, mapping={"info": json.dumps(info), "busy": 1 if busy_jid else 0, **beat})
    client.expire(identity, 60)
    if busy_jid:
        job = {"class": "HardWorker", "args": [1], "jid": busy_jid, "queue": "default"}
        run_at = int(now * 1000) - 3000 if milliseconds else int(now) - 3
        work = {"queue": "default", "payload": json.dumps(job), "run_at": run_at}
        client.hset(f"{identity}:work", "tid-1", json.dumps(work))
    client.sadd("processes", identity)
    return now


@contextmanager
def in_background(run: Callable[[threading.Event], None], join_s: float = 60.0) -> Iterator[None]:
    """``run(stop)`` in a daemon thread of its own until the block ends; then ``stop`` is set and the thread
    given ``join_s`` to finish."""
    stop = threading.Event()
    thread = threading.Thread(target=run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(join_s)


@contextmanager
def rq_worker(name: str, queue: str, tmp: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``rq worker`` as a user starts it, with a 2 s worker TTL so that a missed heartbeat shows at once."""
    rq = Path(sys.executable).parent / "rq"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    argv = [str(rq), "worker", "--url", REDIS_URL, "--name", name, "--worker-ttl", "2", queue]
    with (tmp / "rq-worker.log").open("wb") as log:
        process = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
