"""The settles of the leased-consumer base (``tqadmin/plugin/kit/settling.py``): batches of the plugin's size,
a linger before a short batch goes, an answer for a caller that waits, a failed batch sent again, and acks in
flight renewed until the broker answers them, on the settler thread of a tiny in-test broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import pytest
from test_leased_consumer import Clock, Tiny, held

from tqadmin.errors import Unreachable
from tqadmin.plugin.kit.background import PluginFault

WAIT_S = 30.0  # the longest a test waits for what it expects: a deadline on a loaded machine, not a speed


class Lingering(Tiny):
    settler: ClassVar[str | None] = "tq-tiny-acks"
    settle_batch = 10
    settle_linger_s = 3600.0  # a short batch waits for the drain or a waiter, never for the clock here
    settle_wait_s = WAIT_S


class Brief(Lingering):
    settle_linger_s = 0.05


class Flaky(Lingering):
    """Fails its first ``failures`` settles as a broker that is away does."""

    def __init__(self, clock: Clock, failures: int, **kwargs: Any) -> None:
        super().__init__(clock, **kwargs)
        self.failures = failures
        self.tries = 0

    def settle(self, acks: Any, releases: Any) -> set[str]:
        self.tries += 1
        if self.tries <= self.failures:
            raise Unreachable("tiny is away")
        return super().settle(acks, releases)


def until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


Start = Callable[[Tiny], Tiny]


@pytest.fixture
def settling() -> Iterator[Start]:
    """Starts a consumer's settler thread; each is drained and joined after the test."""
    started: list[tuple[Tiny, threading.Thread]] = []

    def start(consumer: Tiny) -> Tiny:
        thread = threading.Thread(target=consumer.settle_loop, daemon=True)
        thread.start()
        started.append((consumer, thread))
        return consumer

    yield start
    for consumer, thread in started:
        consumer.drained()
        thread.join(WAIT_S)
        assert not thread.is_alive(), "the settler thread did not end once drained"


def acked_tokens(consumer: Tiny) -> list[str]:
    return [t for acks, _ in consumer.sent for t in acks]


def test_a_short_batch_lingers_a_full_one_goes_at_once_and_the_drain_sends_the_rest(
    settling: Start,
) -> None:
    consumer = settling(Lingering(Clock(), prefetch=30))
    out = held(consumer, 21)
    consumer.ack(out[0])
    time.sleep(0.2)
    assert consumer.sent == []  # one ack waits for nine others (or its linger)
    for delivery in out[1:20]:
        consumer.ack(delivery)
    until(lambda: len(acked_tokens(consumer)) == 20, "two full batches")
    assert [len(acks) for acks, _ in consumer.sent] == [10, 10]
    consumer.ack(out[20])
    consumer.drained()
    until(consumer.settles.settled.is_set, "the drain's flush")
    assert acked_tokens(consumer) == [f"t{n}" for n in range(21)]


def test_a_lone_settle_goes_alone_once_its_linger_passed(settling: Start) -> None:
    consumer = settling(Brief(Clock()))
    (first, second) = held(consumer, 2)
    consumer.ack(first)
    consumer.release([second])
    until(lambda: consumer.sent, "the lingered batch")
    assert consumer.sent == [(["t0"], ["t1"])]


def test_a_caller_that_waits_for_the_answer_sends_its_batch_at_once_and_hears_a_refusal(
    settling: Start,
) -> None:
    consumer = settling(Lingering(Clock()))
    kept, refused = held(consumer, 2)
    consumer.refuse = {"t1"}
    assert consumer.ack_answered(kept) is True  # the linger (an hour) is not waited out
    assert consumer.ack_answered(refused) is False
    assert consumer.ack_answered(refused) is False  # no longer ours: not sent again
    assert consumer.sent == [(["t0"], []), (["t1"], [])]


def test_a_failed_batch_is_sent_again_and_its_acks_are_renewed_until_it_goes(
    settling: Start,
) -> None:
    clock = Clock()
    consumer = Flaky(clock, failures=3)
    consumer.settles.retrying = clock.retrying()  # the backoff's waits on the fake clock
    out = held(consumer, 3)
    consumer.ack(out[0])
    consumer.ack(out[1])  # the broker is away: these two wait, and their leases are kept
    assert consumer.extend([out[2]], 10.0) == []
    assert sorted(t for batch in consumer.renewed for t in batch) == ["t0", "t1", "t2"]
    answered: list[bool] = []
    waiter = threading.Thread(target=lambda: answered.append(consumer.ack_answered(out[2])), daemon=True)
    settling(consumer)
    waiter.start()
    waiter.join(WAIT_S)
    assert answered == [True]  # the failed batches went again until the broker took them
    assert consumer.tries >= 4 and len(clock.waits) == 3  # one capped backoff a failure
    assert sorted(acked_tokens(consumer)) == ["t0", "t1", "t2"]  # each once, none dropped
    consumer.renewed.clear()
    assert consumer.extend([], 10.0) == [] and consumer.renewed == []  # answered: no longer renewed


def test_a_waiter_whose_settler_died_hears_no_instead_of_hanging() -> None:
    consumer = Lingering(Clock())
    consumer.settle_error = RuntimeError("a bug in the settler")
    (delivery,) = held(consumer, 1)
    with ThreadPoolExecutor(1) as pool:
        ran = pool.submit(consumer.run, lambda _d: None)
        assert consumer.ack_answered(delivery) is False
        consumer.stop()
        consumer.drained()
        with pytest.raises(PluginFault):  # the run ended with the fault
            ran.result(WAIT_S)
