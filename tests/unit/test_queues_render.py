"""``tqadmin queues`` as a person reads it: another framework's queues are named read-only, with why."""

from __future__ import annotations

from tqadmin.commands.queues import render
from tqadmin.plugin.models import QueueListing, QueueStats

RQ_REASON = "an RQ queue: RQ keeps each job in a hash, so tqadmin only shows and peeks it"


def test_read_only_queues_are_listed_under_the_table_once_per_reason() -> None:
    queues = (
        QueueStats("orders", 1, 1, 0, 1),
        QueueStats("rq:mail", 2, 2, 0, 0, read_only=RQ_REASON),
        QueueStats("rq:mail:failed", 5, 5, 0, None, read_only=RQ_REASON),
        QueueStats("sidekiq:dead\x1b[2J", 4, 4, 0, None, read_only="a Sidekiq queue"),
    )
    lines = render(QueueListing(queues, ())).splitlines()
    assert lines[-2:] == [
        f"read-only rq:mail, rq:mail:failed: {RQ_REASON}",
        "read-only sidekiq:dead\\x1b[2J: a Sidekiq queue",  # a name from the broker cannot drive the terminal
    ]
    assert not any(line.startswith("read-only orders") for line in lines)
