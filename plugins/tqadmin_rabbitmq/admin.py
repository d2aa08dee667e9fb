"""The admin face of RabbitMQ: figures from the management API, messages over AMQP."""

from __future__ import annotations

from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, BrokerConfig
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import QueueListing
from tqadmin_rabbitmq.capabilities import CAPABILITIES
from tqadmin_rabbitmq.messages import AmqpMessages


class RabbitMQAdmin(AmqpMessages, BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config

    def list_queues(self) -> QueueListing:
        raise NotImplementedError
