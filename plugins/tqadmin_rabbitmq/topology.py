"""Declare what a work queue needs, accepting queues that already exist with other arguments.

Retries are scheduled by the broker, not by a sleeping worker: one delay queue per tier with a queue-level
``x-message-ttl`` whose expired messages are dead-lettered back to the work queue. Per-message expiry in one
shared queue would make a 1 s retry wait behind a 60 s one (RabbitMQ only expires the head of a queue); a
queue per tier keeps every message in a queue where all share the same TTL, so the head always expires first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pika
import pika.exceptions as pe
from pika.adapters.blocking_connection import BlockingChannel

from tqadmin.plugin.transport import TASK_EXCHANGE, dlq_name
from tqadmin_rabbitmq.naming import tier_queue

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


def declare(connection: pika.BlockingConnection, queue: str, retry_tiers_s: Sequence[float]) -> None:
    """The exchange, the work queue bound with its own name, ``Q.dlq`` and the retry delay queues."""
    d = _Declarer(connection)
    d.exchange(TASK_EXCHANGE)
    d.queue(queue)
    d.channel.queue_bind(queue, TASK_EXCHANGE, routing_key=queue)
    d.queue(dlq_name(queue))
    for delay_s in retry_tiers_s:
        d.queue(
            tier_queue(queue, delay_s),
            {
                "x-message-ttl": max(1, round(delay_s * 1000)),
                "x-dead-letter-exchange": TASK_EXCHANGE,
                "x-dead-letter-routing-key": queue,
            },
        )
    d.channel.close()
