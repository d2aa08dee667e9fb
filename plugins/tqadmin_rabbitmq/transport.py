"""The transport face of RabbitMQ: topology, windowed confirmed publishing, and consuming."""

from __future__ import annotations

from collections.abc import Sequence

from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.transport import BrokerTransport, Consumer, Outgoing, PublishResult
from tqadmin_rabbitmq import topology
from tqadmin_rabbitmq.connection import connect, translated


class RabbitMQTransport(BrokerTransport):
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config

    def declare(self, queue: str, retry_tiers_s: Sequence[float] = ()) -> None:
        connection = connect(self.config.url, self.config.timeout_s)
        try:
            with translated(self.config.url, queue):
                topology.declare(connection, queue, retry_tiers_s)
        finally:
            if connection.is_open:
                connection.close()

    def publish(
        self, messages: Sequence[Outgoing], *, window: int = 256, rate: float | None = None
    ) -> PublishResult:
        from tqadmin_rabbitmq.publishing import PublishRun

        return PublishRun(self.config.url, self.config.timeout_s, messages, window, rate).run()

    def consumer(self, queue: str, *, prefetch: int) -> Consumer:
        from tqadmin_rabbitmq.consuming import RabbitConsumer

        return RabbitConsumer(self.config.url, self.config.timeout_s, queue, prefetch)

    def close(self) -> None:
        """Each call opens and closes its own connection: nothing is held between calls."""
