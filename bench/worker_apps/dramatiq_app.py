"""The benchmark's no-op actor for Dramatiq on RabbitMQ."""

import os

import dramatiq
from counting import ran
from dramatiq.brokers.rabbitmq import RabbitmqBroker

QUEUE = os.environ.get("BENCH_QUEUE", "bench_dramatiq")

dramatiq.set_broker(RabbitmqBroker(url=os.environ.get("BENCH_AMQP", "amqp://guest:guest@127.0.0.1:5672/%2F")))


@dramatiq.actor(queue_name=QUEUE, max_retries=0)
def noop(n: int) -> None:
    """Nothing but the count of job ``n``."""
    ran(n)
