"""A Celery application as its users write one, for the tests and for the Celery worker they start.

Its work queue dead-letters rejected messages into a dead-letter queue (RabbitMQ's x-dead-letter-*
arguments, declared by Celery itself). Every task runs only once the test allows it (a file exists); until
then it raises ``Reject(requeue=False)`` and the broker moves the message to the dead-letter queue. Each run
is appended to a file, so a test counts how often Celery really ran a task.

The worker process reads its names from the environment (``celery -A celery_tasks worker``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.exceptions import Reject
from kombu import Exchange, Queue

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"
TASK_NAMES = ("capp.charge", "capp.resize", "capp.add")


def make_app(queue: str, dlq: str, runs: Path, broker: str = AMQP_URL) -> Celery:
    app = Celery("capp", broker=broker, set_as_current=False)
    app.conf.update(
        task_queues=[
            Queue(
                queue,
                Exchange(queue, type="direct"),
                routing_key=queue,
                queue_arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
            )
        ],
        task_default_queue=queue,
        task_acks_late=True,  # a rejected message is dead-lettered, not acked before it ran
        worker_prefetch_multiplier=1,
        worker_enable_remote_control=False,  # no pidbox queues left behind
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
    )
    allowed = runs.with_suffix(".allowed")

    def run_or_reject(name: str, task_id: str, *args: object) -> None:
        if not allowed.exists():
            raise Reject("not allowed yet", requeue=False)
        with runs.open("a") as log:
            log.write(f"{task_id} {name} {list(args)!r}\n")

    @app.task(name="capp.charge", bind=True, shared=False)
    def charge(self: Any, order: str, amount: int) -> None:
        run_or_reject("capp.charge", self.request.id, order, amount)

    @app.task(name="capp.resize", bind=True, shared=False)
    def resize(self: Any, image: str, width: int = 100) -> None:
        run_or_reject("capp.resize", self.request.id, image, width)

    @app.task(name="capp.add", bind=True, shared=False)
    def add(self: Any, x: int, y: int) -> None:
        run_or_reject("capp.add", self.request.id, x, y)

    return app


def allow(runs: Path) -> None:
    """From now on the tasks run instead of rejecting."""
    runs.with_suffix(".allowed").touch()


def runs_of(runs: Path) -> list[str]:
    """Task ids in the order Celery ran them."""
    return [line.split()[0] for line in runs.read_text().splitlines()] if runs.exists() else []


if "TQT_CELERY_QUEUE" in os.environ:  # imported by `celery -A celery_tasks worker`
    app = make_app(
        os.environ["TQT_CELERY_QUEUE"],
        os.environ["TQT_CELERY_DLQ"],
        Path(os.environ["TQT_CELERY_RUNS"]),
        os.environ.get("TQT_CELERY_BROKER", AMQP_URL),
    )
