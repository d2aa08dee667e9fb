"""``--rate`` lives once: the contract's publish paces every plugin, which only writes ``publish_now``."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import ClassVar

from tqadmin.errors import ConnectError
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.models import Message
from tqadmin.plugin.pacing import Pacer
from tqadmin.plugin.transport import BrokerTransport, Consumer, Outcome, Outgoing, PublishResult


class Recording(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TransportCapabilities(max_delay_s=0)

    def __init__(self, unreachable_after: int | None = None) -> None:
        self.batches: list[tuple[int, int, float]] = []  # size, window, when
        self.unreachable_after = unreachable_after

    def declare(self, queue: str) -> None:
        """Nothing to declare."""

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        self.batches.append((len(messages), window, time.monotonic()))
        if self.unreachable_after is not None and len(self.batches) > self.unreachable_after:
            return PublishResult((Outcome.UNKNOWN,) * len(messages), ConnectError("gone"))
        return PublishResult((Outcome.CONFIRMED,) * len(messages))

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        raise AssertionError

    def close(self) -> None:
        """Nothing held."""


def messages(n: int) -> list[Outgoing]:
    return [("q", Message(str(i).encode())) for i in range(n)]


def test_an_unpaced_publish_is_one_call_of_the_plugin() -> None:
    transport = Recording()
    result = transport.publish(messages(30), window=8)
    assert [(size, window) for size, window, _ in transport.batches] == [(30, 8)]
    assert result.all_confirmed


def test_a_paced_publish_goes_out_in_tenths_of_a_second_no_faster_than_the_rate() -> None:
    transport = Recording()
    started = time.monotonic()
    result = transport.publish(messages(30), window=256, rate=100.0)
    assert [size for size, _, _ in transport.batches] == [10, 10, 10]
    assert time.monotonic() - started >= 0.29  # 30 messages at 100 a second
    assert transport.batches[2][2] - transport.batches[0][2] >= 0.19
    assert result.all_confirmed and len(result.outcomes) == 30


def test_a_paced_publish_stops_once_the_broker_is_out_of_reach() -> None:
    transport = Recording(unreachable_after=1)
    result = transport.publish(messages(40), rate=100.0)
    assert [size for size, _, _ in transport.batches] == [10, 10]
    assert result.outcomes == (Outcome.CONFIRMED,) * 10 + (Outcome.UNKNOWN,) * 10 + (Outcome.FAILED,) * 20
    assert isinstance(result.error, ConnectError)


def test_the_pacer_sleeps_what_keeps_n_messages_to_n_over_the_rate() -> None:
    now = [0.0]
    slept: list[float] = []
    pacer = Pacer(10.0, clock=lambda: now[0], sleep=slept.append)
    assert pacer.batch_size(500) == 1
    now[0] = 0.05
    pacer.took(1)
    assert slept == [0.05]
    now[0] = 1.0
    pacer.took(5)  # 6 messages take 0.6 s: a whole second has passed, no wait
    assert slept == [0.05]
