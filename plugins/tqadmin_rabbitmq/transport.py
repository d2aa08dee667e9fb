"""The transport face of RabbitMQ: topology, windowed confirmed publishing, and consuming.

A job addressed to queue ``Q`` is published to ``task_exchange`` with routing key ``Q`` (interface.md); the
``exchange`` and ``routing_key`` options address it to the topology as it is instead.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from tqadmin.errors import TqadminError
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.transport import BrokerTransport, Consumer, Outgoing, PublishResult, publish_options
from tqadmin_rabbitmq import MANAGEMENT_URL, topology
from tqadmin_rabbitmq.capabilities import TRANSPORT_CAPABILITIES
from tqadmin_rabbitmq.connection import connect, translated
from tqadmin_rabbitmq.naming import TASK_EXCHANGE
from tqadmin_rabbitmq.session import Addressed

if TYPE_CHECKING:
    from tqadmin_rabbitmq.publishing import PublishRun


def addressed(messages: Sequence[Outgoing], options: Mapping[str, str] | None) -> list[Addressed]:
    """Each ``(queue, message)`` with its AMQP address: ``task_exchange`` and the queue's name, unless the
    options name an exchange or routing key."""
    given = publish_options(options, TRANSPORT_CAPABILITIES, "RabbitMQ")
    exchange = given.get("exchange", TASK_EXCHANGE)
    return [Addressed(exchange, given.get("routing_key", queue), message) for queue, message in messages]


class RabbitMQTransport(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TRANSPORT_CAPABILITIES

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._publisher: PublishRun | None = None
        self._publishing = threading.Lock()  # one run at a time on the kept connection

    def declare(self, queue: str) -> None:
        connection = connect(self.config.url, self.config.timeout_s)
        try:
            with translated(self.config.url, queue):
                topology.declare(connection, queue)
        finally:
            if connection.is_open:
                connection.close()

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        from tqadmin_rabbitmq.publishing import PublishRun

        out = addressed(messages, options)
        with self._publishing:
            if self._publisher is None:
                self._publisher = PublishRun(self.config.url, self.config.timeout_s, out, window)
            else:
                self._publisher.load(out, window)
            return self._publisher.run()

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        from tqadmin_rabbitmq.consuming import RabbitConsumer

        return RabbitConsumer(self.config.url, self.config.timeout_s, queue, prefetch)

    def consumer_warnings(self, queue: str, job_timeout_s: float | None) -> list[str]:
        from tqadmin_rabbitmq.management import ManagementClient, path_of
        from tqadmin_rabbitmq.timeouts import job_timeout_warning
        from tqadmin_rabbitmq.urls import management_endpoint, vhost_of

        endpoint = management_endpoint(self.config.url, self.config.option(MANAGEMENT_URL.name))
        api = ManagementClient(endpoint, self.config.timeout_s)
        try:
            document = api.get_json(
                path_of("api", "queues", vhost_of(self.config.url), queue),
                {"columns": "arguments,effective_policy_definition"},
                missing=f"queue {queue!r}",
            )
        except TqadminError:  # the API is optional for a worker: judge by RabbitMQ's default
            document = {}
        finally:
            api.close()
        warning = job_timeout_warning(queue, job_timeout_s, document if isinstance(document, dict) else {})
        return [] if warning is None else [warning]

    def close(self) -> None:
        """Close the publishing connection kept between calls; every other call closes its own."""
        with self._publishing:
            if self._publisher is not None:
                self._publisher.shutdown()
                self._publisher = None
