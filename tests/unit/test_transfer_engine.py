"""The safety rule of move and replay, specified against an in-memory session (no broker needed)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tqadmin.admin.filters import parse_filter
from tqadmin.admin.transfer import TransferPlan, count_replay, replay_route, to_queue, transfer
from tqadmin.errors import Unroutable
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.models import Message


class MemorySession(TransferSession):
    """A queue in a list; records every publish, ack and release in order."""

    def __init__(self, messages: list[Message], fail_publish_after: int | None = None) -> None:
        self.queue = list(messages)
        self.start = len(messages)
        self.next = 0
        self.published: list[tuple[str, Message]] = []
        self.acked: list[Message] = []
        self.events: list[str] = []
        self.fail_after = fail_publish_after
        self.closed = False

    def count_at_start(self) -> int:
        return self.start

    def fetch(self, limit: int) -> Sequence[Delivery]:
        taken = self.queue[self.next : min(self.next + limit, self.start)]
        self.next += len(taken)
        return [Delivery(m, m) for m in taken]

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        if self.fail_after is not None and len(self.published) + len(items) > self.fail_after:
            raise Unroutable("no queue")
        self.published.extend(items)
        self.events.append(f"publish {len(items)}")

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.acked.extend(d.message for d in deliveries)
        self.events.append(f"ack {len(deliveries)}")

    def release(self, deliveries: Sequence[Delivery]) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def jobs(n: int, **headers: object) -> list[Message]:
    return [
        Message(body=f'{{"task_type": "t{i % 2}", "id": "j{i}"}}'.encode(), headers=headers, id=f"j{i}")
        for i in range(n)
    ]


def test_every_ack_follows_the_confirmed_publish_of_the_same_batch() -> None:
    session = MemorySession(jobs(1200))
    outcome = transfer(
        session, TransferPlan(action="move", source="a", target="b", route=to_queue("b"), window=500)
    )
    assert outcome.report.moved == 1200
    assert session.events == ["publish 500", "ack 500", "publish 500", "ack 500", "publish 200", "ack 200"]
    assert session.closed


def test_a_failed_publish_acks_nothing_of_its_batch_and_reports_the_error() -> None:
    session = MemorySession(jobs(1200), fail_publish_after=700)
    outcome = transfer(
        session, TransferPlan(action="move", source="a", target="b", route=to_queue("b"), window=500)
    )
    assert isinstance(outcome.error, Unroutable)
    assert len(session.acked) == 500
    assert outcome.report.moved == 500
    assert outcome.report.failed == 500


def test_the_filter_leaves_non_matching_messages_unacked() -> None:
    session = MemorySession(jobs(10))
    plan = TransferPlan(
        action="move", source="a", target="b", route=to_queue("b"), matches=parse_filter("task_type=t1")
    )
    report = transfer(session, plan).report
    assert (report.matched, report.moved) == (5, 5)
    assert [m.id for m in session.acked] == ["j1", "j3", "j5", "j7", "j9"]


def test_the_limit_counts_matching_messages() -> None:
    session = MemorySession(jobs(10))
    plan = TransferPlan(action="move", source="a", target="b", route=to_queue("b"), limit=3, window=2)
    assert transfer(session, plan).report.moved == 3
    assert len(session.acked) == 3


def test_a_dry_run_counts_and_neither_publishes_nor_acks() -> None:
    session = MemorySession(jobs(10))
    plan = TransferPlan(action="move", source="a", target="b", route=to_queue("b"), dry_run=True)
    report = transfer(session, plan).report
    assert (report.matched, report.moved, report.dry_run) == (10, 0, True)
    assert session.events == []


def test_replay_without_an_original_queue_leaves_the_message_and_says_why() -> None:
    messages = jobs(2, **{"x-tq-original-queue": "orders"}) + jobs(1)
    session = MemorySession(messages)
    plan = TransferPlan(
        action="replay",
        source="dlq",
        route=replay_route(None),
        rewrite=count_replay,
        unrouted_reason="no header",
    )
    report = transfer(session, plan).report
    assert (report.moved, report.failed) == (2, 1)
    assert report.not_done == ("1 message(s) left in dlq: no header",)
    assert [q for q, _ in session.published] == ["orders", "orders"]


def test_replay_adds_one_to_the_replay_count_restores_the_retry_budget_and_keeps_the_rest() -> None:
    headers = {"x-tq-replays": 2, "k": "v", "x-tq-retry-count": 5}
    message = Message(body=b"\x00\xff", headers=headers, properties={"priority": 3})
    copy = count_replay(message)
    assert copy.headers == {"x-tq-replays": 3, "k": "v"}
    assert (copy.body, copy.properties) == (b"\x00\xff", {"priority": 3})


def test_skip_done_leaves_completed_jobs_in_the_source() -> None:
    session = MemorySession(jobs(4))
    plan = TransferPlan(
        action="replay", source="dlq", route=to_queue("q"), already_done=lambda ids: {"j0", "j2"}
    )
    report = transfer(session, plan).report
    assert report.moved == 2
    assert "skipped 2" in report.detail
    assert [m.id for m in session.acked] == ["j1", "j3"]


@pytest.mark.parametrize("rate", [None, 50.0])
def test_the_pacer_keeps_batches_small_under_a_rate(rate: float | None) -> None:
    from tqadmin.admin.transfer import Pacer

    assert Pacer(rate).batch_size(500) == (500 if rate is None else 5)
