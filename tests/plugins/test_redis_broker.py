"""The Redis plugin against the local Redis: what the contract suite does not pin down on its own.

Every test keeps its keys under a prefix of its own (the broker URL's ``?prefix=``) and deletes them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from queue import Queue
from typing import Any

import pytest
import redis
from tqadmin_redis.consuming import RedisConsumer
from tqadmin_redis.naming import GROUP, RELEASED, Layout

from tqadmin.errors import QueueNotFound, Unroutable, UsageError
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, Delivery
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.transport import BrokerTransport, Consumer

pytestmark = [pytest.mark.redis]

REDIS = "redis://127.0.0.1:6379/0"


class Broker:
    def __init__(self, unique: str, server: str = REDIS) -> None:
        self.prefix = f"tqp{unique}"
        self.url = f"{server}?prefix={self.prefix}"
        self.layout = Layout(self.prefix)
        self.client = redis.Redis.from_url(server)
        self.transport: BrokerTransport = plugin_for_url(self.url).transport(BrokerConfig(url=self.url))
        self.admin: BrokerAdmin = plugin_for_url(self.url).admin(BrokerConfig(url=self.url))
        self.running: list[tuple[Consumer, threading.Thread]] = []

    def queue(self, name: str, jobs: int = 0) -> str:
        self.transport.declare(name)
        messages = [
            (name, Message(json.dumps({"task_type": "t", "id": f"j{i}"}).encode(), id=f"j{i}"))
            for i in range(jobs)
        ]
        assert self.transport.publish(messages).all_confirmed
        return name

    def consume(
        self, queue: str, lease_s: float = 5.0, prefetch: int = 10
    ) -> tuple[Consumer, Queue[Delivery]]:
        consumer = self.transport.consumer(queue, prefetch=prefetch, lease_s=lease_s)
        handed: Queue[Delivery] = Queue()
        thread = threading.Thread(target=consumer.run, args=(handed.put,), daemon=True)
        thread.start()
        self.running.append((consumer, thread))
        return consumer, handed

    def stop(self, consumer: Consumer) -> None:
        for c, thread in self.running:
            if c is consumer:
                c.stop()
                c.drained()
                thread.join(10)

    def group_consumers(self, queue: str) -> dict[str, int]:
        stream = self.layout.queue(queue).stream
        return {c["name"].decode(): c["pending"] for c in self.client.xinfo_consumers(stream, GROUP)}

    def close(self) -> None:
        for consumer, _ in self.running:
            self.stop(consumer)
        self.transport.close()
        self.admin.close()
        keys = list(self.client.scan_iter(f"{self.prefix}:*", count=1000))
        if keys:
            self.client.delete(*keys)


@pytest.fixture
def broker(unique: str) -> Iterator[Broker]:
    b = Broker(unique)
    yield b
    b.close()


def eventually(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_figures_count_ready_in_flight_delayed_and_dead_letters_and_rates_from_the_second_poll(
    broker: Broker,
) -> None:
    queue = broker.queue("orders", jobs=5)
    consumer, handed = broker.consume(queue)
    deliveries = [handed.get(timeout=60) for _ in range(5)]
    assert consumer.retry_later(deliveries[0], 60, {"x-tq-retry-count": 1})
    assert consumer.dead_letter(deliveries[1], {"x-tq-reason": "fatal"})
    consumer.release([deliveries[2]])  # given back: ready again
    listing = {q.name: q for q in broker.admin.list_queues().queues}
    stats = listing[queue]
    assert (stats.messages, stats.ready, stats.unacked, stats.delayed) == (3, 1, 2, 1)
    assert stats.consumers == 1 and stats.kind == "stream" and stats.read_only is None
    assert (stats.dlq, stats.dlq_messages) == (f"{queue}.dlq", 1)
    assert stats.oldest_age_s is not None and stats.publish_rate is None  # no earlier poll to compare
    assert listing[f"{queue}.dlq"].messages == 1
    broker.queue(queue, jobs=4)
    again = {q.name: q for q in broker.admin.list_queues().queues}[queue]
    assert again.publish_rate is not None and again.publish_rate > 0


def test_a_released_entry_keeps_its_delivery_count_and_a_consumer_leaves_the_group_only_empty(
    broker: Broker,
) -> None:
    queue = broker.queue("orders", jobs=1)
    first, handed = broker.consume(queue)
    delivery = handed.get(timeout=60)
    assert delivery.message.delivery_count == 1
    first.release([delivery])
    again = handed.get(timeout=60)  # the next recovery pass takes it back
    assert again.message.id == delivery.message.id and again.message.delivery_count == 1
    second, _ = broker.consume(queue)
    assert isinstance(first, RedisConsumer) and isinstance(second, RedisConsumer)
    eventually(lambda: set(broker.group_consumers(queue)) == {first.name, second.name, RELEASED})
    broker.stop(first)  # still holds the entry: it stays in the group, so the entry is not dropped
    assert broker.group_consumers(queue)[first.name] == 1
    broker.stop(second)  # held nothing: gone
    assert set(broker.group_consumers(queue)) == {first.name, RELEASED}


def test_recovery_waits_for_each_holders_own_lease(broker: Broker) -> None:
    queue = broker.queue("orders", jobs=1)
    patient, handed = broker.consume(queue, lease_s=30)
    delivery = handed.get(timeout=60)
    _, eager = broker.consume(queue, lease_s=0.5)
    assert eager.empty()
    time.sleep(2)  # four of the eager consumer's leases, a fifteenth of the holder's
    assert eager.empty()
    assert patient.alive(delivery) and patient.ack(delivery)


def test_purge_drops_what_is_ready_and_leaves_what_a_consumer_holds(broker: Broker) -> None:
    queue = broker.queue("orders", jobs=4)
    consumer, handed = broker.consume(queue, prefetch=1)
    held = handed.get(timeout=60)
    broker.stop(consumer)  # it holds one entry; the others are ready
    assert broker.admin.purge(queue) == 3
    assert [m.id for m in broker.admin.peek(queue, 10).messages] == [held.message.id]


def test_delete_by_id_keeps_the_others_in_their_order(
    broker: Broker, tq_json: Any, isolated_env: Any
) -> None:
    queue = broker.queue("orders", jobs=5)
    code, document, err = tq_json("--broker", broker.url, "delete", queue, "--id", "j2")
    assert code == 0, err
    assert document["moved"] == 1
    assert [m.id for m in broker.admin.peek(queue, 10).messages] == ["j0", "j1", "j3", "j4"]


def test_a_replay_from_a_dlq_to_its_queue_is_one_script_on_the_server(broker: Broker) -> None:
    queue = broker.queue("orders")
    dlq = broker.layout.dlq(queue).stream
    for i in range(3):
        broker.client.xadd(dlq, {"body": f"b{i}", "headers": json.dumps({"x-tq-original-queue": queue})})
    report = broker.admin.server_side_move(f"{queue}.dlq", queue, None)
    assert report is not None and (report.matched, report.moved) == (3, 3)
    assert [m.body for m in broker.admin.peek(queue, 10).messages] == [b"b0", b"b1", b"b2"]


def test_copies_to_a_queue_that_does_not_exist_are_refused_and_nothing_is_acked(broker: Broker) -> None:
    queue = broker.queue("orders", jobs=2)
    with broker.admin.open_transfer(queue) as session:
        fetched = session.fetch(2)
        with pytest.raises(Unroutable, match="no queue 'typo'"):
            session.publish_confirmed([("typo", d.message) for d in fetched])
    assert len(broker.admin.peek(queue, 10).messages) == 2
    assert not broker.client.exists(broker.layout.queue("typo").stream)
    with pytest.raises(QueueNotFound):
        broker.admin.peek("typo", 1)


def test_names_tqadmin_gives_other_frameworks_queues_and_publish_options_are_refused(broker: Broker) -> None:
    with pytest.raises(UsageError, match="other frameworks"):
        broker.transport.declare("celery:mine")
    with pytest.raises(UsageError, match="no publish option"):
        broker.transport.publish([("q", Message(b"x"))], options={"exchange": "x"})


def test_an_unreachable_redis_is_exit_3_in_one_line_without_the_password(
    tq_json: Any, isolated_env: Any
) -> None:
    code, _, err = tq_json("--broker", "redis://:hunter2@127.0.0.1:1/0", "queues")
    assert code == 3
    assert (
        "hunter2" not in err and "cannot reach the Redis broker" in err and len(err.strip().splitlines()) == 1
    )


@pytest.mark.slow
def test_after_a_redis_restart_a_new_consumer_leaves_a_live_holder_its_entries(unique: str) -> None:
    """Idle times run on while Redis is down, so right after a restart every held entry looks abandoned; a
    consumer that starts then waits until the server has been up for two leases and the reconnect cap, and the
    holder renews first."""
    from tests.support.redis_servers import PersistentRedis

    server = PersistentRedis()
    try:
        broker = Broker(unique, server.url)
        queue = broker.queue("orders", jobs=1)
        holder, handed = broker.consume(queue, lease_s=2)
        delivery = handed.get(timeout=60)
        server.server.stop()
        time.sleep(2.5)  # past the lease while Redis is away
        server.server.start()
        _, newcomer = broker.consume(queue, lease_s=2)
        time.sleep(0.5)  # the newcomer is up before the holder's next renewal
        for _ in range(12):  # the worker's renewals, every third of a lease
            holder.extend([delivery], 2)
            time.sleep(0.25)
        assert newcomer.empty()
        assert holder.alive(delivery) and holder.ack(delivery)
        broker.close()
    finally:
        server.close()


@pytest.mark.slow
def test_after_a_redis_restart_a_consumer_that_sent_nothing_meanwhile_leaves_a_live_holder_its_entries(
    unique: str,
) -> None:
    """A consumer whose window stayed full through the restart asked Redis nothing, and its client reconnects
    without a word: it saw no failure, yet it too waits until the server has been up for two leases."""
    from tests.support.redis_servers import PersistentRedis

    server = PersistentRedis()
    try:
        broker = Broker(unique, server.url)
        queue = broker.queue("orders", jobs=2)
        holder, held = broker.consume(queue, lease_s=2, prefetch=1)
        delivery = held.get(timeout=60)
        bystander, handed = broker.consume(queue, lease_s=2, prefetch=1)
        own = handed.get(timeout=60)  # its window is full: its loop waits without a call to Redis
        server.server.stop()
        time.sleep(2.5)  # past the lease while Redis is away
        server.server.start()
        assert bystander.ack(own)  # room again: its next turn may look for abandoned entries
        time.sleep(1.5)  # the holder's first renewal since comes a third of a lease on, after a failed try
        assert handed.empty()
        assert holder.alive(delivery) and holder.ack(delivery)
        broker.close()
    finally:
        server.close()
