"""Every reconnect and retry loop of every plugin goes through the shared backoff: 5,000 failures in a row (an
outage of hours), driven with a fake clock, give bounded waits and no exception.

A loop that computed ``BASE * 2**attempt`` itself raised OverflowError after about 1,024 failures: the Redis
worker exited and stayed down, the SQS receive thread died and its worker consumed nothing. Each test below
gives a plugin's loop a broker that fails 5,000 times and then lets it end, and checks every wait it took;
the last one checks that a failure that is no broker's ends the consumer with the fault instead.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import botocore.exceptions
import pika.exceptions
import pytest
from tqadmin_rabbitmq.consuming import RabbitConsumer
from tqadmin_rabbitmq.publishing import PublishRun
from tqadmin_rabbitmq.session import Addressed
from tqadmin_redis.consuming import RedisConsumer
from tqadmin_redis.naming import QueueKeys
from tqadmin_redis.transport import PUBLISH_ATTEMPTS, PUBLISH_BACKOFF, RedisTransport
from tqadmin_sqlite.transport import SQLiteTransport
from tqadmin_sqs.consuming import SqsConsumer
from tqadmin_sqs.queues import QueueInfo, Queues

from tqadmin.connect.backoff import RECONNECT_CAP_S, Backoff, reconnect_backoff
from tqadmin.errors import ConnectTimeout, NotAuthorized, Unreachable
from tqadmin.plugin.base import BrokerConfig, Delivery
from tqadmin.plugin.kit.background import PluginFault
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import Outcome

FAILURES = 5_000


class FakeTime:
    """A clock that moves only when the loop sleeps; every sleep is recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def retrying(self, backoff: Backoff | None = None) -> Retrying:
        return Retrying(backoff or reconnect_backoff(random.Random(5)), sleep=self.sleep, clock=self.clock)


class Failing:
    """Raise ``error()`` on each of ``FAILURES`` calls; on the next, call ``then`` (which ends the loop)."""

    def __init__(self, error: Callable[[], BaseException], then: Callable[[], Any]) -> None:
        self.error = error
        self.then = then
        self.calls = 0

    def __call__(self, *_args: Any, **_kwargs: Any) -> Any:
        self.calls += 1
        if self.calls <= FAILURES:
            raise self.error()
        return self.then()


def bounded(waits: list[float], cap_s: float) -> None:
    assert len(waits) >= FAILURES
    assert all(0 < w <= cap_s for w in waits), max(waits)
    assert max(waits) > cap_s / 2  # the waits did reach the cap: it is the cap that bounds them


def test_the_rabbitmq_consumer_reconnects_through_5000_failed_connections() -> None:
    time = FakeTime()
    consumer = RabbitConsumer("amqp://guest:guest@127.0.0.1:1/", 1.0, "q", 1)
    consumer.retrying = time.retrying()
    lost = pika.exceptions.AMQPConnectionError("refused")
    failing = Failing(lambda: ValueError("unused"), lambda: None)

    def run_once() -> BaseException | None:
        failing.calls += 1
        if failing.calls > FAILURES:
            consumer.stop()
        return lost

    consumer.run_once = run_once  # type: ignore[method-assign]
    consumer.run(lambda _d: None)
    assert len(time.waits) == FAILURES
    bounded(time.waits, RECONNECT_CAP_S)


def test_a_socket_dropped_mid_handshake_is_an_outage_but_a_refusal_the_broker_sends_ends_the_consumer() -> (
    None
):
    """pika calls both a "probable" denial: a broker going down, booting or overloaded that drops the socket
    during the handshake, and one that answers the login or vhost with ``Connection.Close``. Only the second
    is the user's to fix; the first is waited out like any outage, from the first connection on."""
    dropped = pika.exceptions.ProbableAccessDeniedError("StreamLostError: ('Transport indicated EOF',)")
    said_no = pika.exceptions.ProbableAccessDeniedError(
        'ConnectionClosedByBroker: (530) "NOT_ALLOWED - vhost nowhere not found"'
    )
    time = FakeTime()
    refused = RabbitConsumer("amqp://guest:guest@127.0.0.1:1/", 1.0, "q", 1)
    refused.retrying = time.retrying()
    refused.run_once = lambda: said_no  # type: ignore[method-assign]
    with pytest.raises(NotAuthorized, match="refused access to vhost"):
        refused.run(lambda _d: None)

    waiting = RabbitConsumer("amqp://guest:guest@127.0.0.1:1/", 1.0, "q", 1)
    waiting.retrying = time.retrying()
    calls = []

    def run_once() -> BaseException | None:
        calls.append(1)
        if len(calls) == 3:
            waiting.stop()
        return dropped

    waiting.run_once = run_once  # type: ignore[method-assign]
    waiting.run(lambda _d: None)
    assert len(calls) == 3, "it reconnected through the dropped handshakes"


def test_the_rabbitmq_publisher_reconnects_through_5000_failed_connections_then_reports() -> None:
    time = FakeTime()
    message = Addressed("", "q", Message(b"{}", {}, {}, "job-1"))
    run = PublishRun("amqp://guest:guest@127.0.0.1:1/", 10**9, [message], 8)
    run.retrying = time.retrying()
    failing = Failing(lambda: ValueError("unused"), lambda: None)

    def run_once() -> BaseException | None:
        run.channel_opened_once = False
        failing.calls += 1
        return pika.exceptions.AMQPConnectionError("refused") if failing.calls <= FAILURES else None

    run.run_once = run_once  # type: ignore[method-assign]
    result = run.run()
    assert result.outcomes == (Outcome.FAILED,)
    bounded(time.waits, RECONNECT_CAP_S)


def test_the_rabbitmq_publisher_gives_up_once_it_failed_for_its_timeout() -> None:
    time = FakeTime()
    message = Addressed("", "q", Message(b"{}", {}, {}, "job-1"))
    run = PublishRun("amqp://guest:guest@127.0.0.1:1/", 60, [message], 8)
    run.retrying = time.retrying()

    def run_once() -> BaseException:
        run.channel_opened_once = False
        return pika.exceptions.AMQPConnectionError("refused")

    run.run_once = run_once  # type: ignore[method-assign]
    result = run.run()
    assert result.outcomes == (Outcome.FAILED,) and result.error is not None
    assert 60 <= time.now <= 60 + RECONNECT_CAP_S


class RedisAway:
    """A Redis connection on which every call fails the way a server that is down fails."""

    where = "Redis at 127.0.0.1:1"

    def __init__(self, fail: Callable[..., Any]) -> None:
        self.fail = fail
        self.ensure_group = self.run = self.run_one = fail

    @contextlib.contextmanager
    def translated(self) -> Iterator[None]:
        self.fail()
        yield


def test_the_redis_consumer_reconnects_through_5000_failures() -> None:
    time = FakeTime()
    keys = QueueKeys("q", "tq:q")
    consumer: RedisConsumer

    def end() -> None:
        consumer.stop()
        consumer.drained()
        raise Unreachable("Redis at 127.0.0.1:1 cannot be reached")

    redis_away = RedisAway(Failing(lambda: Unreachable("Redis at 127.0.0.1:1 cannot be reached"), end))
    consumer = RedisConsumer(redis_away, keys, QueueKeys("q.dlq", "tq:q.dlq"), 1, 30.0)  # type: ignore[arg-type]
    consumer.retrying = time.retrying()
    consumer.run(lambda _d: None)
    bounded(time.waits, RECONNECT_CAP_S)


def test_the_redis_settler_sends_its_acks_again_through_5000_failures() -> None:
    time = FakeTime()
    consumer: RedisConsumer
    sent: list[list[Any]] = []

    def accept(calls: list[Any]) -> list[Any]:
        sent.append(calls)
        consumer.drained()
        return [[1]]

    failing = Failing(lambda: ConnectTimeout("Redis at 127.0.0.1:1 did not answer"), lambda: None)

    def run(calls: list[Any]) -> list[Any]:
        failing(calls)
        return accept(calls)

    keys = QueueKeys("q", "tq:q")
    consumer = RedisConsumer(RedisAway(run), keys, QueueKeys("q.dlq", "tq:q.dlq"), 1, 30.0)  # type: ignore[arg-type]
    consumer.settles.retrying = time.retrying()
    consumer.settles.ack("1-0", Delivery(Message(b"{}"), "1-0"))
    consumer.settles.send_loop(consumer.settle, consumer._drained)
    assert len(sent) == 1 and sent[0][0][2][-1] == "1-0"  # the ack went out once Redis answered
    assert len(time.waits) == FAILURES
    bounded(time.waits, RECONNECT_CAP_S)


def test_a_redis_publish_tries_each_chunk_a_few_times_with_bounded_waits_through_5000_failures() -> None:
    time = FakeTime()
    transport = RedisTransport(BrokerConfig(url="redis://127.0.0.1:1/0", timeout_s=1.0))
    failing = Failing(lambda: Unreachable("Redis at 127.0.0.1:1 cannot be reached"), lambda: None)

    class Away:
        where = "Redis at 127.0.0.1:1"

        class layout:  # stands in for an attribute
            @staticmethod
            def queue(name: str) -> QueueKeys:
                return QueueKeys(name, f"tq:{name}")

        @contextlib.contextmanager
        def translated(self) -> Iterator[None]:
            failing()
            yield

    transport._conn = Away()  # type: ignore[assignment]
    transport.retrying = lambda: time.retrying(PUBLISH_BACKOFF)
    for _ in range(FAILURES // PUBLISH_ATTEMPTS):
        result = transport.publish([("q", Message(b"{}", {}, {}, "job-1"))])
        assert result.outcomes == (Outcome.UNKNOWN,) and result.error is not None
    assert failing.calls == FAILURES
    assert len(time.waits) == FAILURES // PUBLISH_ATTEMPTS * (PUBLISH_ATTEMPTS - 1)
    assert all(0 < w <= PUBLISH_BACKOFF.cap_s for w in time.waits)


def test_the_sqs_consumer_polls_again_through_5000_failed_receives() -> None:
    """A poll's error reaches the shared policy of the I/O turn: waited out with the capped backoff, one
    poll out at a time, and no message handed on."""
    time = FakeTime()
    consumer: SqsConsumer

    def end() -> None:
        consumer.stop()
        consumer.drained()
        raise botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:1")

    class Client:
        receive_message = Failing(
            lambda: botocore.exceptions.EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), end
        )

    info = QueueInfo("q", "http://127.0.0.1:1/q", "arn:q", False, None, None, 262_144, 30)
    consumer = SqsConsumer(Queues(Client(), "SQS at http://127.0.0.1:1"), info, 10, 30.0)
    consumer.retrying = time.retrying()
    handed: list[Delivery] = []
    ran = threading.Thread(target=consumer.run, args=(handed.append,), daemon=True)
    ran.start()
    ran.join(timeout=120)
    assert not ran.is_alive() and handed == []
    assert Client.receive_message.calls == FAILURES + 1  # polled again after each wait, never more
    assert len(time.waits) == FAILURES + 1  # the last, as it stopped, too (a stop cuts it short)
    bounded(time.waits, RECONNECT_CAP_S)


def test_the_sqlite_consumer_takes_its_turn_again_through_5000_locked_turns(tmp_path: Path) -> None:
    time = FakeTime()
    transport = SQLiteTransport(BrokerConfig(url=f"sqlite:///{tmp_path / 'broker.db'}", timeout_s=1.0))
    consumer = transport.consumer("q", prefetch=1, lease_s=30.0)
    consumer.retrying = time.retrying()  # type: ignore[attr-defined]
    calls = [0]

    @contextlib.contextmanager
    def locked() -> Iterator[Any]:
        calls[0] += 1
        if calls[0] == FAILURES:
            consumer.stop()
            consumer.drained()
        raise ConnectTimeout("the SQLite broker stayed locked")
        yield

    consumer.broker.write = locked  # type: ignore[attr-defined]
    ran = threading.Thread(target=consumer.run, args=(lambda _d: None,), daemon=True)
    ran.start()
    ran.join(timeout=120)
    assert not ran.is_alive()
    bounded(time.waits, RECONNECT_CAP_S)
    transport.close()


def test_an_sqs_receiver_that_dies_of_a_surprise_ends_the_consumers_run_with_the_fault() -> None:
    """Any exception not a driver's (botocore's) used to kill the receive thread silently: the worker stayed
    up and consumed nothing. Now ``run`` ends with the fault, and the worker process with it."""

    class Client:
        def receive_message(self, **_kwargs: Any) -> Any:
            raise RuntimeError("not a driver error")

    info = QueueInfo("q", "http://127.0.0.1:1/q", "arn:q", False, None, None, 262_144, 30)
    consumer = SqsConsumer(Queues(Client(), "SQS at http://127.0.0.1:1"), info, 10, 30.0)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            consumer.run(lambda _d: None)
        except PluginFault as exc:
            raised.append(exc)

    ran = threading.Thread(target=run, daemon=True)
    ran.start()
    ran.join(timeout=60)
    assert not ran.is_alive(), "the consumer stayed up with a dead receiver"
    assert len(raised) == 1 and "tq-sqs-receive died: RuntimeError: not a driver error" in str(raised[0])
