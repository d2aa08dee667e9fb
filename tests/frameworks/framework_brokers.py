"""Helpers for the tests that publish through the real Celery and Dramatiq into the local RabbitMQ."""

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
from celery_tasks import make_app

from tests.conftest import AmqpQueues

HERE = Path(__file__).parent


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


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
