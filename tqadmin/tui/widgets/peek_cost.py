"""What a peek cost, said the same way on every screen that peeks.

The broker's own cost text comes first (the plugin's, with its warnings for this queue). Where the broker
counts deliveries and a look is one, the notice also says how close the
most-delivered message is to the point where the broker drops or dead-letters it.
"""

from __future__ import annotations

from rich.text import Text

from tqadmin.plugin.models import PeekResult
from tqadmin.tui.text import clean


def highest_delivery_count(result: PeekResult) -> int | None:
    counts = [m.delivery_count for m in result.messages if m.delivery_count is not None]
    return max(counts) if counts else None


def cost_notice(result: PeekResult) -> Text:
    text = Text(end="")
    text.append(" Cost of this look: ", style="bold yellow")
    text.append(clean(result.cost), style="yellow")
    deliveries = highest_delivery_count(result)
    if deliveries is not None:
        limit = (
            f" of the {result.delivery_limit} after which the broker drops or dead-letters it"
            if result.delivery_limit is not None
            else ""
        )
        text.append(
            f"\n Deliveries counted: the most-delivered message here has {deliveries}{limit},"
            " one more after this look.",
            style="bold red",
        )
    return text
