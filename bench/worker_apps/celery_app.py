"""The benchmark's no-op task for Celery: acks_late, no results, prefetch like the others."""

import os

from celery import Celery
from counting import ran

QUEUE = os.environ.get("BENCH_QUEUE", "bench_celery")
PREFETCH = int(os.environ.get("BENCH_PREFETCH", "256"))

# BENCH_BROKER names another broker (Celery's Redis transport, with BENCH_KEYPREFIX as kombu's key prefix)
app = Celery(
    "bench",
    broker=os.environ.get(
        "BENCH_BROKER", os.environ.get("BENCH_AMQP", "amqp://guest:guest@127.0.0.1:5672//")
    ),
)
if os.environ.get("BENCH_KEYPREFIX"):
    app.conf.broker_transport_options = {"global_keyprefix": os.environ["BENCH_KEYPREFIX"]}
app.conf.update(
    task_acks_late=True,
    task_ignore_result=True,
    task_default_queue=QUEUE,
    worker_prefetch_multiplier=PREFETCH,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


@app.task(name="noop")
def noop(n: int) -> None:
    """Nothing but the count of job ``n``."""
    ran(n)
