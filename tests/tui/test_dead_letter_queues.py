"""The dashboard's dead-letter queues are the ones the plugins name in ``QueueStats.dlq``, whatever they are
called: no suffix is guessed."""

from tqadmin.plugin.models import QueueStats
from tqadmin.tui.screens.dead_letters import dead_letter_queues


def queue(name: str, dlq: str | None = None) -> QueueStats:
    return QueueStats(name, messages=0, ready=0, unacked=0, consumers=0, dlq=dlq)


def test_a_queue_another_dead_letters_into_is_listed_however_it_is_named() -> None:
    stats = {q.name: q for q in (queue("orders", "orders-parking"), queue("orders-parking"))}
    assert dead_letter_queues(stats) == ["orders-parking"]


def test_a_queue_named_like_a_dlq_that_no_queue_dead_letters_into_is_no_dead_letter_queue() -> None:
    stats = {q.name: q for q in (queue("audit.dlq"), queue("reports-dlq"), queue("work", "work.dlq"))}
    assert dead_letter_queues(stats) == []
