"""Publisher-confirm bookkeeping for one confirm-mode channel, shared by the publisher and the worker.

Why our own tracking: pika's BlockingChannel waits for each confirm in turn (one round trip per message);
with the asynchronous channel we keep a window of messages in flight and settle them as ``Basic.Ack`` or
``Basic.Nack`` frames arrive, ``multiple`` ones included. A mandatory message the broker cannot route comes
back as ``Basic.Return`` *before* its ack, so a return marks the oldest unsettled message with that id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any


class Settlement(Enum):
    CONFIRMED = "confirmed"
    RETURNED = "returned"  # unroutable: acked by the broker but stored nowhere
    NACKED = "nacked"
    LOST = "lost"  # the channel closed before the broker answered


Settled = Callable[[Settlement], None]


class ConfirmTracker:
    """Delivery tags of one confirm-mode channel mapped to what to do when each is settled."""

    def __init__(self) -> None:
        self._next_tag = 1
        self._pending: dict[int, tuple[str, Settled]] = {}
        self._by_id: dict[str, deque[int]] = {}
        self._returned: set[int] = set()

    def __len__(self) -> int:
        return len(self._pending)

    def published(self, message_id: str, on_settled: Settled) -> None:
        """Record a message just published on the channel (tags count from 1 in publish order)."""
        tag = self._next_tag
        self._next_tag += 1
        self._pending[tag] = (message_id, on_settled)
        self._by_id.setdefault(message_id, deque()).append(tag)

    def on_return(self, message_id: str | None) -> None:
        tags = self._by_id.get(message_id or "")
        if tags:
            self._returned.add(tags.popleft())

    def on_confirm(self, method: Any) -> None:
        """Handle a ``Basic.Ack`` or ``Basic.Nack`` method (``multiple`` settles every tag up to it)."""
        ok = type(method).__name__ == "Ack"
        tag = int(method.delivery_tag)
        tags = [t for t in self._pending if t <= tag] if method.multiple else [tag]
        for t in tags:
            self._settle(t, Settlement.CONFIRMED if ok else Settlement.NACKED)

    def fail_all(self) -> None:
        """The channel is gone: every unsettled message is of unknown fate."""
        for t in list(self._pending):
            self._settle(t, Settlement.LOST)

    def _settle(self, tag: int, outcome: Settlement) -> None:
        entry = self._pending.pop(tag, None)
        if entry is None:
            return
        message_id, on_settled = entry
        if tag in self._returned:
            self._returned.discard(tag)
            if outcome is Settlement.CONFIRMED:
                outcome = Settlement.RETURNED
        else:
            tags = self._by_id.get(message_id)
            if tags and tags[0] == tag:
                tags.popleft()
        if not self._by_id.get(message_id, True):
            del self._by_id[message_id]
        on_settled(outcome)
