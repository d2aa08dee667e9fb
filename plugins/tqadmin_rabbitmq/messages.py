"""The message side of the RabbitMQ admin face, over AMQP: peek, safe transfers, purge, server-side move.

A mixin, so that :class:`~tqadmin_rabbitmq.admin.RabbitMQAdmin` (figures from the management API) and these
operations live in separate modules; it needs the admin's ``config``, ``capabilities``, ``vhost`` and ``api``
(the management API client, which the shovel shares: one keep-alive connection per run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import pika

from tqadmin.errors import NotAuthorized
from tqadmin.plugin.base import BrokerConfig, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, PeekResult
from tqadmin_rabbitmq.codec import DELIVERY_COUNT, to_message
from tqadmin_rabbitmq.connection import connect, translated
from tqadmin_rabbitmq.shovel import Shovel, ShovelUnavailable
from tqadmin_rabbitmq.transfer import AmqpTransferSession, close_quietly

if TYPE_CHECKING:
    from tqadmin_rabbitmq.management import ManagementClient

QUORUM_PEEK_COST = (
    f"; on this quorum queue each look adds 1 to {DELIVERY_COUNT}, and RabbitMQ drops or dead-letters a"
    " message that goes past the queue's delivery-limit: do not peek the same messages over and over"
)


class AmqpMessages:
    """peek, open_transfer, purge and server_side_move for :class:`~tqadmin.plugin.base.BrokerAdmin`."""

    config: BrokerConfig
    capabilities: ClassVar[Capabilities]
    vhost: str
    if TYPE_CHECKING:

        @property
        def api(self) -> ManagementClient: ...

    def peek(self, queue: str, count: int) -> PeekResult:
        """``basic.get`` up to ``count`` messages unacked, then requeue them all at once."""
        connection = connect(self.config.url, self.config.timeout_s)
        try:
            with translated(self.config.url, queue):
                channel = connection.channel()
                channel.queue_declare(queue, passive=True)
                messages = []
                for _ in range(count):
                    method, props, body = channel.basic_get(queue, auto_ack=False)
                    if method is None:
                        break
                    messages.append(to_message(method, props, body))
                if messages:
                    channel.basic_nack(delivery_tag=0, multiple=True, requeue=True)
        finally:
            close_quietly(connection)
        cost = self.capabilities.peek_cost
        if any(m.delivery_count is not None for m in messages):
            cost += QUORUM_PEEK_COST
        return PeekResult(queue=queue, messages=tuple(messages), cost=cost)

    def open_transfer(self, queue: str) -> TransferSession:
        return AmqpTransferSession(self.config.url, queue, self.config.timeout_s)

    def purge(self, queue: str) -> int:
        connection = connect(self.config.url, self.config.timeout_s)
        try:
            with translated(self.config.url, queue):
                return int(connection.channel().queue_purge(queue).method.message_count)
        finally:
            close_quietly(connection)

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        """A dynamic shovel moving the count at start (or ``limit``); ``None`` when the plugin is off."""
        connection = connect(self.config.url, self.config.timeout_s)
        shovel = Shovel(self.api, self.vhost, source, target)
        try:
            depth = _queue_depth(connection, self.config.url, source)
            _queue_depth(connection, self.config.url, target)  # the target must exist, as on the client path
            count = depth if limit is None else min(depth, limit)
            try:
                running = shovel.exists()
            except NotAuthorized:  # this user may not manage shovels (policymaker tag): the client can move
                return None
            if running and shovel.orphaned():  # an earlier run died before the broker started it
                shovel.remove_orphan()
                running = False
            if running:  # left running by an earlier, interrupted run: let it finish first
                shovel.wait(lambda: _queue_depth(connection, self.config.url, source))
                depth = _queue_depth(connection, self.config.url, source)
                count = depth if limit is None else min(depth, limit)
            if count > 0:
                try:
                    shovel.start(count)
                except (ShovelUnavailable, NotAuthorized):
                    return None
                shovel.wait(lambda: _queue_depth(connection, self.config.url, source))
            # A shovel also counts copies the target refused (a full queue nacks them back to the source).
            short = max(0, _queue_depth(connection, self.config.url, source) - (depth - count))
        finally:
            close_quietly(connection)
        moved = max(0, count - short)
        not_done = (
            (
                f"{source} holds {short} more message(s) than a complete move leaves: {target} refused"
                " copies (full? see its max-length and the alarms) or producers added messages meanwhile;"
                " rerun with --client-side for an exact count",
            )
            if short
            else ()
        )
        return ActionReport(
            action="move",
            source=source,
            target=target,
            matched=count,
            moved=moved,
            not_done=not_done,
            detail=f"server-side: RabbitMQ shovel (ack-mode on-confirm, src-delete-after {count})",
        )


def _queue_depth(connection: pika.BlockingConnection, url: str, queue: str) -> int:
    with translated(url, queue):
        channel = connection.channel()
        try:
            return int(channel.queue_declare(queue, passive=True).method.message_count)
        finally:
            if channel.is_open:
                channel.close()
