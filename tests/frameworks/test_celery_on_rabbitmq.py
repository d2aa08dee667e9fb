"""Celery users' dead letters on RabbitMQ: tqadmin shows, groups, filters, deletes and replays them by
Celery's own task ids and names, and a replayed task is one a real Celery worker runs, once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from celery_tasks import allow, runs_of
from framework_brokers import CeleryOnRabbit, wait_for

from tests.conftest import AMQP_URL

pytestmark = pytest.mark.rabbitmq


def tq(tq_json: Any, *argv: str) -> tuple[int, Any, str]:
    return tq_json("--broker", AMQP_URL, *argv)


def test_celery_tasks_rejected_into_a_dead_letter_queue_are_handled_by_their_celery_ids(
    isolated_env: Any, celery_rabbit: CeleryOnRabbit, tq_json: Any
) -> None:
    c = celery_rabbit
    charges = [c.send("capp.charge", f"order-{i}", 10 * i) for i in range(3)]
    resizes = [c.send("capp.resize", "cat.png", width=64), c.send("capp.resize", "dog.png")]
    with c.worker():
        # Not allowed yet: every task raises Reject(requeue=False) and RabbitMQ dead-letters it.
        wait_for(lambda: c.rabbit.depth(c.dlq) == 5, "five Celery tasks in the dead-letter queue")

        code, doc, _ = tq(tq_json, "peek", c.dlq, "-n", "10")
        assert code == 0
        shown = {m["id"]: m for m in doc["messages"]}
        assert set(shown) == {*charges, *resizes}
        assert {m["framework"] for m in shown.values()} == {"celery"}
        assert shown[charges[1]]["task"] == "capp.charge"
        assert shown[charges[1]]["args"] == '"order-1", 10'
        assert shown[resizes[0]]["args"] == '"cat.png", width=64'
        assert shown[charges[0]]["retries"] == 0

        code, doc, _ = tq(tq_json, "dead-letters", c.dlq, "--group-by", "task_type")
        assert doc["groups"] == [
            {"task_type": "capp.charge", "count": 3},
            {"task_type": "capp.resize", "count": 2},
        ]
        code, doc, _ = tq(tq_json, "dead-letters", c.dlq, "--group-by", "error")
        assert doc["groups"] == [{"error": "dead-lettered by the broker: rejected", "count": 5}]

        code, doc, _ = tq(tq_json, "move", c.dlq, c.queue, "--dry-run", "--filter", "task_type=capp.resize")
        assert (code, doc["matched"], doc["moved"]) == (0, 2, 0)
        code, doc, _ = tq(tq_json, "move", c.dlq, c.queue, "--dry-run", "--filter", f"id={charges[2]}")
        assert doc["matched"] == 1

        code, doc, _ = tq(tq_json, "delete", c.dlq, "--id", resizes[1])
        assert (code, doc["moved"]) == (0, 1)
        code, doc, _ = tq(tq_json, "peek", c.dlq, "-n", "10")
        assert resizes[1] not in {m["id"] for m in doc["messages"]} and c.rabbit.depth(c.dlq) == 4
        before = {m["id"]: m for m in doc["messages"]}

        allow(c.runs)
        code, doc, _ = tq(tq_json, "replay", c.dlq, "--to", c.queue, "--filter", "task_type=capp.charge")
        assert (code, doc["moved"]) == (0, 3)
        wait_for(lambda: len(runs_of(c.runs)) >= 3, "Celery to run the three replayed tasks")
        wait_for(lambda: c.rabbit.depth(c.queue) == 0, "the work queue to empty")

    assert sorted(runs_of(c.runs)) == sorted(charges)  # each replayed task ran exactly once
    assert c.rabbit.depth(c.dlq) == 1  # the resize that was not replayed is still there
    left = c.rabbit.drain(c.dlq)[0]
    assert json.loads(left[1]) == json.loads(before[resizes[0]]["body"])
    assert left[0].headers["id"] == resizes[0]


def test_a_replayed_celery_message_keeps_its_body_and_headers_byte_for_byte(
    isolated_env: Any, celery_rabbit: CeleryOnRabbit, rabbit: Any, tq_json: Any
) -> None:
    c = celery_rabbit
    task_id = c.send("capp.add", 2, 3)
    parking = rabbit.declare("parking")
    original = wait_for(lambda: rabbit.drain(c.queue), "Celery's message")[0]
    rabbit.channel.basic_publish("", c.dlq, original[1], original[0])

    code, doc, _ = tq(tq_json, "replay", c.dlq, "--to", parking)
    assert (code, doc["moved"]) == (0, 1)
    props, body = rabbit.drain(parking)[0]
    assert body == original[1]
    assert {k: v for k, v in props.headers.items() if k != "x-tq-replays"} == original[0].headers
    assert props.headers["x-tq-replays"] == 1 and props.headers["id"] == task_id
    for name in ("content_type", "content_encoding", "correlation_id", "reply_to"):
        assert getattr(props, name) == getattr(original[0], name)
