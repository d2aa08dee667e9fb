"""Declare what a work queue needs, accepting queues that already exist with other arguments.

Retries are scheduled by the broker, not by a sleeping worker: one delay queue per tier (:mod:`.tiers`) with a
queue-level ``x-message-ttl`` whose expired messages are dead-lettered back to the work queue. A tier's queue
is declared the first time a retry needs it (:func:`tier_arguments` says how), not up front.
"""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions as pe
from pika.adapters.blocking_connection import BlockingChannel

from tqadmin.plugin.models import dlq_name
from tqadmin_rabbitmq.naming import TASK_EXCHANGE

PRECONDITION_FAILED = 406


class _Declarer:
    """Declares on one channel and replaces it when a 406 (existing queue, other arguments) closes it."""

    def __init__(self, connection: pika.BlockingConnection) -> None:
        self.connection = connection
        self.channel: BlockingChannel = connection.channel()

    def queue(self, name: str, arguments: dict[str, Any] | None = None) -> None:
        try:
            self.channel.queue_declare(name, durable=True, arguments=arguments)
        except pe.ChannelClosedByBroker as exc:
            if exc.reply_code != PRECONDITION_FAILED:
                raise
            # It exists with other arguments (a quorum queue, a policy's settings): use it as it is,
            # after checking on a fresh channel that it really exists.
            self.channel = self.connection.channel()
            self.channel.queue_declare(name, passive=True)

    def exchange(self, name: str) -> None:
        try:
            self.channel.exchange_declare(name, "direct", durable=True)
        except pe.ChannelClosedByBroker as exc:
            if exc.reply_code != PRECONDITION_FAILED:
                raise
            self.channel = self.connection.channel()
            self.channel.exchange_declare(name, passive=True)


def declare(connection: pika.BlockingConnection, queue: str) -> None:
    """The exchange, the work queue bound with its own name, and ``Q.dlq``."""
    d = _Declarer(connection)
    d.exchange(TASK_EXCHANGE)
    d.queue(queue)
    d.channel.queue_bind(queue, TASK_EXCHANGE, routing_key=queue)
    d.queue(dlq_name(queue))
    d.channel.close()


def tier_arguments(queue: str, delay_ms: int) -> dict[str, Any]:
    """The arguments of ``queue``'s delay queue for ``delay_ms``: expired messages go back to ``queue``."""
    return {
        "x-message-ttl": max(1, delay_ms),
        "x-dead-letter-exchange": TASK_EXCHANGE,
        "x-dead-letter-routing-key": queue,
    }
