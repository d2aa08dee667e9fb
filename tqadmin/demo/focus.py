"""The dashboard focused on the demo: the broker's admin face with only the demo's queues listed.

The app polls whatever admin its factory returns, so handing it this one shows the demo's work, retry and
dead-letter queues and nothing else on a broker that may hold thousands, while every action (peek, replay,
move, purge, export) still goes to the real admin with the real capabilities.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

from tqadmin.config import Settings
from tqadmin.demo.layout import Layout
from tqadmin.plugin.base import BrokerAdmin, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, DeathRecord, Message, PeekResult, QueueListing
from tqadmin.plugin.workers import WorkerReading


class FocusedAdmin(BrokerAdmin):
    """Lists the layout's queues only; everything else is the wrapped admin's."""

    capabilities: ClassVar[Capabilities]

    def __init__(self, inner: BrokerAdmin, layout: Layout) -> None:
        self.inner = inner
        self.layout = layout

    def list_queues(self) -> QueueListing:
        listing = self.inner.list_queues()
        return dataclasses.replace(
            listing, queues=tuple(q for q in listing.queues if self.layout.owns(q.name))
        )

    def peek(self, queue: str, count: int) -> PeekResult:
        return self.inner.peek(queue, count)

    def open_transfer(self, queue: str) -> TransferSession:
        return self.inner.open_transfer(queue)

    def purge(self, queue: str) -> int:
        return self.inner.purge(queue)

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        return self.inner.server_side_move(source, target, limit)

    def server_side_replay(
        self, dlq: str, target: str | None, progress: Callable[[str], None]
    ) -> ActionReport | None:
        return self.inner.server_side_replay(dlq, target, progress)

    def peek_risk(self, queue: str) -> str | None:
        return self.inner.peek_risk(queue)

    def queue_exists(self, queue: str) -> bool:
        return self.inner.queue_exists(queue)

    def read_only_reason(self, queue: str) -> str | None:
        return self.inner.read_only_reason(queue)

    def require_writable(self, action: str, *queues: str | None) -> None:
        self.inner.require_writable(action, *queues)

    def deaths(self, message: Message) -> tuple[DeathRecord, ...]:
        return self.inner.deaths(message)

    def framework_workers(self) -> WorkerReading:
        return self.inner.framework_workers()

    def close(self) -> None:
        self.inner.close()


def focused(inner: BrokerAdmin, layout: Layout) -> BrokerAdmin:
    """Wrap ``inner``, keeping its class's capabilities (the app reads them from the admin's type)."""
    cls = type(f"Focused{type(inner).__name__}", (FocusedAdmin,), {"capabilities": type(inner).capabilities})
    return cls(inner, layout)  # type: ignore[no-any-return]


def focused_factory(
    connect: Callable[[Settings], BrokerAdmin], layout: Layout
) -> Callable[[Settings], BrokerAdmin]:
    """An ``admin_factory`` for :class:`~tqadmin.tui.TqadminApp` that shows only the demo's queues."""
    return lambda settings: focused(connect(settings), layout)
