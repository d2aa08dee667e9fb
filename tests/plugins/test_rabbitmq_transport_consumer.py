"""The consumer never acks a delivery of a dead channel, comes back after the connection drops, and acks in
batches only what was settled by an ack."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from queue import Queue
from typing import Any

import pytest
from tqadmin_rabbitmq import RabbitMQPlugin
from tqadmin_rabbitmq.consuming import RabbitConsumer

from tests.support.amqp_proxy import AmqpProxy
from tests.support.rabbit_queues import AMQP_URL, depth, drain, queue_fixture, queues_named  # noqa: F401 - the fixture
from tqadmin.plugin.base import BrokerConfig, Delivery
from tqadmin.plugin.models import Message

pytestmark = pytest.mark.rabbitmq


def test_after_a_reconnect_the_old_delivery_is_not_acked_and_its_redelivery_is(queue: str) -> None:
    proxy = AmqpProxy()
    transport = RabbitMQPlugin().transport(BrokerConfig(url=proxy.url(), timeout_s=5))
    transport.declare(queue)
    assert transport.publish([(queue, Message(b'{"task_type": "t"}', id="j1"))]).all_confirmed
    consumer = transport.consumer(queue, prefetch=1, lease_s=30)
    deliveries: Queue[Delivery] = Queue()
    loop = threading.Thread(target=consumer.run, args=(deliveries.put,), daemon=True)
    loop.start()
    try:
        first = deliveries.get(timeout=60)
        assert consumer.alive(first)
        proxy.drop_all()
        again = deliveries.get(timeout=30)  # the broker requeued it; the consumer reconnected
        assert again.message.redelivered and again.message.id == "j1"
        assert not consumer.alive(first)
        assert consumer.ack(first) is False
        assert consumer.ack(again) is True
    finally:
        consumer.stop()
        consumer.drained()
        loop.join(10)
        proxy.close()
    assert not loop.is_alive()
    assert depth(queue) == 0


def test_acks_batched_with_other_outcomes_settle_exactly_the_acked_messages(queue: str) -> None:
    """Ten deliveries: six acked together in one loop turn (a multiple ack covers some), one dead-lettered
    and one retried before that (each acked on its own after its copy's confirm), one given back in the same
    turn, one still running. Only the six acked ones and the two copied ones leave the queue."""
    transport = RabbitMQPlugin().transport(BrokerConfig(url=AMQP_URL, timeout_s=5))
    transport.declare(queue)
    ids = [f"j{n}" for n in range(10)]
    jobs = [(queue, Message(b'{"task_type": "t", "id": "%s"}' % i.encode(), id=i)) for i in ids]
    assert transport.publish(jobs).all_confirmed
    consumer = transport.consumer(queue, prefetch=20, lease_s=30)
    deliveries: Queue[Delivery] = Queue()
    loop = threading.Thread(target=consumer.run, args=(deliveries.put,), daemon=True)
    loop.start()
    try:
        d = [deliveries.get(timeout=60) for _ in ids]
        assert [x.message.id for x in d] == ids
        assert consumer.dead_letter(d[2], {"x-tq-reason": "failed"}) is True
        assert consumer.retry_later(d[4], 60, {"x-tq-retry-count": 1}) is True
        with loop_held(consumer):  # everything settled meanwhile goes out in one flush
            assert all(consumer.ack(d[n]) for n in (9, 0, 3, 7, 1, 5))
            consumer.release([d[8]])
        again = deliveries.get(timeout=60)
        assert again.message.id == "j8" and again.message.redelivered
    finally:  # j6 is never settled: it is still running when the consumer stops
        consumer.stop()
        consumer.drained()
        loop.join(10)
        transport.close()
    assert not loop.is_alive()
    assert sorted(p.message_id for p, _ in drain_when(queue, 2)) == ["j6", "j8"]
    assert [p.message_id for p, _ in drain(f"{queue}.dlq")] == ["j2"]
    (tier,) = queues_named(f"{queue}.retry.")
    assert [p.message_id for p, _ in drain(tier)] == ["j4"]


@contextlib.contextmanager
def loop_held(consumer: object) -> Iterator[None]:
    """Keep the consumer's I/O loop busy inside the block, so what the block settles waits for one turn."""
    inside, go_on = threading.Event(), threading.Event()
    assert isinstance(consumer, RabbitConsumer) and consumer.connection is not None
    consumer.connection.ioloop.add_callback_threadsafe(lambda: (inside.set(), go_on.wait(10)))
    assert inside.wait(10)
    try:
        yield
    finally:
        go_on.set()


def drain_when(queue: str, ready: int) -> list[tuple[Any, bytes]]:
    """The messages of ``queue`` once ``ready`` of them are back (a closed channel's return at once)."""
    deadline = time.monotonic() + 60
    while depth(queue) < ready and time.monotonic() < deadline:
        time.sleep(0.05)
    return drain(queue)
