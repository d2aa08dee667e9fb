"""Run real `tqadmin worker` processes (RabbitMQ and Redis, or the embedded SQLite file) and look on.

Each worker is started in its own session so a test can SIGKILL the whole worker (supervisor and child) the
way a node failure would; its stderr goes to a file that a failing test prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pika
import pytest
import redis

from tests.support.rabbit_queues import AMQP_URL, delete_queues, depth, drain, queues_named
from tqadmin.cli import main
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.transport import BrokerTransport
from tqadmin.store.factory import open_store
from tqadmin.store.keys import job_key

TASKS = str(Path(__file__).with_name("e2e_tasks.py"))
REDIS_URL = "redis://127.0.0.1:6379/0"
# the settler's line for a failed run it retries (tqadmin/pipeline/settler.py), delay rounded to 10 ms
RETRY_LINE = re.compile(
    r"job (?P<job>\S+) attempt (?P<attempt>\d+) failed \(.*\); retry in (?P<delay>[0-9.]+) s"
)


class Pipeline:
    """Workers on the local RabbitMQ with their store on Redis; :class:`SQLitePipeline` is the same on the
    embedded broker."""

    broker_url: str | None = None  # the workers' and the publisher's broker, when not the configured one

    def __init__(self, queue: str, logs: Path) -> None:
        self.queue = queue
        self.key = f"tqe:{queue}"
        self.id_prefix = f"{queue}-"  # job ids are unique per test: the store remembers done jobs
        # the store's own keys (claims, heartbeats) under a prefix of this test's, so none outlive it
        self.store_prefix = f"tqs-{queue}"
        self.store_url = f"{REDIS_URL}?prefix={self.store_prefix}"
        self.logs = logs
        self.redis = redis.Redis.from_url(REDIS_URL, decode_responses=True)
        self.workers: list[subprocess.Popen[bytes]] = []

    # -- workers -----------------------------------------------------------------------------------------

    def start(
        self, *options: str, broker: str | None = None, verbose: bool = True
    ) -> subprocess.Popen[bytes]:
        return self.start_with_tasks(TASKS, *options, broker=broker, verbose=verbose)

    def start_with_tasks(
        self, tasks: str, *options: str, broker: str | None = None, verbose: bool = True
    ) -> subprocess.Popen[bytes]:
        """A worker process; ``verbose`` (``-v``) for its log, off to see what a user sees."""
        log = (self.logs / f"worker-{len(self.workers)}.log").open("wb")
        command = [sys.executable, "-m", "tqadmin.cli", *(["-v"] if verbose else [])]
        if broker or self.broker_url:
            command += ["--broker", broker or self.broker_url or ""]
        command += ["--store", self.store_url, "worker", "--queue", self.queue, "--tasks", tasks, *options]
        process = subprocess.Popen(
            command, stdout=log, stderr=log, start_new_session=True, env={**os.environ, **self.worker_env()}
        )
        self.workers.append(process)
        return process

    def worker_env(self) -> dict[str, str]:
        return {}

    @staticmethod
    def kill(process: subprocess.Popen[bytes]) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_all(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill(process)

    def log_text(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-3000:] for p in sorted(self.logs.glob("worker-*.log"))
        )

    # -- jobs ----------------------------------------------------------------------------------------------

    def publish(self, jobs: list[dict[str, Any]]) -> list[str]:
        """Publish ``jobs`` (their ``id`` made unique to this test); returns the ids as given."""
        path = self.logs / f"jobs-{time.monotonic_ns()}.jsonl"
        lines = [{"key": self.key, **job, "id": self.id_prefix + job["id"]} for job in jobs]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        broker = ["--broker", self.broker_url] if self.broker_url else []
        assert main([*broker, "publish", "--queue", self.queue, "--from-file", str(path)]) == 0
        return [job["id"] for job in jobs]

    def short(self, job_id: str) -> str:
        return job_id.removeprefix(self.id_prefix)

    def publish_raw(self, bodies: list[bytes]) -> None:
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        channel.confirm_delivery()
        for body in bodies:
            channel.basic_publish("task_exchange", self.queue, body, pika.BasicProperties(delivery_mode=2))
        connection.close()

    def publish_raw_to(self, queue: str, body: bytes, headers: dict[str, Any] | None = None) -> None:
        """One message straight into ``queue`` (the default exchange), confirmed."""
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        channel.confirm_delivery()
        properties = pika.BasicProperties(delivery_mode=2, headers=headers)
        channel.basic_publish("", queue, body, properties, mandatory=True)
        connection.close()

    def declare(self, queue: str) -> None:
        """``queue`` as the worker would declare it (bound to task_exchange, with its DLQ)."""
        from tqadmin.config import Settings
        from tqadmin.plugin.registry import plugin_for_url

        settings = Settings(broker_url=AMQP_URL)
        with plugin_for_url(AMQP_URL).transport(settings.broker_config()) as transport:
            transport.declare(queue)

    def delete_queues(self) -> None:
        """Every queue of this test on the broker (the work queue, its delay and dead-letter queues)."""
        delete_queues(self.queue)

    # -- what happened ------------------------------------------------------------------------------------

    def effects(self) -> dict[str, int]:
        return {self.short(k): int(v) for k, v in self.redis.hgetall(f"{self.key}:effects").items()}

    def runs(self) -> dict[str, int]:
        return {self.short(k): int(v) for k, v in self.redis.hgetall(f"{self.key}:runs").items()}

    @property
    def dlq(self) -> str:
        """The work queue's dead-letter queue on this pipeline's broker."""
        return f"{self.queue}.dlq"

    def chaos_outcome(self, ids: list[str], kills: int, dlq: str, wait_s: float) -> str:
        """Wait for a chaos run to finish, then check it: every job's effect committed (0 lost), each
        exactly once, nothing dead-lettered, at least three kills; returns the line that tells the run."""
        jobs = len(ids)
        self.wait_for(lambda: len(self.effects()) == jobs, wait_s, "every job's effect")
        self.wait_for(lambda: self.depth() == 0, wait_s, "the queue to drain")
        effects = self.effects()
        assert set(effects) == set(ids)  # 0 lost
        assert set(effects.values()) == {1}  # every effect committed exactly once
        assert self.depth(dlq) == 0
        executions = sum(self.runs().values())
        assert executions >= jobs and kills >= 3
        return (
            f"{jobs} jobs, {kills} SIGKILLs, {executions} executions"
            f" ({executions - jobs} re-run after a kill), {jobs} effects, 0 lost"
        )

    def run_times(self, job_id: str) -> list[float]:
        return [float(t) for t in self.redis.lrange(f"{self.key}:times:{self.id_prefix}{job_id}", 0, -1)]

    def retry_delays(self, job_id: str) -> list[float]:
        """The delays the workers drew for ``job_id``'s retries, after its first run, then its second...:
        what a gap between two runs is checked against, whatever load adds to it (from the ``-v`` logs)."""
        drawn: dict[int, float] = {}
        for path in self.logs.glob("worker-*.log"):
            for match in RETRY_LINE.finditer(path.read_text(errors="replace")):
                if match["job"] == self.id_prefix + job_id:
                    drawn[int(match["attempt"])] = float(match["delay"])
        return [drawn[attempt] for attempt in sorted(drawn)]

    def delay_tolerance_s(self, delay_s: float) -> float:
        """How much sooner than ``delay_s`` the broker may hand a retry back, as its plugin declares, and the
        log's rounding of the delay to 10 ms."""
        capabilities = plugin_for_url(self.broker_url or AMQP_URL).transport_capabilities
        assert capabilities is not None
        return capabilities.delay_tolerance_s(delay_s) + 0.005

    def claimed(self, job_id: str) -> bool:
        return bool(self.redis.exists(job_key(self.store_prefix, self.id_prefix + job_id)))

    def claim_record(self, job_id: str) -> tuple[str, int]:
        """A job's claim in the store: its state (claimed, running, released, done) and fencing token."""
        key = job_key(self.store_prefix, self.id_prefix + job_id)
        state, token = self.redis.hmget(key, ["state", "token"])
        return state or "", int(token or 0)

    def current_jobs(self) -> set[str]:
        """Job ids the live workers of this queue report in their heartbeats."""
        store = open_store(self.store_url)
        try:
            return {
                self.short(job_id)
                for record in store.workers()
                if record.alive and self.queue in record.snapshot.queues
                for job_id in record.snapshot.current_jobs
            }
        finally:
            store.close()

    def depth(self, queue: str | None = None) -> int:
        return depth(queue or self.queue)

    def pending(self) -> int:
        """Messages in the work queue and its delay queues, ready or not (AMQP figures, exact)."""
        return sum(depth(name) for name in queues_named(self.queue) if not name.endswith(".dlq"))

    def dead_letters(self) -> list[tuple[Any, bytes]]:
        return drain(self.dlq)

    def wait_for(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll until ``condition`` holds; a deadline for the pipeline to finish, not a speed assertion."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                state = f"{len(self.effects())} effects, {self.depth()} queued"
                pytest.fail(f"gave up waiting for {what} ({state}); worker logs:\n{self.log_text()}")
            time.sleep(0.2)

    def chaos(
        self,
        *,
        jobs: int,
        processes: int,
        kill_every_s: float,
        work_s: float,
        worker: tuple[str, ...],
        task_type: str = "count",
    ) -> str:
        """``jobs`` counting jobs through ``processes`` workers while one of them (in turn) is SIGKILLed every
        ``kill_every_s`` and replaced, until every effect is in; checks that none is lost and every effect
        happened once, and returns a line saying how it went."""
        ids = self.publish([{"task_type": task_type, "id": f"c-{i}", "work_s": work_s} for i in range(jobs)])
        workers = [self.start(*worker) for _ in range(processes)]
        kills = 0
        deadline = time.monotonic() + 80
        while len(self.effects()) < jobs and time.monotonic() < deadline:
            time.sleep(kill_every_s)
            victim = kills % len(workers)
            self.kill(workers[victim])
            workers[victim] = self.start(*worker)
            kills += 1
        return self.chaos_outcome(ids, kills, self.dlq, wait_s=60)

    def cleanup(self) -> None:
        self.stop_all()
        self.delete_queues()
        keys = [
            *self.redis.scan_iter(f"{self.key}:*"),
            *self.redis.scan_iter(f"*{self.id_prefix}*"),
            *self.redis.scan_iter(f"*{self.store_prefix}*"),
        ]
        if keys:
            self.redis.delete(*keys)


class SQLitePipeline(Pipeline):
    """The same pipeline on the embedded broker: broker, store and the tasks' counters in one SQLite file."""

    def __init__(self, queue: str, logs: Path) -> None:
        super().__init__(queue, logs)
        self.file = logs / "tqadmin.db"
        self.broker_url = f"sqlite:///{self.file}"
        self.store_url = self.broker_url

    def worker_env(self) -> dict[str, str]:
        return {"E2E_SQLITE": str(self.file)}

    def _transport(self) -> BrokerTransport:
        return plugin_for_url(self.broker_url or "").transport(BrokerConfig(url=self.broker_url or ""))

    def declare(self, queue: str) -> None:
        with self._transport() as transport:
            transport.declare(queue)

    def publish_raw(self, bodies: list[bytes]) -> None:
        """Bodies as they are, through the plugin (the base class's raw publish is RabbitMQ's)."""
        with self._transport() as transport:
            transport.declare(self.queue)
            assert transport.publish([(self.queue, Message(body)) for body in bodies]).all_confirmed

    def _counts(self, counter: str) -> dict[str, int]:
        if not self.file.exists():
            return {}
        with contextlib.closing(sqlite3.connect(self.file, timeout=30)) as db:
            table = f"e2e_{counter}"  # made by the tasks (e2e_tasks.py) on their first run
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                return {}
            rows = db.execute(f"SELECT job_id, n FROM {table} WHERE key = ?", (self.key,)).fetchall()
        return {self.short(job_id): int(n) for job_id, n in rows}

    def effects(self) -> dict[str, int]:
        return self._counts("effects")

    def runs(self) -> dict[str, int]:
        return self._counts("runs")

    def _admin(self) -> BrokerAdmin:
        return plugin_for_url(self.broker_url or "").admin(BrokerConfig(url=self.broker_url or ""))

    def depth(self, queue: str | None = None) -> int:
        """Every message of the queue: ready, held or waiting out a retry delay."""
        with self._admin() as admin:
            return next(
                (q.messages for q in admin.list_queues().queues if q.name == (queue or self.queue)), 0
            )

    def pending(self) -> int:
        return self.depth()

    def cleanup(self) -> None:
        self.stop_all()  # the file goes with the test's temporary directory


@pytest.fixture(name="sqlite_pipeline")
def sqlite_pipeline_fixture(unique: str, tmp_path: Path, isolated_env: Path) -> Iterator[SQLitePipeline]:
    p = SQLitePipeline(f"tqe_{unique}", tmp_path)
    yield p
    p.cleanup()


@pytest.fixture(name="pipeline")
def pipeline_fixture(unique: str, tmp_path: Path, isolated_env: Path) -> Iterator[Pipeline]:
    p = Pipeline(f"tqe_{unique}", tmp_path)
    yield p
    p.cleanup()
