"""RabbitMQ broker plugin: the management HTTP API for figures, AMQP (pika) for messages.

Registered under the ``amqp`` and ``amqps`` schemes of the ``tqadmin.brokers`` entry-point group, exactly as a
third-party plugin would be.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_rabbitmq.capabilities import CAPABILITIES


class RabbitMQPlugin(BrokerPlugin):
    name: ClassVar[str] = "rabbitmq"
    schemes: ClassVar[tuple[str, ...]] = ("amqp", "amqps")
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_rabbitmq.admin import RabbitMQAdmin

        return RabbitMQAdmin(config)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_rabbitmq.transport import RabbitMQTransport

        return RabbitMQTransport(config)
