"""Dramatiq users' dead letters on RabbitMQ: messages that failed their retries into Dramatiq's own ``.XQ``
queue are shown, grouped, filtered, deleted and replayed home by Dramatiq's message ids and actor names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from framework_brokers import Rabbit, wait_for

from tests.conftest import AMQP_URL

pytestmark = pytest.mark.rabbitmq


class DramatiqOnRabbit:
    """Two actors that always fail, with one quick retry each, on a queue of the test's own."""

    def __init__(self, rabbit: Rabbit) -> None:
        self.queue = rabbit.name("dramatiq")  # Dramatiq declares it, its .DQ and its .XQ
        rabbit.name("dramatiq.DQ")
        self.xq = rabbit.name("dramatiq.XQ")
        self.broker = RabbitmqBroker(url=AMQP_URL)
        retry_once = {"queue_name": self.queue, "max_retries": 1, "min_backoff": 10, "max_backoff": 50}

        def charge(order: str, amount: int) -> None:
            raise ValueError("card declined")

        def mail(to: str) -> None:
            raise KeyError("smtp")

        self.charge = dramatiq.actor(charge, actor_name="charge", broker=self.broker, **retry_once)
        self.mail = dramatiq.actor(mail, actor_name="mail", broker=self.broker, **retry_once)

    def fail_all(self, rabbit: Rabbit, count: int) -> None:
        """Run a Dramatiq worker until ``count`` messages have failed their retry into the ``.XQ`` queue."""
        worker = dramatiq.Worker(self.broker, worker_threads=1, worker_timeout=100)
        worker.start()
        try:
            wait_for(lambda: rabbit.depth(self.xq) == count, f"{count} messages in {self.xq}", 60)
        finally:
            worker.stop()


@pytest.fixture
def dramatiq_rabbit(rabbit: Rabbit) -> Iterator[DramatiqOnRabbit]:
    app = DramatiqOnRabbit(rabbit)
    yield app
    app.broker.close()


def tq(tq_json: Any, *argv: str) -> tuple[int, Any, str]:
    return tq_json("--broker", AMQP_URL, *argv)


def test_dramatiq_messages_dead_after_their_retries_are_handled_by_their_dramatiq_ids(
    isolated_env: Any, dramatiq_rabbit: DramatiqOnRabbit, rabbit: Rabbit, tq_json: Any
) -> None:
    d = dramatiq_rabbit
    charges = [d.charge.send(f"order-{i}", i).message_id for i in range(3)]
    mails = [d.mail.send(f"user{i}@example.com").message_id for i in range(2)]
    d.fail_all(rabbit, 5)

    code, doc, _ = tq(tq_json, "peek", d.xq, "-n", "10")
    assert code == 0
    shown = {m["id"]: m for m in doc["messages"]}
    assert set(shown) == {*charges, *mails}
    charge = shown[charges[2]]
    assert (charge["framework"], charge["task"], charge["args"]) == ("dramatiq", "charge", '"order-2", 2')
    assert charge["retries"] == 1  # the one retry made before it was dead-lettered
    assert charge["error"] == "ValueError: card declined"
    assert charge["sent_at"].endswith("Z") and charge["sent_to"] == d.queue

    code, doc, _ = tq(tq_json, "dead-letters", d.xq, "--group-by", "task_type")
    assert doc["groups"] == [{"task_type": "charge", "count": 3}, {"task_type": "mail", "count": 2}]
    code, doc, _ = tq(tq_json, "dead-letters", d.xq, "--group-by", "error")
    assert doc["groups"] == [
        {"error": "ValueError: card declined", "count": 3},
        {"error": "KeyError: 'smtp'", "count": 2},
    ]
    code, doc, _ = tq(tq_json, "move", d.xq, d.queue, "--dry-run", "--filter", "error~declined")
    assert (doc["matched"], doc["moved"]) == (3, 0)
    mail_filter = "task_type=mail,framework=dramatiq"
    code, doc, _ = tq(tq_json, "move", d.xq, d.queue, "--dry-run", "--filter", mail_filter)
    assert doc["matched"] == 2

    code, doc, _ = tq(tq_json, "delete", d.xq, "--id", mails[0])
    assert (code, doc["moved"]) == (0, 1)
    bodies = {json.loads(body)["message_id"]: body for _, body in rabbit.drain(d.xq)}
    assert set(bodies) == {*charges, mails[1]}
    for body in bodies.values():
        rabbit.channel.basic_publish("", d.xq, body)

    # No --to: each goes back to the queue Dramatiq named in the message, byte for byte.
    code, doc, _ = tq(tq_json, "replay", d.xq, "--filter", "task_type=charge")
    assert (code, doc["moved"]) == (0, 3)
    home = {json.loads(body)["message_id"]: body for _, body in rabbit.drain(d.queue)}
    assert home == {message_id: bodies[message_id] for message_id in charges}
