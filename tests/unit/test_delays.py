"""Retry delay queues fold into the work queue they feed: its "delayed" figure, shown on request."""

from tqadmin.plugin.kit.delays import delay_queues_of, fold_delays, work_queues
from tqadmin.plugin.models import QueueStats


def stats(name: str, messages: int, delay_for: str | None = None) -> QueueStats:
    return QueueStats(name, messages, messages, 0, 0, delay_for=delay_for)


LISTING = [
    stats("work", 7),
    stats("work.retry.10s", 2, "work"),
    stats("work.retry.2s", 3, "work"),
    stats("work.retry.500ms", 1, "work"),
    stats("work.dlq", 4),
    stats("other", 1),
]


def test_a_work_queue_counts_the_messages_waiting_in_its_delay_queues_as_delayed() -> None:
    folded = {q.name: q for q in fold_delays(LISTING)}
    assert folded["work"].delayed == 6
    assert folded["work"].messages == 7  # its own figures stay its own
    assert folded["other"].delayed == 0 and folded["work.dlq"].delayed == 0
    assert folded["work.retry.2s"] == stats("work.retry.2s", 3, "work")


def test_listings_leave_delay_queues_out_unless_asked_and_the_detail_names_them_in_order() -> None:
    assert [q.name for q in work_queues(LISTING)] == ["work", "work.dlq", "other"]
    assert len(work_queues(LISTING, include_delay_queues=True)) == len(LISTING)
    names = [q.name for q in delay_queues_of(LISTING, "work")]
    assert names == ["work.retry.2s", "work.retry.10s", "work.retry.500ms"]  # natural order of the names
    assert delay_queues_of(LISTING, "other") == []


def test_the_json_of_a_queue_says_what_is_delayed_and_what_a_delay_queue_feeds() -> None:
    folded = {q.name: q.to_json() for q in fold_delays(LISTING)}
    assert folded["work"]["delayed"] == 6 and folded["work"]["delay_for"] is None
    assert folded["work.retry.2s"]["delay_for"] == "work"
