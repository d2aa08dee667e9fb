"""The memory broker on a clock of the test's own: delays and leases end exactly when they should, its figures
count what it holds, and the CLI reaches it (and refuses what it withholds) like any broker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tqadmin_memory.broker import MemoryBroker, Rates, broker_for, shared
from tqadmin_memory.consuming import MemoryConsumer

from tqadmin.errors import ConfigError
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def url(unique: str, clock: Clock) -> Iterator[str]:
    url = f"memory://test-{unique}"
    with shared(url, MemoryBroker(clock=clock)):
        yield url


@pytest.fixture
def broker(url: str) -> MemoryBroker:
    """The broker ``url`` names, holding the queue ``q`` and its ``q.dlq``, as the plugin declares them."""
    plugin_for_url(url).transport(BrokerConfig(url=url)).declare("q")
    return broker_for(url)


def consumer(url: str) -> MemoryConsumer:
    consumer = plugin_for_url(url).transport(BrokerConfig(url=url)).consumer("q", prefetch=1, lease_s=30)
    assert isinstance(consumer, MemoryConsumer)
    return consumer


def test_a_retry_falls_due_exactly_after_its_delay_on_the_brokers_clock(
    url: str, broker: MemoryBroker, clock: Clock
) -> None:
    broker.publish([("q", Message(b"job"))])
    (delivery,) = broker.take("q", 1, lease_s=30)
    assert consumer(url).retry_later(delivery, 2.5, {"x-tq-retry-count": 1}) is True
    clock.now += 2.499
    assert broker.take("q", 1, lease_s=30) == []
    clock.now += 0.001
    (back,) = broker.take("q", 1, lease_s=30)
    assert back.message.body == b"job" and back.message.enqueued_at == clock.now


def test_a_lease_ends_exactly_at_its_length_and_the_next_taker_gets_a_redelivery(
    url: str, broker: MemoryBroker, clock: Clock
) -> None:
    broker.publish([("q", Message(b"job"))])
    (first,) = broker.take("q", 1, lease_s=30)
    holder = consumer(url)
    clock.now += 29.999
    assert holder.alive(first)
    clock.now += 0.001
    assert not holder.alive(first) and holder.ack(first) is False
    (second,) = broker.take("q", 1, lease_s=30)
    assert (second.message.redelivered, second.message.delivery_count) == (True, 2)


def test_the_listing_counts_ready_delayed_and_unacked_messages_and_the_dlq(
    url: str, broker: MemoryBroker, clock: Clock
) -> None:
    broker.publish([("q", Message(b"a")), ("q", Message(b"b")), ("q", Message(b"c"))])
    clock.now += 5
    taken, retried = broker.take("q", 2, lease_s=30)
    consumer(url).retry_later(retried, 60, {})
    broker.publish([("q.dlq", Message(b"dead"))])
    with plugin_for_url(url).admin(BrokerConfig(url=url)) as admin:
        stats = {q.name: q for q in admin.list_queues().queues}
    q = stats["q"]
    assert (q.messages, q.ready, q.unacked, q.delayed) == (3, 1, 1, 1)
    assert (q.dlq, q.dlq_messages, q.oldest_age_s) == ("q.dlq", 1, 5.0)
    assert broker.holds(taken)


def test_a_memory_url_names_its_broker() -> None:
    with pytest.raises(ConfigError, match="memory://NAME"):
        plugin_for_url("memory://").admin(BrokerConfig(url="memory://"))


def test_the_cli_lists_a_memory_broker_and_refuses_what_it_withholds_with_the_reason(
    unique: str, isolated_env: Path, tq_json: Callable[..., tuple[int, Any, str]]
) -> None:
    url = f"memory://cli-{unique}"
    no_peek = Capabilities(
        supported=frozenset(Operation) - {Operation.PEEK}, reasons=((Operation.PEEK, "no looking here"),)
    )
    with shared(url, MemoryBroker(capabilities=no_peek)) as broker:
        broker.declare("q")
        code, listing, _ = tq_json("--broker", url, "queues")
        assert code == 0 and [q["name"] for q in listing["queues"]] == ["q"]
        code, _, err = tq_json("--broker", url, "peek", "q")
        assert code == 4 and "no looking here" in err


def test_rates_set_on_a_queue_are_listed_and_none_are_made_up_elsewhere(
    url: str, broker: MemoryBroker
) -> None:
    """The memory broker measures no rates: the listing has them only for a queue a test set them on."""
    broker.set_rates("q", Rates(publish=4.0, deliver=3.5, ack=3.0))
    with plugin_for_url(url).admin(BrokerConfig(url=url)) as admin:
        stats = {q.name: q for q in admin.list_queues().queues}
    assert (stats["q"].publish_rate, stats["q"].deliver_rate, stats["q"].ack_rate) == (4.0, 3.5, 3.0)
    assert (stats["q.dlq"].publish_rate, stats["q.dlq"].deliver_rate, stats["q.dlq"].ack_rate) == (None,) * 3
