"""RabbitMQ broker plugin: the management HTTP API for figures, AMQP (pika) for messages.

Registered under the ``amqp`` and ``amqps`` schemes of the ``tqadmin.brokers`` entry-point group, exactly as a
third-party plugin would be. This module imports no driver: pika and httpx load with the faces.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin, PluginOption
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_rabbitmq.capabilities import CAPABILITIES

MANAGEMENT_URL = PluginOption(
    name="management_url",
    help=(
        "RabbitMQ management API (default http://<broker host>:15672/, https://<broker host>:15671/ for"
        " amqps://, with the broker URL's login)"
    ),
    env="TQADMIN_MANAGEMENT_URL",
    flag="--management-url",
)


class RabbitMQPlugin(BrokerPlugin):
    name: ClassVar[str] = "rabbitmq"
    schemes: ClassVar[tuple[str, ...]] = ("amqp", "amqps")
    capabilities: ClassVar[Capabilities] = CAPABILITIES
    options: ClassVar[tuple[PluginOption, ...]] = (MANAGEMENT_URL,)

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_rabbitmq.admin import RabbitMQAdmin

        return RabbitMQAdmin(config)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_rabbitmq.transport import RabbitMQTransport

        return RabbitMQTransport(config)
