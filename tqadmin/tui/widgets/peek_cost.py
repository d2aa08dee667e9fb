"""What a peek cost, said the same way on every screen that peeks.

The broker's own cost text comes first (the plugin's, with its warnings for this queue). Where the broker
counts deliveries, the notice also says how close the most-delivered message is to the point where the
broker drops or dead-letters it, and whether this look added one: what the plugin declares
(:attr:`Capabilities.peek_counts_delivery`), never a sentence that holds for one broker only.
"""

from __future__ import annotations

from rich.text import Text

from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import PeekResult
from tqadmin.tui.text import clean


def highest_delivery_count(result: PeekResult) -> int | None:
    counts = [m.delivery_count for m in result.messages if m.delivery_count is not None]
    return max(counts) if counts else None


def cost_notice(result: PeekResult, capabilities: Capabilities) -> Text:
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
        if capabilities.peek_counts_delivery:
            effect, style = "one more after this look.", "bold red"
        else:
            effect, style = "a look adds none.", "yellow"
        text.append(
            f"\n Deliveries counted: the most-delivered message here has {deliveries}{limit}; {effect}",
            style=style,
        )
    return text
