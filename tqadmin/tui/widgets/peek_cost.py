"""What a peek cost, said the same way on every screen that peeks.

The broker's own cost text comes first (the RabbitMQ plugin's ``PEEK_COST``, plus its quorum warning when the
queue is a quorum queue). When the messages carry ``x-delivery-count`` the notice also says how close the
most-peeked message is to being dropped (the plugin's text says why: on a quorum queue every look is a
delivery, and past the queue's delivery-limit RabbitMQ drops or dead-letters the message).
"""

from __future__ import annotations

from rich.text import Text

from tqadmin.plugin.models import PeekResult
from tqadmin.tui.text import clean

DELIVERY_COUNT = "x-delivery-count"


def highest_delivery_count(result: PeekResult) -> int | None:
    counts = [m.headers.get(DELIVERY_COUNT) for m in result.messages]
    numbers = [int(c) for c in counts if isinstance(c, int) and not isinstance(c, bool)]
    return max(numbers) if numbers else None


def cost_notice(result: PeekResult) -> Text:
    text = Text(end="")
    text.append(" Cost of this look: ", style="bold yellow")
    text.append(clean(result.cost), style="yellow")
    deliveries = highest_delivery_count(result)
    if deliveries is not None:
        text.append(
            f"\n Quorum queue: the most-delivered message here has {DELIVERY_COUNT} {deliveries},"
            " one more after this look.",
            style="bold red",
        )
    return text
