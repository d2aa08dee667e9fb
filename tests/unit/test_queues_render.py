"""The human rendering of ``tqadmin queues``: readable ages, aligned numbers, names that cannot drive the
terminal."""

from __future__ import annotations

import pytest

from tqadmin.commands.queues import age, render
from tqadmin.plugin.models import Alarm, QueueListing, QueueStats


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, None), (0.4, "0s"), (42.9, "42s"), (187, "3m07s"), (18_120, "5h02m"), (183_600, "2d03h")],
)
def test_ages_are_shown_in_two_units_at_most(seconds: float | None, shown: str | None) -> None:
    assert age(seconds) == shown


def test_alarms_come_first_and_rates_are_right_aligned_numbers() -> None:
    listing = QueueListing(
        (
            QueueStats("a", 1, 1, 0, 0, publish_rate=12.345, deliver_rate=0.0, ack_rate=0.0, dlq="a.dlq"),
            QueueStats("bb", 1000, 990, 10, 4, publish_rate=0.0, deliver_rate=0.0, ack_rate=0.0),
        ),
        (Alarm("rabbit@x", "memory", "memory alarm: publishers are blocked"),),
    )
    lines = render(listing).splitlines()
    assert lines[0] == "ALARM memory on rabbit@x memory alarm: publishers are blocked"
    pub = lines[1].index("PUB/S") + len("PUB/S")
    assert lines[2][:pub].endswith("12.3") and lines[3][:pub].endswith("0.0")


def test_control_characters_in_queue_names_are_escaped() -> None:
    listing = QueueListing((QueueStats("evil\x1b[2Jname", 0, 0, 0, 0),))
    text = render(listing)
    assert "\x1b" not in text and "evil\\x1b[2Jname" in text


def test_read_only_queues_are_named_under_the_table_once_per_reason() -> None:
    rq_reason = "an RQ queue: RQ keeps each job in a hash, so tqadmin only shows and peeks it"
    listing = QueueListing(
        (
            QueueStats("orders", 1, 1, 0, 1),
            QueueStats("rq:mail", 2, 2, 0, 0, read_only=rq_reason),
            QueueStats("rq:mail:failed", 5, 5, 0, None, read_only=rq_reason),
            QueueStats("sidekiq:dead\x1b[2J", 4, 4, 0, None, read_only="a Sidekiq queue"),
        ),
    )
    lines = render(listing).splitlines()
    assert lines[-2:] == [
        f"read-only rq:mail, rq:mail:failed: {rq_reason}",
        "read-only sidekiq:dead\\x1b[2J: a Sidekiq queue",
    ]
    assert not any(line.startswith("read-only orders") for line in lines)


def test_drain_shows_growing_or_the_time_to_empty_and_the_dlq_its_own_age() -> None:
    listing = QueueListing(
        (
            QueueStats("a", 9, 9, 0, 1, dlq="a.dlq", dlq_messages=2, dlq_oldest_age_s=600, drain_s=95.0),
            QueueStats("b", 50, 50, 0, 1, growing=True),
            QueueStats("c", 5, 5, 0, 1),
        ),
    )
    header, a, b, c = (line.split() for line in render(listing).splitlines())
    drain = header.index("DRAIN")  # every cell before it is one word
    assert (a[drain], b[drain], c[drain]) == ("1m35s", "growing", "-")
    assert a[-1] == "10m00s" and header[-2:] == ["DLQ", "AGE"]


def test_a_dlq_age_the_broker_cannot_give_says_why_under_the_table() -> None:
    text = render(QueueListing((QueueStats("q", 0, 0, 0, None),)), {"dlq_oldest_age_s": "CloudWatch only"})
    assert text.splitlines()[-1] == "DLQ AGE: - (unavailable: CloudWatch only)"
