"""What the RabbitMQ plugin can do, what a peek costs on it, and how its transport applies delays."""

from __future__ import annotations

from tqadmin.frameworks.summary import CELERY
from tqadmin.plugin.capabilities import Capabilities, Operation, PublishOption, TransportCapabilities
from tqadmin_rabbitmq.deaths import BROKER_HEADERS
from tqadmin_rabbitmq.tiers import ABSOLUTE_SLACK_S, MAX_DELAY_S, RELATIVE_SLACK

PEEK_COST = (
    "RabbitMQ has no non-destructive read: peek gets and requeues, which marks the messages redelivered, "
    "counts a delivery, and can reorder them while consumers are active"
)

CAPABILITIES = Capabilities(
    supported=frozenset(Operation),
    peek_cost=PEEK_COST,
    peek_counts_delivery=True,
    broker_headers=BROKER_HEADERS,
    server_side_needs="a RabbitMQ shovel: the shovel plugin, and a user with the policymaker tag",
    worker_registries=(CELERY,),
)

TRANSPORT_CAPABILITIES = TransportCapabilities(
    max_delay_s=MAX_DELAY_S,
    delay_slack_s=ABSOLUTE_SLACK_S,
    delay_slack_ratio=RELATIVE_SLACK,
    leased=False,  # a channel holds its deliveries; the broker requeues them when the channel closes
    publish_options=(
        PublishOption("exchange", "RabbitMQ: publish to this exchange as it is (declares nothing)"),
        PublishOption("routing_key", "RabbitMQ: routing key (default: the queue name)", addresses=True),
    ),
)
