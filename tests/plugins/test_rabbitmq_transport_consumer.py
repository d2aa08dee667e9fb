"""The consumer never acks a delivery of a dead channel, and comes back after the connection drops."""

from __future__ import annotations

import threading
from queue import Queue

import pytest
from amqp_proxy import AmqpProxy
from rabbit_queues import depth, queue_fixture  # noqa: F401 - the fixture
from tqadmin_rabbitmq import RabbitMQPlugin

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
        first = deliveries.get(timeout=10)
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
