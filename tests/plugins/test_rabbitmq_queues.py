"""``tqadmin queues`` against the real RabbitMQ: what a queue holds, who consumes it, how old its oldest
message is, and where its dead letters go.

The management API refreshes its figures every few seconds, so each test polls until the figures match or a
deadline passes: a wait, not a timed assertion.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pytest
from tqadmin_rabbitmq.admin import RabbitMQAdmin

from tqadmin.cli import main
from tqadmin.plugin.base import BrokerConfig

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
STATS_DEADLINE_S = 40
AGE_S = 120

pytestmark = pytest.mark.rabbitmq


@dataclass
class Topology:
    work: str
    work_dlq: str
    args: str
    parking: str
    published_at: int


@pytest.fixture
def topology(unique: str) -> Iterator[Topology]:
    """``work`` (3 stamped messages, one held unacked by a consumer) with its ``work.dlq`` (2 messages), and
    ``args`` whose x-dead-letter arguments point at ``parking`` (1 message)."""
    prefix = f"tq-mgmt-{unique}"
    topo = Topology(f"{prefix}-work", f"{prefix}-work.dlq", f"{prefix}-args", f"{prefix}-parking", 0)
    topo.published_at = int(time.time()) - AGE_S
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        channel = connection.channel()
        for name in (topo.work, topo.work_dlq, topo.parking):
            channel.queue_declare(name)
        channel.queue_declare(
            topo.args,
            arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": topo.parking},
        )
        stamped = pika.BasicProperties(timestamp=topo.published_at, delivery_mode=2)
        for queue, count in ((topo.work, 3), (topo.work_dlq, 2), (topo.parking, 1)):
            for i in range(count):
                channel.basic_publish("", queue, f'{{"task_type": "t", "n": {i}}}'.encode(), stamped)
        consumer = connection.channel()
        consumer.basic_qos(prefetch_count=1)
        consumer.basic_consume(topo.work, lambda *_: None, auto_ack=False)
        connection.process_data_events(time_limit=0.2)
        yield topo
    finally:
        cleanup = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = cleanup.channel()
        for name in (topo.work, topo.work_dlq, topo.args, topo.parking):
            channel.queue_delete(name)
        cleanup.close()
        if connection.is_open:
            connection.close()


def poll_queues_json(
    capsys: pytest.CaptureFixture[str], unique: str, settled: Callable[[dict[str, dict[str, Any]]], bool]
) -> dict[str, dict[str, Any]]:
    """``tqadmin queues --json`` for our queues, repeated until ``settled`` holds or the deadline passes."""
    deadline = time.monotonic() + STATS_DEADLINE_S
    while True:
        assert main(["queues", "--json", "--filter", unique]) == 0
        document = json.loads(capsys.readouterr().out)
        queues = {q["name"]: q for q in document["queues"]}
        if settled(queues) or time.monotonic() > deadline:
            return queues
        time.sleep(1)


def test_queues_reports_depth_unacked_consumers_age_and_dlq_links(
    isolated_env: Path, topology: Topology, unique: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def settled(queues: dict[str, dict[str, Any]]) -> bool:
        work = queues.get(topology.work, {})
        return work.get("unacked") == 1 and work.get("ready") == 2 and work.get("oldest_age_s") is not None

    queues = poll_queues_json(capsys, unique, settled)
    work = queues[topology.work]
    assert (work["messages"], work["ready"], work["unacked"], work["consumers"]) == (3, 2, 1, 1)
    assert AGE_S <= work["oldest_age_s"] < AGE_S + STATS_DEADLINE_S + 30
    assert (work["dlq"], work["dlq_messages"]) == (topology.work_dlq, 2)
    assert (queues[topology.args]["dlq"], queues[topology.args]["dlq_messages"]) == (topology.parking, 1)
    assert queues[topology.parking]["dlq"] is None
    assert work["type"] == "classic" and work["state"] == "running"
    for key in ("publish_rate", "deliver_rate", "ack_rate"):
        assert isinstance(work[key], float)


def test_the_human_table_shows_each_queue_on_one_aligned_row(
    isolated_env: Path, topology: Topology, unique: str, capsys: pytest.CaptureFixture[str]
) -> None:
    poll_queues_json(capsys, unique, lambda q: q.get(topology.work, {}).get("messages") == 3)
    assert main(["queues", "--filter", unique]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[0], {line.split()[0]: line for line in lines[1:]}
    assert header.split()[:4] == ["QUEUE", "READY", "UNACKED", "TOTAL"]
    assert topology.work_dlq in rows[topology.work]
    assert len({len(line) for line in lines}) <= 2  # aligned (rstrip may shorten rows ending in '-')


def test_queue_exists_on_the_real_broker(isolated_env: Path, topology: Topology, unique: str) -> None:
    with RabbitMQAdmin(BrokerConfig(AMQP_URL)) as admin:
        assert admin.queue_exists(topology.work)
        assert not admin.queue_exists(f"tq-mgmt-{unique}-never-declared")
