"""The RabbitMQ transport and `tqadmin publish` against the real broker, faults injected by a proxy."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Queue

import pika
import pytest
from tqadmin_rabbitmq import RabbitMQPlugin

from tests.support.amqp_proxy import AmqpProxy
from tests.support.rabbit_queues import AMQP_URL, api, depth, drain, queue_fixture, queue_info, queues_named  # noqa: F401
from tqadmin.cli import main
from tqadmin.errors import UsageError
from tqadmin.plugin.base import BrokerConfig, Delivery
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import BrokerTransport, Consumer

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def proxy() -> Iterator[AmqpProxy]:
    p = AmqpProxy()
    yield p
    p.close()


def transport(url: str = AMQP_URL, timeout_s: float = 10) -> BrokerTransport:
    return RabbitMQPlugin().transport(BrokerConfig(url=url, timeout_s=timeout_s))


def write_jobs(path: Path, count: int, prefix: str) -> list[str]:
    ids = [f"{prefix}-{i}" for i in range(count)]
    path.write_text(
        "".join(json.dumps({"task_type": "t", "id": i, "n": n}) + "\n" for n, i in enumerate(ids))
    )
    return ids


def publish_through(proxy: AmqpProxy, queue: str, jobs: Path, report: Path, *options: str) -> int:
    command = ["--broker", proxy.url(), *options, "publish", "--queue", queue, "--from-file", str(jobs)]
    return main([*command, "--report", str(report)])


def consume_one(t: BrokerTransport, queue: str) -> tuple[Consumer, Delivery, threading.Thread]:
    consumer = t.consumer(queue, prefetch=1, lease_s=30)
    deliveries: Queue[Delivery] = Queue()
    loop = threading.Thread(target=consumer.run, args=(deliveries.put,), daemon=True)
    loop.start()
    return consumer, deliveries.get(timeout=60), loop


def stop(consumer: Consumer, loop: threading.Thread) -> None:
    consumer.stop()
    consumer.drained()
    loop.join(10)


def test_declare_binds_the_queue_and_makes_its_dlq_but_no_delay_queue_until_a_retry_needs_one(
    queue: str,
) -> None:
    with transport() as t:
        t.declare(queue)
    assert queue_info(f"{queue}.dlq")["durable"] is True
    bindings = api("exchanges/%2F/task_exchange/bindings/source")
    assert any(b["destination"] == queue and b["routing_key"] == queue for b in bindings)
    assert queues_named(f"{queue}.retry.") == []


def test_a_retry_declares_its_tiers_ttl_queue_which_hands_the_body_back_untouched(queue: str) -> None:
    body = b'{ "task_type" : "t",  "id": "r1", "x": 1.50, "s": "\\u00e9" }'
    with transport() as t:
        t.declare(queue)
        assert t.publish([(queue, Message(body, id="r1"))]).all_confirmed
        consumer, delivery, loop = consume_one(t, queue)
        try:
            assert consumer.retry_later(delivery, 0.2, {"x-tq-retry-count": 1}) is True
        finally:
            stop(consumer, loop)
    tier = queue_info(f"{queue}.retry.200ms")["arguments"]
    assert tier == {
        "x-message-ttl": 200,
        "x-dead-letter-exchange": "task_exchange",
        "x-dead-letter-routing-key": queue,
    }
    deadline = time.monotonic() + 60  # back after its 200 ms: a deadline, not a speed
    while depth(queue) != 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    ((properties, back),) = drain(queue)
    assert back == body
    assert properties.headers["x-tq-retry-count"] == 1 and properties.message_id == "r1"


def test_declare_accepts_a_queue_that_exists_with_other_arguments(queue: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    connection.channel().queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
    connection.close()
    with transport() as t:
        t.declare(queue)
    assert queue_info(queue)["type"] == "quorum"


def test_exchange_and_routing_key_are_the_only_publish_options(queue: str) -> None:
    with transport() as t, pytest.raises(UsageError, match="no publish option"):
        t.publish([(queue, Message(b"{}"))], options={"group_id": "g"})


def test_publish_confirms_every_job_persistently_and_reports_each_id(
    queue: str, tmp_path: Path, isolated_env: Path
) -> None:
    ids = write_jobs(tmp_path / "jobs.jsonl", 500, queue)
    report = tmp_path / "report.json"
    code = main(
        ["publish", "--queue", queue, "--from-file", str(tmp_path / "jobs.jsonl"), "--report", str(report)]
    )
    assert code == 0
    document = json.loads(report.read_text())
    assert (document["confirmed"], document["failed"], document["unknown"]) == (500, 0, 0)
    assert set(document["jobs"]) == set(ids)
    messages = drain(queue)
    assert sorted(p.message_id for p, _ in messages) == sorted(ids)
    assert {p.delivery_mode for p, _ in messages} == {2}
    assert json.loads(messages[0][1])["retry_count"] == 0


def test_a_job_without_an_id_gets_a_uuid_and_a_timestamp(queue: str, isolated_env: Path) -> None:
    assert main(["publish", "--queue", queue, "--job", '{"task_type": "t", "size": 3}']) == 0
    ((properties, body),) = drain(queue)
    job = json.loads(body)
    assert job["id"] == properties.message_id and len(job["id"]) == 36
    assert job["timestamp"].endswith("Z") and job["size"] == 3


def test_an_unroutable_job_is_exit_4_and_reported_failed(
    unique: str, tmp_path: Path, isolated_env: Path
) -> None:
    report = tmp_path / "r.json"
    code = main(
        [
            "publish",
            "--exchange",
            "task_exchange",
            "--routing-key",
            f"nobody_{unique}",
            "--job",
            '{"task_type": "t", "id": "lonely"}',
            "--report",
            str(report),
        ]
    )
    assert code == 4
    assert json.loads(report.read_text())["jobs"] == {"lonely": "failed"}


def test_read_only_refuses_publish_before_connecting(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--broker",
            "amqp://guest:guest@127.0.0.1:1/",
            "--read-only",
            "publish",
            "--queue",
            "q",
            "--job",
            '{"task_type": "t"}',
        ]
    )
    assert code == 6
    assert "nothing was sent" in capsys.readouterr().err


def test_a_bad_line_in_the_file_publishes_nothing(queue: str, tmp_path: Path, isolated_env: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"task_type": "t"}\n{"no_task_type": 1}\n')
    assert main(["publish", "--queue", queue, "--from-file", str(jobs)]) == 2


def test_a_dropped_connection_is_reopened_and_the_unconfirmed_jobs_sent_again(
    queue: str, proxy: AmqpProxy, tmp_path: Path, isolated_env: Path
) -> None:
    ids = write_jobs(tmp_path / "jobs.jsonl", 2000, queue)
    proxy.drop_after_publishes = 700
    report = tmp_path / "r.json"
    code = publish_through(proxy, queue, tmp_path / "jobs.jsonl", report)
    assert code == 0
    assert json.loads(report.read_text())["confirmed"] == 2000
    assert proxy.connections >= 3  # declare, the first publishing connection, the one after the drop
    assert {p.message_id for p, _ in drain(queue)} == set(ids)  # duplicates allowed, losses not


def test_a_blocked_connection_ends_with_exit_3_after_the_timeout_never_a_hang(
    queue: str, proxy: AmqpProxy, tmp_path: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proxy.block_on_publish = True
    write_jobs(tmp_path / "jobs.jsonl", 10, queue)
    report = tmp_path / "r.json"
    code = publish_through(proxy, queue, tmp_path / "jobs.jsonl", report, "--timeout", "1")
    assert code == 3
    assert "blocks publishers" in capsys.readouterr().err
    document = json.loads(report.read_text())
    assert document["confirmed"] == 0 and document["unknown"] + document["failed"] == 10


def test_a_paced_publish_still_confirms_every_job(queue: str, tmp_path: Path, isolated_env: Path) -> None:
    ids = write_jobs(tmp_path / "jobs.jsonl", 30, queue)
    assert (
        main(["publish", "--queue", queue, "--from-file", str(tmp_path / "jobs.jsonl"), "--rate", "300"]) == 0
    )
    assert sorted(p.message_id for p, _ in drain(queue)) == sorted(ids)


def test_a_paced_publish_sends_its_batches_on_one_connection(queue: str, proxy: AmqpProxy) -> None:
    t = transport(proxy.url())
    try:
        t.declare(queue)
        before = proxy.connections
        messages = [(queue, Message(b"{}", id=f"{queue}-{i}")) for i in range(30)]
        result = t.publish(messages, rate=100.0)  # three batches, a tenth of a second apart
        again = t.publish(messages[:1])  # a second publish soon after: the same connection too
    finally:
        t.close()
    assert result.all_confirmed and again.all_confirmed
    assert proxy.connections == before + 1
    assert len(drain(queue)) == 31


def test_a_broker_that_cannot_be_reached_is_exit_3_with_every_job_reported_failed(
    tmp_path: Path, isolated_env: Path
) -> None:
    write_jobs(tmp_path / "jobs.jsonl", 3, "nowhere")
    report = tmp_path / "r.json"
    code = main(
        [
            "--broker",
            "amqp://guest:guest@127.0.0.1:1/%2F",
            "publish",
            "--queue",
            "q",
            "--from-file",
            str(tmp_path / "jobs.jsonl"),
            "--report",
            str(report),
        ]
    )
    assert code == 3
    assert json.loads(report.read_text())["failed"] == 3
    assert json.loads((isolated_env / "audit.jsonl").read_text())["outcome"] == "failed"


def test_publish_json_is_an_action_document_naming_its_target(
    queue: str, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish", "--json", "--queue", queue, "--job", '{"task_type": "t"}']) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {"action": "publish", "target": queue, "confirmed": 1, "failed": 0, "unknown": 0}


def test_publishing_to_an_exchange_that_does_not_exist_is_exit_4_with_every_job_failed_not_unknown(
    unique: str, tmp_path: Path, isolated_env: Path
) -> None:
    """The broker closes the channel (404) and drops what it was sent: nothing can have been delivered."""
    write_jobs(tmp_path / "jobs.jsonl", 5, "nowhere")
    report = tmp_path / "r.json"
    jobs = str(tmp_path / "jobs.jsonl")
    exchange = f"no-such-exchange-{unique}"
    code = main(
        [
            "publish",
            "--exchange",
            exchange,
            "--routing-key",
            "k",
            "--from-file",
            jobs,
            "--report",
            str(report),
        ]
    )
    assert code == 4
    document = json.loads(report.read_text())
    assert (document["confirmed"], document["failed"], document["unknown"]) == (0, 5, 0)
