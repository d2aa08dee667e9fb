"""What the SQS plugin tests share: the plugin's faces on the moto server, and a consumer run in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tqadmin_sqs.admin import SqsAdmin
from tqadmin_sqs.consuming import SqsConsumer
from tqadmin_sqs.transport import SqsTransport

from tests.support.sqs_server import BROKER_URL
from tqadmin.plugin.base import BrokerConfig, Delivery
from tqadmin.plugin.registry import plugin_for_url


def config(endpoint: str, timeout_s: float = 10.0) -> BrokerConfig:
    return BrokerConfig(url=BROKER_URL, timeout_s=timeout_s, options={"endpoint_url": endpoint})


def transport(endpoint: str) -> SqsTransport:
    face = plugin_for_url(BROKER_URL).transport(config(endpoint))
    assert isinstance(face, SqsTransport)
    return face


def admin(endpoint: str) -> SqsAdmin:
    face = plugin_for_url(BROKER_URL).admin(config(endpoint))
    assert isinstance(face, SqsAdmin)
    return face


class Running:
    """A consumer running in a thread; what it hands out lands in ``deliveries``."""

    def __init__(self, consumer: SqsConsumer) -> None:
        self.consumer = consumer
        self.deliveries: list[Delivery] = []
        self.thread = threading.Thread(target=consumer.run, args=(self.deliveries.append,), daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout_s: float = 60.0) -> list[Delivery]:
        poll(lambda: len(self.deliveries) >= count, timeout_s, f"{count} deliveries")
        return self.deliveries

    def stop(self) -> None:
        self.consumer.stop()
        self.consumer.drained()
        self.thread.join(timeout=30)


@contextmanager
def consuming(t: SqsTransport, queue: str, prefetch: int = 10, lease_s: float = 30) -> Iterator[Running]:
    consumer = t.consumer(queue, prefetch=prefetch, lease_s=lease_s)
    assert isinstance(consumer, SqsConsumer)
    running = Running(consumer)
    try:
        yield running
    finally:
        running.stop()


def poll(condition: Callable[[], Any], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)
