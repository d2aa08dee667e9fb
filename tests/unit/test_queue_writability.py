"""Per-queue writability in the plugin contract: a queue the broker shows but tqadmin never writes."""

from __future__ import annotations

from typing import ClassVar

import pytest

from tqadmin.errors import ExitCode, NotSupported, QueueReadOnly
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import QueueListing


class NoQueues(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = Capabilities(supported=frozenset())

    def list_queues(self) -> QueueListing:
        return QueueListing((), ())


class ShowsSidekiq(NoQueues):
    def read_only_reason(self, queue: str) -> str | None:
        return "a Sidekiq queue; use Sidekiq's Web UI" if queue.startswith("sidekiq:") else None


def test_a_write_touching_a_read_only_queue_is_refused_in_one_line_with_exit_6() -> None:
    admin = ShowsSidekiq()
    admin.require_writable("replay", "orders.dlq", None)  # a queue it may write, and no --to
    with pytest.raises(QueueReadOnly) as refused:
        admin.require_writable("move", "orders", "sidekiq:dead")
    assert str(refused.value) == (
        "move refused: sidekiq:dead is a Sidekiq queue; use Sidekiq's Web UI; nothing was written"
    )
    assert refused.value.exit_code == ExitCode.READ_ONLY
    assert isinstance(refused.value, NotSupported)  # what greys an action out in the TUI


def test_every_queue_is_writable_unless_the_plugin_says_otherwise() -> None:
    NoQueues().require_writable("purge", "sidekiq:dead")
