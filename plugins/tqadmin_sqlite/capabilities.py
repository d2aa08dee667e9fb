"""What the SQLite broker can do: every operation, a free peek, delays to the millisecond, leases."""

from __future__ import annotations

from tqadmin.plugin.capabilities import Capabilities, Operation, TransportCapabilities

PEEK_COST = "none: a plain read of the file (nothing is marked redelivered, counted or reordered)"
# Longer delays than this are applied in one step too; the bound only keeps due times far from overflow.
MAX_DELAY_S = 10 * 365 * 24 * 3600.0
DELAY_SLACK_S = 0.001  # a due time is kept to the millisecond

CAPABILITIES = Capabilities(
    supported=frozenset(Operation),
    peek_cost=PEEK_COST,
    server_side_needs="nothing: it is one transaction in the file",
)

TRANSPORT_CAPABILITIES = TransportCapabilities(
    max_delay_s=MAX_DELAY_S,
    delay_slack_s=DELAY_SLACK_S,
    leased=True,  # a claimed row comes back by itself once its lease ends, unless the consumer extends it
)
