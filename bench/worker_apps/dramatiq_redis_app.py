"""The benchmark's no-op actor for Dramatiq on Redis (its RedisBroker, keys under BENCH_KEYPREFIX)."""

import os

import dramatiq
from counting import ran
from dramatiq.brokers.redis import RedisBroker

QUEUE = os.environ.get("BENCH_QUEUE", "bench_dramatiq")

dramatiq.set_broker(
    RedisBroker(
        url=os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/0"),
        namespace=os.environ.get("BENCH_KEYPREFIX", "dramatiq"),
    )
)


@dramatiq.actor(queue_name=QUEUE, max_retries=0)
def noop(n: int) -> None:
    """Nothing but the count of job ``n``."""
    ran(n)
