"""How the contract suite reaches each plugin's real server: one harness per plugin.

A harness makes a queue holding given messages and reads its depth with the broker's own client, so the
contract is checked through the plugin only. A new plugin adds its harness to ``HARNESSES``.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.plugin.registry import plugin_for_url


class Harness(Protocol):
    name: str

    def admin(self) -> BrokerAdmin: ...

    def make_queue(self, bodies: list[bytes]) -> str: ...

    def depth(self, queue: str) -> int: ...

    def close(self) -> None: ...


class RabbitMQHarness:
    name = "rabbitmq"
    url = "amqp://guest:guest@127.0.0.1:5672/%2F"

    def __init__(self) -> None:
        import pika

        self._pika = pika
        self._connection = pika.BlockingConnection(pika.URLParameters(self.url))
        self._channel = self._connection.channel()
        self._channel.confirm_delivery()
        self._queues: list[str] = []

    def admin(self) -> BrokerAdmin:
        return plugin_for_url(self.url).admin(BrokerConfig(url=self.url))

    def make_queue(self, bodies: list[bytes]) -> str:
        name = f"contract-{uuid.uuid4().hex[:10]}"
        self._channel.queue_declare(name, durable=True)
        self._queues.append(name)
        for body in bodies:
            self._channel.basic_publish("", name, body, self._pika.BasicProperties(delivery_mode=2))
        return name

    def depth(self, queue: str) -> int:
        return int(self._channel.queue_declare(queue, passive=True).method.message_count)

    def close(self) -> None:
        for name in self._queues:
            self._channel.queue_delete(name)
        self._connection.close()


HARNESSES: dict[str, type[Harness]] = {"rabbitmq": RabbitMQHarness}
