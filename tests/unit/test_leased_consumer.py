"""The leased-consumer base that every leased broker's consumer is built on, against a tiny in-test broker:
deadlines and tokens, renewal, the settle queue, backoff, and what a failing thread does."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from tqadmin.connect.backoff import RECONNECT_CAP_S, reconnect_backoff
from tqadmin.errors import ConnectTimeout, NotAuthorized, Unreachable
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.background import PluginFault
from tqadmin.plugin.kit.leased import LOST_KEPT, LeasedConsumer
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.plugin.kit.settling import TRIES_WHEN_DRAINED
from tqadmin.plugin.models import Message


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def retrying(self) -> Retrying:
        return Retrying(reconnect_backoff(random.Random(3)), sleep=self.sleep, clock=self)


class Tiny(LeasedConsumer[str]):
    """A broker of numbered tokens: ``ready`` is what the next fetch brings; renewals and settles recorded."""

    broker_name = "tiny"
    settler: ClassVar[str | None] = None

    def __init__(self, clock: Clock, prefetch: int = 4, lease_s: float = 10.0) -> None:
        super().__init__(prefetch, lease_s, safety_s=1.0)
        self.clock = clock
        self.ready: list[Delivery] = []
        self.refuse: set[object] = set()
        self.renewed: list[list[object]] = []
        self.sent: list[tuple[list[str], list[str]]] = []
        self.fetch_error: BaseException | None = None
        self.renew_error: BaseException | None = None
        self.settle_error: BaseException | None = None

    def within(self, delivery: Delivery, deadline: float) -> bool:
        return self.clock() < deadline - self.safety_s

    def fetch(self, room: int) -> list[Delivery]:
        if self.fetch_error is not None:
            raise self.fetch_error
        if self.settler is None:
            with self.queued() as (acks, releases):
                if acks or releases:
                    self.sent.append((acks, releases))
        taken, self.ready = self.ready[:room], self.ready[room:]
        self.hold(taken, self.clock() + self.lease_s)
        if not taken:
            self.pause(0.01)
        return taken

    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        if self.renew_error is not None:
            raise self.renew_error
        self.renewed.append([d.token for d in deliveries])
        return [d for d in deliveries if d.token in self.refuse]

    def settle(self, acks: Sequence[str], releases: Sequence[str]) -> set[str]:
        if self.settle_error is not None:
            raise self.settle_error
        self.sent.append((list(acks), list(releases)))
        return {t for t in acks if t in self.refuse}

    def settle_loop(self) -> None:
        """What the settler thread runs, in the test's thread."""
        self.settles.send_loop(self.settle, self._drained)

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        return self.take(delivery) is not None

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        return self.take(delivery) is not None


class Settled(Tiny):
    settler = "tq-tiny-acks"


class InTwos(Tiny):
    extend_batch = 2


class SettledInTwos(Settled):
    settle_batch = 2


def deliveries(count: int) -> list[Delivery]:
    return [Delivery(Message(b"{}", {}, {}, f"job-{n}"), f"t{n}") for n in range(count)]


def held(consumer: Tiny, count: int) -> list[Delivery]:
    consumer.ready = deliveries(count)
    return consumer.fetch(consumer.room())


def test_a_delivery_is_alive_until_its_deadline_less_the_margin_then_its_slot_is_freed() -> None:
    clock = Clock()
    consumer = Tiny(clock, prefetch=2)
    first, second = held(consumer, 2)
    assert consumer.room() == 0
    clock.now += 8.999
    assert consumer.alive(first)
    clock.now += 0.001  # the deadline (10 s) less the safety margin (1 s)
    assert not consumer.alive(first) and consumer.room() == 1
    assert consumer.ack(first) is False and consumer.extend([first], 10.0) == [first]
    assert consumer.take(second) is None  # past its deadline too: not ours to settle any more


def test_a_token_settles_once_and_a_settled_delivery_is_neither_alive_nor_lost() -> None:
    consumer = Tiny(Clock())
    (delivery,) = held(consumer, 1)
    assert consumer.take(delivery) == "t0"
    assert consumer.take(delivery) is None and not consumer.alive(delivery)
    assert consumer.ack(delivery) is False
    assert consumer.extend([delivery], 10.0) == []  # settled, not lost
    assert consumer.renewed == []


def test_renewal_goes_in_batches_moves_the_deadline_and_remembers_what_was_lost() -> None:
    clock = Clock()
    consumer = InTwos(clock, prefetch=5)
    out = held(consumer, 5)
    consumer.refuse = {"t3"}
    clock.now += 5
    assert consumer.extend(out, 10.0) == [out[3]]
    assert consumer.renewed == [["t0", "t1"], ["t2", "t3"], ["t4"]]
    clock.now += 8  # past the first deadline, within the renewed one
    assert consumer.alive(out[0]) and not consumer.alive(out[3])
    assert consumer.extend([out[3]], 10.0) == [out[3]]  # still reported lost, not taken for settled
    assert consumer.room() == 1


def test_a_renewal_the_broker_cannot_answer_loses_nothing() -> None:
    consumer = Tiny(Clock())
    out = held(consumer, 2)
    consumer.renew_error = Unreachable("tiny cannot be reached")
    assert consumer.extend(out, 10.0) == []
    assert all(consumer.alive(d) for d in out)


def test_a_delivery_whose_ack_waits_to_be_sent_is_renewed_until_the_broker_answers_the_ack() -> None:
    consumer = Settled(Clock())
    first, second = held(consumer, 2)
    consumer.ack(first)  # the broker is away: the settler has not sent it
    assert consumer.extend([], 10.0) == []
    assert consumer.renewed == [["t0"]]  # asked for nothing, renewed what it owes an ack
    consumer.ack(second)
    consumer.settle_error = Unreachable("tiny cannot be reached")
    consumer.drained()
    consumer.settles.retrying = Clock().retrying()
    consumer.settle_loop()  # fails until given up after the drain: no longer renewed either
    consumer.renewed.clear()
    assert consumer.extend([], 10.0) == [] and consumer.renewed == []


def test_an_ack_the_broker_answered_is_not_renewed_any_more() -> None:
    consumer = Tiny(Clock())
    (delivery,) = held(consumer, 1)
    consumer.ack(delivery)
    with consumer.queued() as (acks, _releases):
        assert acks == ["t0"]
    assert consumer.extend([delivery], 10.0) == [] and consumer.renewed == []


def test_lost_tokens_are_remembered_up_to_a_bound() -> None:
    clock = Clock()
    consumer = Tiny(clock, prefetch=LOST_KEPT + 5)
    out = held(consumer, LOST_KEPT + 5)
    clock.now += 60
    assert len(consumer.extend(out, 10.0)) == LOST_KEPT + 5
    assert consumer.extend(out[:5], 10.0) == []  # the oldest were forgotten
    assert consumer.extend(out[-5:], 10.0) == out[-5:]


def test_acks_and_releases_queue_in_order_and_a_failed_drain_puts_them_back_in_front() -> None:
    consumer = Tiny(Clock())
    out = held(consumer, 4)
    consumer.ack(out[0])
    consumer.release([out[1], out[2]])
    consumer.ack(out[3])
    with pytest.raises(ConnectTimeout), consumer.queued(1) as (acks, releases):
        assert (acks, releases) == (["t0"], ["t1"])
        raise ConnectTimeout("locked")
    with consumer.queued() as (acks, releases):
        assert (acks, releases) == (["t0", "t3"], ["t1", "t2"])
    assert consumer.room() == 4


def test_a_loop_that_drains_itself_ends_once_stopped_drained_and_flushed() -> None:
    consumer = Tiny(Clock())
    consumer.ready = deliveries(3)
    got: list[Delivery] = []

    def on_message(delivery: Delivery) -> None:
        got.append(delivery)
        consumer.ack(delivery)
        if len(got) == 3:
            consumer.stop()
            consumer.drained()

    consumer.run(on_message)
    assert [t for acks, _ in consumer.sent for t in acks] == ["t0", "t1", "t2"]


def test_the_settler_thread_sends_batches_and_the_run_ends_once_it_flushed() -> None:
    consumer = SettledInTwos(Clock())
    out = held(consumer, 3)
    for delivery in out:
        consumer.ack(delivery)
    consumer.stop()
    consumer.drained()
    ran = threading.Thread(target=consumer.run, args=(lambda _d: None,), daemon=True)
    ran.start()
    ran.join(timeout=10)
    assert not ran.is_alive()
    assert [t for acks, _ in consumer.sent for t in acks] == ["t0", "t1", "t2"]
    assert all(len(acks) <= 2 for acks, _ in consumer.sent)


def test_settles_that_keep_failing_are_retried_with_capped_backoff_and_given_up_after_the_drain() -> None:
    clock = Clock()
    consumer = Settled(clock)
    consumer.settles.retrying = clock.retrying()
    (delivery,) = held(consumer, 1)
    consumer.ack(delivery)
    consumer.settle_error = ConnectTimeout("tiny did not answer")
    consumer.drained()
    consumer.settle_loop()
    assert consumer.sent == [] and len(clock.waits) == TRIES_WHEN_DRAINED
    with consumer.queued() as (acks, _releases):
        assert acks == []  # given up: that job runs again


def test_a_loop_that_keeps_failing_waits_the_capped_backoff_every_time() -> None:
    clock = Clock()
    consumer = Tiny(clock)
    consumer.retrying = clock.retrying()
    calls = [0]

    def failing(room: int) -> list[Delivery]:
        calls[0] += 1
        if calls[0] == 5_000:
            consumer.stop()
            consumer.drained()
        raise Unreachable("tiny cannot be reached")

    consumer.fetch = failing  # type: ignore[method-assign]
    consumer.run(lambda _d: None)
    assert len(clock.waits) == 5_000
    assert all(0 < w <= RECONNECT_CAP_S for w in clock.waits) and max(clock.waits) > RECONNECT_CAP_S / 2


def test_a_fatal_error_ends_the_run_as_it_is() -> None:
    consumer = Tiny(Clock())
    consumer.fetch_error = NotAuthorized("tiny refused the credentials")
    with pytest.raises(NotAuthorized):
        consumer.run(lambda _d: None)


def test_a_surprise_in_the_loop_ends_the_run_with_a_masked_fault() -> None:
    consumer = Tiny(Clock())
    consumer.fetch_error = RuntimeError("a bug near amqp://bob:hunter2@host/")
    with pytest.raises(PluginFault) as raised:
        consumer.run(lambda _d: None)
    said = str(raised.value)
    assert "the consumer's loop died: RuntimeError" in said and "hunter2" not in said


def test_a_settler_thread_that_dies_ends_the_run_with_the_fault_instead_of_a_stall() -> None:
    consumer = Settled(Clock())
    consumer.settle_error = RuntimeError("a bug in the settler")
    (delivery,) = held(consumer, 1)
    consumer.ack(delivery)
    consumer.stop()
    stall = threading.Timer(10, consumer.drained)  # a stall ends the run without the fault
    stall.start()
    try:
        with pytest.raises(PluginFault, match="tq-tiny-acks died: RuntimeError: a bug in the settler"):
            consumer.run(lambda _d: None)
    finally:
        stall.cancel()
