"""Ages that count what can run, on every plugin: a queue holding only delayed retries has no oldest age
(it is not stuck: nothing in it can be taken), and a dead-letter queue's oldest dead letter has its own age
where the broker can tell (the plugin declares it unavailable otherwise, with the reason).

Listings are polled until they show the state the test made: RabbitMQ's management API reflects a queue's
figures only at its next statistics emission (every 5 s by default), so every wait has a generous deadline.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from contract_harness import Harness

from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import HEADER_REASON, HEADER_RETRY_COUNT, QueueStats
from tqadmin.plugin.transport import BrokerTransport, Consumer

BODY = b'{"task_type": "t", "id": "aged"}'
LONG_DELAY_S = 600.0  # the retry stays delayed for the whole test
DEADLINE_S = 90.0  # a deadline for the listing to catch up, not a speed
POLL_S = 0.5
RECENT_S = 300.0  # a dead letter made within the test is younger than this, on any clock
FIRST_WAIT_S = 8.0  # how long the first publish waits before it is taken and retried
DUE_IN_S = 4.0  # the retry's delay: long enough for its consumer to stop before it falls due
SLACK_S = 2.0  # whole-second stamps (RabbitMQ's timestamp property) and a loaded machine's turns


@pytest.fixture
def transport(harness: Harness) -> Iterator[BrokerTransport]:
    with harness.transport() as t:
        yield t


def one_delivery(harness: Harness, queue: str) -> tuple[Consumer, Delivery, Callable[[], None]]:
    """A consumer of the plugin's, the first delivery of ``queue`` to it, and how to stop it."""
    consumer = harness.consumer(queue, prefetch=1, lease_s=30.0)
    got: list[Delivery] = []
    arrived = threading.Event()

    def handle(delivery: Delivery) -> None:
        got.append(delivery)
        arrived.set()

    loop = threading.Thread(target=consumer.run, args=(handle,), daemon=True)
    loop.start()
    assert arrived.wait(DEADLINE_S), "no delivery"

    def stop() -> None:
        consumer.stop()
        consumer.drained()
        loop.join(DEADLINE_S)

    return consumer, got[0], stop


def listed_when(harness: Harness, queue: str, ready: Callable[[QueueStats], bool]) -> QueueStats:
    """``queue``'s figures from the first listing where ``ready`` holds (the last one seen on a timeout)."""
    deadline = time.monotonic() + DEADLINE_S
    with harness.admin() as admin:
        while True:
            found = next((q for q in admin.list_queues().queues if q.name == queue), None)
            if found is not None and ready(found):
                return found
            assert time.monotonic() < deadline, f"the listing never showed the state the test made: {found}"
            time.sleep(POLL_S)


def test_a_queue_holding_only_delayed_retries_has_no_oldest_age(
    harness: Harness, transport: BrokerTransport
) -> None:
    queue = harness.make_queue([BODY])
    transport.declare(queue)
    consumer, delivery, stop = one_delivery(harness, queue)
    try:
        assert consumer.retry_later(delivery, LONG_DELAY_S, {HEADER_RETRY_COUNT: 1}) is True
    finally:
        stop()
    stats = listed_when(harness, queue, lambda q: q.ready == 0 and q.unacked == 0 and bool(q.delayed))
    assert not stats.oldest_age_s, f"a queue of delayed retries only reads {stats.oldest_age_s} s old"


def test_a_due_retry_ages_from_its_due_time_not_from_its_first_publish(
    harness: Harness, transport: BrokerTransport
) -> None:
    with harness.admin() as admin:
        if type(admin).capabilities.why_unavailable("oldest_age_s"):
            pytest.skip("this broker gives no oldest age (the plugin says why)")
    queue = harness.make_queue([BODY])
    transport.declare(queue)
    time.sleep(FIRST_WAIT_S)
    consumer, delivery, stop = one_delivery(harness, queue)
    try:
        assert consumer.retry_later(delivery, DUE_IN_S, {HEADER_RETRY_COUNT: 1}) is True
        retried_at = time.time()
    finally:
        stop()
    stats = listed_when(harness, queue, lambda q: q.oldest_age_s is not None)
    counted_from_due = time.time() - retried_at - DUE_IN_S
    assert stats.oldest_age_s is not None
    assert stats.oldest_age_s <= counted_from_due + SLACK_S, (
        f"{stats.oldest_age_s} s: counted from before the retry fell due"
    )


def test_a_dead_letter_queue_has_its_own_oldest_age(harness: Harness, transport: BrokerTransport) -> None:
    queue = harness.make_queue([BODY])
    transport.declare(queue)
    started = time.time()
    consumer, delivery, stop = one_delivery(harness, queue)
    try:
        assert consumer.dead_letter(delivery, {HEADER_REASON: "fatal"}) is True
    finally:
        stop()
    with harness.admin() as admin:
        why = type(admin).capabilities.why_unavailable("dlq_oldest_age_s")
    stats = listed_when(
        harness,
        queue,
        lambda q: bool(q.dlq_messages) and not q.messages and (why or q.dlq_oldest_age_s is not None),
    )
    assert not stats.oldest_age_s, "an empty queue has no oldest message"
    if why is not None:
        assert stats.dlq_oldest_age_s is None, "declared unavailable: None, never made up"
        return
    assert stats.dlq_oldest_age_s is not None
    assert 0 <= stats.dlq_oldest_age_s <= time.time() - started + RECENT_S
