"""Every plugin's transport keeps the contract the worker relies on, whatever the broker underneath.

Each test runs over every harness in ``contract_harness.py``: messages go in through the broker's own client
or the plugin, come out through the plugin's consumer, and what is left is read back with the broker's own
client. The delay is checked against what the plugin declares (``TransportCapabilities``), not a figure of
this file's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from queue import Empty, Queue
from typing import Any

import pytest
from contract_harness import Harness

from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import HEADER_ATTEMPTS, HEADER_REASON, HEADER_RETRY_COUNT, Message
from tqadmin.plugin.transport import BrokerTransport

BODY = b'{ "task_type" : "t",  "id": "j1", "x": 1.50, "s": "\\u00e9" }'  # the spacing is the producer's
BINARY = b"\x00\xff not UTF-8 \xc3"
HEADERS = {"trace": "abc", "tries": 2}
LEASE_S = 1.0  # short, so that a lease runs out within a test; ignored where the channel holds deliveries
DELAY_S = 0.5
WAIT_S = 60.0  # the longest a test waits for a delivery it expects: a deadline, not a speed
# how late a consumer may hand out a message that fell due on a loaded machine (seconds of it); a delay
# applied in the wrong unit (500 s for 0.5) is still caught
LATE_S = 20.0
# the extend test's holder's lease: four times the 1 s that a loaded machine's turn once outlasted between two
# renewals (a broker may go by the holder's own lease, not by the one an extend asks for)
# A lease the test renews ten times over: long enough that one renewal held up seconds by a loaded machine
# (moto's answers, a busy broker) still lands before the lease ends, which is all the test is about.
HOLD_S = 10.0
MANY = 25  # settles at once: two of SQS's batches of ten and a short one
RELEASED = 5
# their lease: long enough for a loaded machine to take and settle them all, short enough that a broker
# which lets a just-restarted server's holders renew first (Redis: two leases) gives the released back soon
MANY_LEASE_S = 10.0


@pytest.fixture
def transport(harness: Harness) -> Iterator[BrokerTransport]:
    with harness.transport() as t:
        yield t


class Running:
    """A consumer whose ``run`` loop has a thread of its own, and what it was handed, when (wall clock)."""

    def __init__(self, harness: Harness, queue: str, prefetch: int = 1, lease_s: float = LEASE_S) -> None:
        self.harness = harness
        self.consumer = harness.consumer(queue, prefetch=prefetch, lease_s=lease_s)
        self.handed: Queue[tuple[float, Delivery]] = Queue()
        self.loop = threading.Thread(target=self.consumer.run, args=(self._got,), daemon=True)
        self.loop.start()

    def _got(self, delivery: Delivery) -> None:
        self.handed.put((time.time(), delivery))

    def next(self, timeout_s: float = WAIT_S) -> tuple[float, Delivery]:
        return self.handed.get(timeout=timeout_s)

    def nothing_within(self, seconds: float) -> bool:
        try:
            self.handed.get(timeout=seconds)
        except Empty:
            return True
        return False

    def stop(self) -> None:
        self.consumer.stop()
        self.consumer.drained()
        self._join()

    def kill(self) -> None:
        self.harness.kill(self.consumer)
        self._join()

    def _join(self) -> None:
        self.loop.join(WAIT_S)
        assert not self.loop.is_alive(), "the consumer's run loop did not return"


@pytest.fixture
def consumers(harness: Harness) -> Iterator[list[Running]]:
    """Consumers a test starts (``start``), all stopped after it, whatever happened."""
    started: list[Running] = []
    yield started
    for running in started:
        if running.loop.is_alive():
            running.stop()


def start(consumers: list[Running], harness: Harness, queue: str, lease_s: float = LEASE_S) -> Running:
    running = Running(harness, queue, lease_s=lease_s)
    consumers.append(running)
    return running


def work_queue(harness: Harness, transport: BrokerTransport, bodies: list[bytes]) -> str:
    """A queue holding ``bodies`` (with ``HEADERS``) from the broker's own client, declared by the plugin."""
    queue = harness.make_queue(bodies, HEADERS)
    transport.declare(queue)
    return queue


def ack_last_and_stop(harness: Harness, running: Running, delivery: Delivery, queue: str) -> None:
    """Ack the last delivery and stop: nothing is left in the queue (what was not acked would be back)."""
    assert running.consumer.ack(delivery) is True
    running.stop()
    assert harness.depth(queue) == 0


def includes(headers: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """The broker may add headers of its own (RabbitMQ's ``x-death``): ours must all be there."""
    return {k: headers.get(k) for k in expected} == dict(expected)


def test_published_messages_are_consumed_byte_for_byte_and_gone_once_acked(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    queue = work_queue(harness, transport, [BINARY])
    assert transport.publish([(queue, Message(BODY, {"h": "v"}, id="j1"))]).all_confirmed
    worker = start(consumers, harness, queue)
    _, raw = worker.next()
    assert raw.message.body == BINARY and includes(raw.message.headers, HEADERS)
    assert worker.consumer.ack(raw) is True
    _, ours = worker.next()
    assert (ours.message.body, ours.message.id) == (BODY, "j1") and includes(ours.message.headers, {"h": "v"})
    ack_last_and_stop(harness, worker, ours, queue)


def test_acks_and_releases_of_many_deliveries_all_land_whatever_batches_the_broker_takes(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    """More settles at once than one batch holds (SQS takes ten a call): the released come back once, the
    acked are gone."""
    bodies = [f'{{"task_type": "t", "id": "m{n}"}}'.encode() for n in range(MANY)]
    queue = work_queue(harness, transport, bodies)
    worker = Running(harness, queue, prefetch=MANY + 5, lease_s=MANY_LEASE_S)
    consumers.append(worker)
    got = [worker.next()[1] for _ in range(MANY)]
    worker.consumer.release(got[:RELEASED])
    assert all(worker.consumer.ack(delivery) for delivery in got[RELEASED:])
    back = [worker.next()[1] for _ in range(RELEASED)]
    assert sorted(d.message.body for d in back) == sorted(bodies[:RELEASED])
    assert all(worker.consumer.ack(delivery) for delivery in back[1:])
    ack_last_and_stop(harness, worker, back[0], queue)


def test_retry_later_brings_the_body_back_after_the_delay_within_the_declared_precision(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    queue = work_queue(harness, transport, [BODY])
    tolerance = transport.capabilities.delay_tolerance_s(DELAY_S)
    worker = start(consumers, harness, queue)
    _, delivery = worker.next()
    asked = time.time()
    assert worker.consumer.retry_later(delivery, DELAY_S, {HEADER_RETRY_COUNT: 1}) is True
    settled = time.time()
    back_at, back = worker.next()
    assert back_at - asked >= DELAY_S - tolerance, "came back before its delay"
    assert back_at - settled <= DELAY_S + tolerance + LATE_S, "came back long after its delay"
    assert back.message.body == BODY
    assert includes(back.message.headers, {**HEADERS, HEADER_RETRY_COUNT: 1})
    ack_last_and_stop(harness, worker, back, queue)


def test_dead_letter_keeps_the_body_byte_for_byte_and_the_headers_in_the_plugins_dlq(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    queue = work_queue(harness, transport, [BINARY])
    worker = start(consumers, harness, queue)
    _, delivery = worker.next()
    death = {HEADER_REASON: "exhausted", HEADER_ATTEMPTS: 3}
    assert worker.consumer.dead_letter(delivery, death) is True
    worker.stop()
    assert harness.depth(queue) == 0
    ((body, headers),) = harness.drain(harness.plugin().dlq_name(queue))
    assert body == BINARY and includes(headers, {**HEADERS, **death})


def test_the_message_of_a_consumer_killed_mid_job_goes_to_another_consumer(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    queue = work_queue(harness, transport, [BODY])
    dying = start(consumers, harness, queue)
    dying.next()
    heir = start(consumers, harness, queue)
    dying.kill()
    _, again = heir.next(WAIT_S + LEASE_S)
    assert again.message.body == BODY and again.message.redelivered
    ack_last_and_stop(harness, heir, again, queue)


def test_a_delivery_whose_lease_passed_to_another_consumer_cannot_be_settled(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    queue = work_queue(harness, transport, [BODY])
    slow = start(consumers, harness, queue)
    _, stale = slow.next()
    heir = start(consumers, harness, queue)
    leased = transport.capabilities.leased
    if not leased:  # the broker holds deliveries for the channel: it passes them on when the channel dies
        slow.kill()
    _, fresh = heir.next(WAIT_S + LEASE_S)  # a leased delivery passes on once its lease ran out
    assert fresh.message.body == BODY
    assert slow.consumer.alive(stale) is False
    if leased:
        assert slow.consumer.extend([stale], LEASE_S) == [stale]
    assert slow.consumer.ack(stale) is False
    assert slow.consumer.retry_later(stale, 0, {HEADER_RETRY_COUNT: 1}) is False
    assert slow.consumer.dead_letter(stale, {HEADER_REASON: "late"}) is False
    ack_last_and_stop(harness, heir, fresh, queue)
    assert harness.drain(harness.plugin().dlq_name(queue)) == []


def test_extend_keeps_a_leased_delivery_from_going_to_another_consumer_past_its_lease(
    harness: Harness, transport: BrokerTransport, consumers: list[Running]
) -> None:
    if not transport.capabilities.leased:
        pytest.skip("this broker holds deliveries for the consumer's session: there is no lease to extend")
    queue = work_queue(harness, transport, [BODY])
    holder = start(consumers, harness, queue, lease_s=HOLD_S)
    _, delivery = holder.next()
    assert holder.consumer.extend([delivery], HOLD_S) == []
    other = start(consumers, harness, queue)
    until = time.monotonic() + 1.5 * HOLD_S
    while time.monotonic() < until:  # past the first lease's end, renewed ten times a lease
        assert other.nothing_within(HOLD_S / 10)
        assert holder.consumer.extend([delivery], HOLD_S) == []
    other.stop()
    ack_last_and_stop(harness, holder, delivery, queue)
