"""What the memory broker declares: every admin operation, a free peek, exact delays, leased deliveries."""

from __future__ import annotations

import math

from tqadmin.plugin.capabilities import Capabilities, Operation, TransportCapabilities

PEEK_COST = "free: the memory broker reads its messages in place, with no side effect"
NO_COUNTERS = "the memory broker keeps no rate counters"

CAPABILITIES = Capabilities(
    supported=frozenset(Operation),
    peek_cost=PEEK_COST,
    unavailable=tuple((rate, NO_COUNTERS) for rate in ("publish_rate", "deliver_rate", "ack_rate")),
    server_side_needs="nothing: the memory broker moves messages inside its own process",
)

TRANSPORT_CAPABILITIES = TransportCapabilities(
    max_delay_s=math.inf,  # a delay is a due time on the broker's clock: any length, exact, in one step
    leased=True,
)
