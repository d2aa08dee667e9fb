"""Fixtures that publish through the real Celery and Dramatiq into the local RabbitMQ (and clean up after)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pika
import pytest
from celery_tasks import make_app

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
HERE = Path(__file__).parent


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class Rabbit:
    """One pika connection for a test: depths, consumers, draining, and deleting what the test created."""

    def __init__(self) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        self.channel = self.connection.channel()
        self.queues: list[str] = []
        self.exchanges: list[str] = []

    def declare(self, name: str) -> str:
        self.channel.queue_declare(name, durable=True)
        self.queues.append(name)
        return name

    def depth(self, queue: str) -> int:
        return int(self._declared(queue).message_count)

    def consumers(self, queue: str) -> int:
        """Consumers of ``queue``; 0 while it does not exist yet."""
        try:
            return int(self._declared(queue).consumer_count)
        except pika.exceptions.ChannelClosedByBroker:
            self.channel = self.connection.channel()
            return 0

    def _declared(self, queue: str) -> Any:
        return self.channel.queue_declare(queue, passive=True).method

    def drain(self, queue: str) -> list[tuple[Any, bytes]]:
        taken = []
        while True:
            method, props, body = self.channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append((props, body))

    def close(self) -> None:
        for name in self.queues:
            self.channel.queue_delete(name)
        for name in self.exchanges:
            self.channel.exchange_delete(name)
        self.connection.close()


@pytest.fixture
def rabbit() -> Iterator[Rabbit]:
    broker = Rabbit()
    yield broker
    broker.close()


class CeleryOnRabbit:
    """A Celery app whose work queue dead-letters into ``dlq``, and a real Celery worker to start."""

    def __init__(self, rabbit: Rabbit, unique: str, tmp: Path) -> None:
        self.rabbit = rabbit
        self.queue = f"tqt-{unique}-celery"
        self.dlq = rabbit.declare(f"{self.queue}.dlq")
        rabbit.queues.append(self.queue)  # Celery declares it (with its dead-letter arguments) on publish
        rabbit.exchanges.append(self.queue)  # and an exchange of the same name, as Celery does by default
        self.runs = tmp / "celery-runs.log"
        self.log = tmp / "celery-worker.log"
        self.app = make_app(self.queue, self.dlq, self.runs)

    def send(self, task: str, *args: Any, **kwargs: Any) -> str:
        """``apply_async`` as a user calls it; the task id."""
        return str(self.app.tasks[task].apply_async(args, kwargs).id)

    @contextmanager
    def worker(self) -> Iterator[subprocess.Popen[bytes]]:
        """A Celery worker (solo pool) in its own process on the work queue, stopped warm at the end."""
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            "TQT_CELERY_QUEUE": self.queue,
            "TQT_CELERY_DLQ": self.dlq,
            "TQT_CELERY_RUNS": str(self.runs),
        }
        command = [sys.executable, "-m", "celery", "-A", "celery_tasks", "worker", "--pool=solo"]
        command += ["-Q", self.queue, "-n", f"{self.queue}@%h", "--without-gossip", "--without-mingle"]
        command += ["--without-heartbeat", "-l", "INFO"]
        with self.log.open("ab") as log:
            process = subprocess.Popen(command, env=env, stdout=log, stderr=log, cwd=self.log.parent)
        try:
            wait_for(lambda: self.rabbit.consumers(self.queue) > 0, "the Celery worker to consume", 60)
            yield process
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self) -> None:
        self.app.close()


@pytest.fixture
def celery_rabbit(rabbit: Rabbit, unique: str, tmp_path: Path) -> Iterator[CeleryOnRabbit]:
    celery = CeleryOnRabbit(rabbit, unique, tmp_path)
    yield celery
    celery.close()
