"""The transfer-session base: the cap at the count at start, the held set given back on close, renewal."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tqadmin.errors import BrokerError, Nacked
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.sessions import CappedSession, HeldSession
from tqadmin.plugin.models import Message


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Session(HeldSession[int]):
    """A broker with an endless queue (a producer that never stops): tokens are message numbers."""

    def __init__(
        self, count: int, lease_s: float | None = None, clock: FakeClock | None = None, bounded: bool = True
    ) -> None:
        super().__init__(count, bounded=bounded, lease_s=lease_s, clock=clock or FakeClock())
        self.next = 0
        self.removed: list[int] = []
        self.given_back: list[int] = []
        self.renewed: list[list[int]] = []
        self.disconnected = 0
        self.fail_publish = False
        self.fail_give_back = False

    def take(self, want: int) -> Sequence[Delivery]:
        taken = [Delivery(Message(str(n).encode()), n) for n in range(self.next, self.next + want)]
        self.next += want
        return taken

    def token(self, delivery: Delivery) -> int | None:
        return delivery.token if isinstance(delivery.token, int) else None

    def key(self, token: int) -> int:
        return token

    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        if self.fail_publish:
            raise Nacked("refused")

    def remove(self, tokens: Sequence[int]) -> None:
        self.removed += tokens

    def give_back(self, tokens: Sequence[int]) -> None:
        if self.fail_give_back:
            raise BrokerError("the broker went away")
        self.given_back += tokens

    def renew(self, tokens: Sequence[int]) -> None:
        self.renewed.append(list(tokens))

    def disconnect(self) -> None:
        self.disconnected += 1


def numbers(deliveries: Sequence[Delivery]) -> list[object]:
    return [d.token for d in deliveries]


def test_a_session_never_fetches_past_the_count_at_start_however_much_the_broker_has() -> None:
    session = Session(count=5)
    assert session.count_at_start() == 5
    assert numbers(session.fetch(3)) == [0, 1, 2]
    assert numbers(session.fetch(3)) == [3, 4]
    assert session.fetch(3) == []
    assert session.next == 5  # the broker was never asked for more


def test_what_is_passed_over_counts_toward_the_cap() -> None:
    session = Session(count=5)
    session.fetch(2)
    session.passed_over(2)  # deleted meanwhile: never handed out
    assert session.fetched == 4
    assert numbers(session.fetch(10)) == [2]


def test_an_unbounded_session_fetches_what_it_is_asked_for() -> None:
    session = Session(count=1, bounded=False)
    assert len(session.fetch(3)) == 3
    assert len(session.fetch(3)) == 3


def test_each_delivery_is_settled_once_and_close_gives_back_only_what_is_still_held() -> None:
    session = Session(count=10)
    taken = session.fetch(5)
    session.ack(taken[:2])
    session.ack(taken[:2])  # twice: removed once
    session.release(taken[2:3])
    session.ack([Delivery(Message(b"x"), "another session's")])
    assert session.removed == [0, 1] and session.given_back == [2]
    session.close()
    session.close()
    assert session.given_back == [2, 3, 4] and session.disconnected == 1
    assert session.held == {}


def test_held_deliveries_are_given_back_when_a_run_ends_in_an_error() -> None:
    session = Session(count=10)
    with pytest.raises(Nacked), session:
        taken = session.fetch(3)
        session.fail_publish = True
        session.publish_confirmed([("target", d.message) for d in taken])
        session.ack(taken)  # never reached: nothing unconfirmed is acked
    assert session.removed == [] and session.given_back == [0, 1, 2] and session.disconnected == 1


def test_a_session_disconnects_even_when_giving_back_fails() -> None:
    session = Session(count=10)
    session.fetch(2)
    session.fail_give_back = True
    with pytest.raises(BrokerError):
        session.close()
    assert session.disconnected == 1
    session.close()  # closed already: nothing again
    assert session.disconnected == 1


def test_an_empty_publish_asks_nothing_of_the_broker() -> None:
    session = Session(count=10)
    session.fail_publish = True
    session.publish_confirmed([])


def test_held_leases_are_renewed_once_a_third_of_the_lease_has_passed() -> None:
    clock = FakeClock()
    session = Session(count=100, lease_s=30.0, clock=clock)
    taken = session.fetch(3)
    clock.now = 9.9
    session.fetch(1)
    assert session.renewed == []
    clock.now = 10.0
    session.ack(taken[:1])  # renewed before the ack, the acked one included (its lease is still needed)
    assert session.renewed == [[0, 1, 2, 3]]
    session.publish_confirmed([("target", Message(b"x"))])
    assert len(session.renewed) == 1  # not again until another third has passed
    clock.now = 20.0
    session.publish_confirmed([("target", Message(b"x"))])
    assert session.renewed[-1] == [1, 2, 3]


def test_nothing_is_renewed_without_a_lease_or_with_nothing_held() -> None:
    clock = FakeClock()
    unleased = Session(count=10, clock=clock)
    unleased.fetch(2)
    clock.now = 1000.0
    unleased.fetch(2)
    assert unleased.renewed == []
    leased = Session(count=10, lease_s=3.0, clock=clock)
    clock.now = 2000.0
    leased.fetch(1)
    assert leased.renewed == []


class ReadOnly(CappedSession):
    def take(self, want: int) -> Sequence[Delivery]:
        return [Delivery(Message(b""), None)] * want

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        raise AssertionError

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        raise AssertionError

    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Nothing held."""

    def close(self) -> None:
        """Nothing held."""


def test_a_session_that_only_reads_has_the_cap_too() -> None:
    session = ReadOnly(3)
    assert len(session.fetch(2)) == 2
    assert len(session.fetch(2)) == 1
    assert session.fetch(2) == []
