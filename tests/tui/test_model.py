"""The dashboard's pure logic: bounded history, alerts, backoff, literal strings, dead-letter groups."""

from __future__ import annotations

import threading

from tests.tui.seeding import SeededAdmin
from tqadmin.admin.dead_letters import group_dead_letters
from tqadmin.admin.filters import parse_filter
from tqadmin.alerting.conditions import QueueContext, queue_alerts
from tqadmin.config import Thresholds
from tqadmin.connect.backoff import poll_retry_delay
from tqadmin.plugin.models import Message, QueueListing, QueueStats
from tqadmin.tui.actions import WatchedSession
from tqadmin.tui.model import QueueBoard, sparkline
from tqadmin.tui.text import clean, literal


def listing(*depths: tuple[str, int]) -> QueueListing:
    return QueueListing(tuple(QueueStats(n, d, d, 0, 1) for n, d in depths))


def test_the_board_forgets_queues_the_broker_no_longer_lists() -> None:
    board = QueueBoard()
    board.apply(listing(("a", 1), ("b", 2)))
    board.apply(listing(("a", 5), ("c", 0)))
    assert set(board.stats) == set(board.history) == {"a", "c"}
    assert list(board.history["a"]) == [1, 5]


def test_depth_history_is_bounded_however_long_it_runs() -> None:
    board = QueueBoard(history_len=5)
    for depth in range(1000):
        board.apply(listing(("a", depth)))
    assert list(board.history["a"]) == [995, 996, 997, 998, 999]


def test_sparkline_scales_to_its_own_maximum_draws_zero_empty_and_a_flat_depth_low() -> None:
    assert sparkline([0, 0, 0]) == "   "
    assert sparkline([0, 4, 8]) == " ▅█"
    assert sparkline([3, 3, 3]) == "▂▂▂"
    assert sparkline([]) == ""


def test_a_queue_over_any_threshold_says_why() -> None:
    queue = QueueStats("q", 500, 500, 0, 0, oldest_age_s=700.0, dlq="q.dlq", dlq_messages=3)
    reasons = queue_alerts(queue, Thresholds(depth=100, oldest_age_s=600.0, dlq_messages=1))
    assert len(reasons) == 4, "depth, age, dead letters, and ready with no consumer"
    assert queue_alerts(QueueStats("q", 1, 1, 0, 1), Thresholds(depth=100)) == {}


def test_ready_messages_nobody_consumes_and_a_queue_whose_workers_all_died_need_a_look() -> None:
    unconsumed = QueueStats("q", 5, 5, 0, 0)
    assert list(queue_alerts(unconsumed, Thresholds())) == ["TqadminQueueNoConsumer"]
    assert queue_alerts(unconsumed, Thresholds(), QueueContext(dead_letter_queue=True)) == {}, (
        "nobody reads a DLQ"
    )
    served = QueueStats("q", 0, 0, 0, 1)
    assert list(queue_alerts(served, Thresholds(), QueueContext(dead_workers=2))) == [
        "TqadminQueueWorkersDead"
    ]
    assert queue_alerts(served, Thresholds(), QueueContext(live_workers=1, dead_workers=2)) == {}


def test_a_failing_api_is_retried_no_slower_than_two_refreshes_and_no_faster_than_once_a_second() -> None:
    """A dashboard at a 5 s refresh used to wait 20 s after two timeouts, and 60 s after a few more."""
    for refresh in (0.2, 0.5, 1.0, 2.0, 5.0, 30.0):
        delays = [poll_retry_delay(n, refresh) for n in range(1, 1000)]
        assert all(max(1.0, refresh) <= d <= max(1.0, 2 * refresh) for d in delays), refresh
    assert [poll_retry_delay(n, 5.0) for n in range(4)] == [5.0, 5.0, 7.5, 7.5]


def test_broker_strings_lose_escape_sequences_and_keep_their_brackets() -> None:
    hostile = "[bold red]x[/]\x1b[31m\x1b]0;title\x07\x00end"
    assert clean(hostile) == "[bold red]x[/]end"
    text = literal(hostile)
    assert text.plain == "[bold red]x[/]end"
    assert text.spans == []


def test_dead_letters_group_by_reason_error_and_task_type_largest_first() -> None:
    def dead(reason: str, error: str) -> Message:
        return Message(b'{"task_type": "t"}', headers={"x-tq-reason": reason, "x-tq-error": error})

    groups = group_dead_letters([dead("fatal", "E: a, b"), dead("fatal", "E: a, b"), dead("timeout", "T")])
    assert [(g.reason, g.count) for g in groups] == [("fatal", 2), ("timeout", 1)]
    expression = groups[0].filter_expression()
    predicate = parse_filter(expression)
    assert predicate(dead("fatal", "E: a, b"))
    assert not predicate(dead("timeout", "T"))


def test_a_cancelled_session_looks_drained_so_the_engine_stops_between_batches() -> None:
    fake = SeededAdmin()
    depth = len(fake.messages["orders"])
    cancel = threading.Event()
    seen: list[tuple[int, int | None]] = []
    session = WatchedSession(
        fake.open_transfer("orders"), lambda d, t: seen.append((d, t)), cancel, acks=False
    )
    session.count_at_start()
    assert len(session.fetch(1)) == 1
    cancel.set()
    assert session.fetch(10) == ()
    session.close()
    assert seen[-1] == (1, depth)
    assert len(fake.messages["orders"]) == depth


def test_a_work_queue_a_retry_queue_dead_letters_into_is_not_listed_as_a_dead_letter_queue() -> None:
    from tqadmin.plugin.models import QueueStats
    from tqadmin.tui.screens.dead_letters import dead_letter_queues

    def queue(name: str, dlq: str | None = None) -> QueueStats:
        return QueueStats(name, messages=0, ready=0, unacked=0, consumers=0, dlq=dlq)

    stats = {
        "work": queue("work", "work.dlq"),
        "work.retry": queue("work.retry", "work"),
        "work.dlq": queue("work.dlq"),
        "jobs": queue("jobs", "jobs-dead"),
        "jobs-dead": queue("jobs-dead"),
    }
    assert dead_letter_queues(dict(stats)) == ["jobs-dead", "work.dlq"]


def test_the_overview_paints_a_queue_red_when_its_workers_are_all_dead() -> None:
    from tqadmin.tui.widgets.queue_table import row_text

    served = QueueStats("q", 0, 0, 0, 1)
    assert not any("red" in str(span.style) for span in row_text(served, QueueBoard(), Thresholds()).spans)
    dead = row_text(served, QueueBoard(), Thresholds(), QueueContext(dead_workers=1))
    assert any(str(span.style) == "bold red" for span in dead.spans)
