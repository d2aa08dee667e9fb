"""What the SQS plugin can do, what a look costs on it, and how its transport applies delays."""

from __future__ import annotations

from tqadmin.plugin.capabilities import Capabilities, Operation, TransportCapabilities

MAX_DELAY_S = 900.0  # DelaySeconds: whole seconds, at most 15 minutes; longer delays hop
CLOUDWATCH_ONLY = "SQS gives this only through CloudWatch metrics, which tqadmin does not read"

PEEK_COST = (
    "SQS cannot read without receiving: each look is a receive, which adds 1 to every message's"
    " ApproximateReceiveCount and hides it from consumers until the look gives it back (at once)"
)

CAPABILITIES = Capabilities(
    supported=frozenset(Operation) - {Operation.SERVER_SIDE_MOVE},
    reasons=(
        (
            Operation.SERVER_SIDE_MOVE,
            "SQS moves messages by itself only out of a dead-letter queue (a message move task): replay uses"
            " it; move goes through the client",
        ),
    ),
    peek_cost=PEEK_COST,
    peek_counts_delivery=True,
    unavailable=(
        ("consumers", "SQS has no notion of consumers"),
        ("publish_rate", CLOUDWATCH_ONLY),
        ("deliver_rate", CLOUDWATCH_ONLY),
        ("ack_rate", CLOUDWATCH_ONLY),
        ("oldest_age_s", f"the age of the oldest message: {CLOUDWATCH_ONLY}"),
        ("dlq_oldest_age_s", f"the age of the oldest dead letter: {CLOUDWATCH_ONLY}"),
    ),
    server_side_replay=True,
    server_side_needs=(
        "SQS's message move tasks (StartMessageMoveTask), which this endpoint does not offer, and a DLQ that"
        " one queue's redrive policy names (or --to)"
    ),
)

TRANSPORT_CAPABILITIES = TransportCapabilities(
    max_delay_s=MAX_DELAY_S,
    delay_slack_s=1.0,  # DelaySeconds is whole seconds: a delay is rounded up to the next one
    leased=True,  # a received message comes back when its visibility timeout runs out
)
