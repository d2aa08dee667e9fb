"""A Celery app with task events on (``-E`` and ``task_send_sent_event``), as the event tests run it: its
broker and queue from the environment, tasks that nap, hold until the test lets them go, fail, and retry
once."""

from __future__ import annotations

import os
import time
from typing import Any

from celery import Celery
from holding import hold as hold_until

app = Celery("events", broker=os.environ.get("TQT_CELERY_BROKER", "memory://"), set_as_current=False)
app.conf.update(
    task_default_queue=os.environ.get("TQT_CELERY_QUEUE", "celery"),
    task_send_sent_event=True,
    worker_send_task_events=True,
    broker_connection_retry_on_startup=True,
    worker_prefetch_multiplier=1,
)


@app.task(name="events.nap", shared=False)
def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@app.task(name="events.hold", shared=False)
def hold(release: str) -> None:
    hold_until(release)


@app.task(name="events.boom", shared=False)
def boom() -> None:
    raise ValueError("boom")


@app.task(name="events.flaky", bind=True, max_retries=1, shared=False)
def flaky(self: Any) -> str:
    if self.request.retries == 0:
        raise self.retry(countdown=0.1, exc=TimeoutError("upstream"))
    return "ok"
