"""RabbitMQ broker plugin: the management HTTP API for figures, AMQP (pika) for messages.

Registered under the ``amqp`` and ``amqps`` schemes of the ``tqadmin.brokers`` entry-point group, exactly as a
third-party plugin would be. This module imports no driver: pika and httpx load with the faces.
"""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, BrokerPlugin, DriverLogger, PluginOption
from tqadmin.plugin.capabilities import Capabilities, TransportCapabilities
from tqadmin.plugin.transport import BrokerTransport
from tqadmin_rabbitmq.capabilities import CAPABILITIES, TRANSPORT_CAPABILITIES

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
    transport_capabilities: ClassVar[TransportCapabilities | None] = TRANSPORT_CAPABILITIES
    # pika logs every failed connection attempt at ERROR, with a traceback; tqadmin's one line is what counts.
    driver_loggers: ClassVar[tuple[DriverLogger, ...]] = (DriverLogger("pika"),)
    start_hint: ClassVar[str] = (
        "start RabbitMQ (e.g. `docker run -d -p 5672:5672 -p 15672:15672 rabbitmq:3-management`) or point"
        " --broker at a running one"
    )
    admin_start_hint: ClassVar[str | None] = (
        "enable the management plugin (`rabbitmq-plugins enable rabbitmq_management`) or point"
        " --management-url at it"
    )

    def admin(self, config: BrokerConfig) -> BrokerAdmin:
        from tqadmin_rabbitmq.admin import RabbitMQAdmin

        return RabbitMQAdmin(config)

    def transport(self, config: BrokerConfig) -> BrokerTransport:
        from tqadmin_rabbitmq.transport import RabbitMQTransport

        return RabbitMQTransport(config)
