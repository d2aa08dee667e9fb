"""The consumer never acks a delivery of a dead channel, and comes back after the connection drops."""

from __future__ import annotations

import threading
from queue import Queue

import pytest
from amqp_proxy import AmqpProxy
from rabbit_queues import depth, queue_fixture  # noqa: F401 - the fixture
from tqadmin_rabbitmq import RabbitMQPlugin

from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.transport import Inbound, Outgoing

pytestmark = pytest.mark.rabbitmq


def test_after_a_reconnect_the_old_delivery_is_not_acked_and_its_redelivery_is(queue: str) -> None:
    proxy = AmqpProxy()
    transport = RabbitMQPlugin().transport(BrokerConfig(url=proxy.url(), timeout_s=5))
    transport.declare(queue)
    assert transport.publish([Outgoing(b'{"task_type": "t"}', queue, message_id="j1")]).all_confirmed
    consumer = transport.consumer(queue, prefetch=1)
    deliveries: Queue[Inbound] = Queue()
    loop = threading.Thread(target=consumer.run, args=(deliveries.put,), daemon=True)
    loop.start()
    try:
        first = deliveries.get(timeout=10)
        assert consumer.alive(first)
        proxy.drop_all()
        again = deliveries.get(timeout=30)  # the broker requeued it; the consumer reconnected
        assert again.redelivered and again.message_id == "j1"
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
