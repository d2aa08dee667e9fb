"""At start, a worker or cron waits for a broker that cannot be reached yet, and only for that.

Before, a worker whose first connection met a broker still booting, or one dropping sockets mid-handshake
under load, exited 3 at once, while the same trouble a minute later was waited out as an outage.
"""

import random

import pytest

from tqadmin.connect.backoff import RECONNECT_CAP_S, START_WAIT_S, reconnect_backoff
from tqadmin.errors import BrokerError, NotAuthorized, Unreachable
from tqadmin.plugin.kit.retrying import Retrying, once_reachable


class Broker:
    """Fails each call with ``errors`` in turn, then answers ``"declared"``; the clock moves only on waits."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0
        self.now = 0.0
        self.waits: list[float] = []

    def declare(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "declared"

    def retrying(self) -> Retrying:
        return Retrying(reconnect_backoff(random.Random(3)), sleep=self.wait, clock=lambda: self.now)

    def wait(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_a_broker_that_is_not_up_yet_is_waited_for_with_the_reconnect_backoff() -> None:
    broker = Broker(*[Unreachable("connection refused")] * 6)
    assert once_reachable(broker.declare, broker.retrying(), START_WAIT_S, "no broker yet") == "declared"
    assert broker.calls == 7 and len(broker.waits) == 6
    assert all(0 < w <= RECONNECT_CAP_S for w in broker.waits)


def test_a_refused_login_ends_the_start_at_once() -> None:
    broker = Broker(NotAuthorized("refused the login"))
    with pytest.raises(NotAuthorized):
        once_reachable(broker.declare, broker.retrying(), START_WAIT_S, "no broker yet")
    assert broker.calls == 1 and broker.waits == []


def test_an_answer_that_is_no_connection_failure_ends_the_start_at_once() -> None:
    broker = Broker(BrokerError("the broker answered garbage"))
    with pytest.raises(BrokerError):
        once_reachable(broker.declare, broker.retrying(), START_WAIT_S, "no broker yet")
    assert broker.calls == 1


def test_a_broker_that_never_comes_is_exit_3_once_the_start_budget_is_spent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = Broker(*[Unreachable("connection refused")] * 1000)
    with pytest.raises(Unreachable, match="connection refused"):
        once_reachable(broker.declare, broker.retrying(), START_WAIT_S, "no broker yet")
    waited = sum(broker.waits)
    assert START_WAIT_S <= waited <= START_WAIT_S + RECONNECT_CAP_S
    assert "no broker yet (connection refused); trying again in" in caplog.text
