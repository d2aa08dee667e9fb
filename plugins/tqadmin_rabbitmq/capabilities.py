"""What the RabbitMQ plugin can do, and what a peek costs on it."""

from __future__ import annotations

from tqadmin.plugin.capabilities import Capabilities, Operation

PEEK_COST = (
    "RabbitMQ has no non-destructive read: peek gets and requeues, which marks the messages redelivered, "
    "counts a delivery, and can reorder them while consumers are active"
)

CAPABILITIES = Capabilities(
    supported=frozenset(Operation),
    peek_cost=PEEK_COST,
    rates=True,
    oldest_message_age=True,
    alarms=True,
)
