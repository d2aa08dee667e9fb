"""A body that cannot be decoded stops nothing, on every broker: it is dead-lettered as ``malformed`` byte for
byte, the jobs behind it run once each, and the admin commands over its dead-letter queue show or skip it.

The poison body is a JSON array nested 100,000 deep (200 KB): past the interpreter's recursion limit, so any
reader that hands it to ``json.loads`` unguarded raises ``RecursionError`` (on RabbitMQ inside pika's
callback, which dropped the connection and redelivered the message for ever). Another is a job whose
``task_type`` is 900 KB of letters, beside a task that fails with a message as long: masking either whole
took a worker's processes minutes of CPU under the logging lock, deaf to SIGTERM.
"""

from __future__ import annotations

import base64
import hashlib
import json
import signal
from collections.abc import Callable
from typing import Any

import pika
import pytest
from redis_pipeline import redis_pipeline_fixture  # noqa: F401 - the fixture
from sqs_pipeline import SqsPipeline, sqs_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import Pipeline, pipeline_fixture, sqlite_pipeline_fixture  # noqa: F401 - the fixtures

from tests.support.rabbit_queues import AMQP_URL
from tqadmin.pipeline.deadletter import MAX_ERROR_BYTES

NESTED = b"[" * 100_000 + b"]" * 100_000
JOBS = 20
LONG = 900_000
SQS_LONG = 250_000  # SQS takes a message of 256 KiB at most

BROKERS = [
    pytest.param("pipeline", marks=[pytest.mark.rabbitmq, pytest.mark.redis], id="rabbitmq"),
    pytest.param("redis_pipeline", marks=[pytest.mark.redis], id="redis"),
    pytest.param("sqlite_pipeline", id="sqlite"),
    pytest.param("sqs_pipeline", marks=[pytest.mark.sqs, pytest.mark.redis], id="sqs"),
]

TqJson = Callable[..., tuple[int, Any, str]]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def body_of(message: dict[str, Any]) -> bytes:
    """A peeked message's body as the bytes the broker holds (``--json`` writes non-UTF-8 bodies base64)."""
    text: str = message["body"]
    return base64.b64decode(text) if message["body_encoding"] == "base64" else text.encode("utf-8")


def broker_args(pipeline: Pipeline) -> list[str]:
    return ["--broker", pipeline.broker_url] if pipeline.broker_url else []


@pytest.mark.parametrize("broker", BROKERS)
def test_a_body_nested_100000_deep_at_the_head_is_dead_lettered_as_malformed_and_the_jobs_behind_it_run(
    broker: str, request: pytest.FixtureRequest, tq_json: TqJson, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline: Pipeline = request.getfixturevalue(broker)
    pipeline.declare(pipeline.queue)
    pipeline.publish_raw([NESTED])
    ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(JOBS)])
    pipeline.start()
    pipeline.wait_for(lambda: len(pipeline.effects()) == JOBS, 60, "the jobs behind the poison body")
    pipeline.wait_for(lambda: pipeline.depth(pipeline.dlq) == 1, 30, "the poison body's dead letter")
    assert pipeline.effects() == dict.fromkeys(ids, 1)
    assert pipeline.runs() == dict.fromkeys(ids, 1)
    assert "Traceback" not in pipeline.log_text() and "RecursionError" not in pipeline.log_text()
    pipeline.stop_all()
    capsys.readouterr()  # what the publish printed

    # peek shows it: the body as the broker holds it, the reason in its headers
    code, document, error = tq_json(*broker_args(pipeline), "peek", pipeline.dlq, "--yes")
    assert (code, error) == (0, "")
    [letter] = document["messages"]
    assert letter["headers"]["x-tq-reason"] == "malformed"
    assert sha(body_of(letter)) == sha(NESTED)

    # a filter on a job field skips it (it has no fields), one on a header selects it
    parking = f"{pipeline.queue}_parking"
    code, report, error = tq_json(
        *broker_args(pipeline), "move", pipeline.dlq, parking, "--filter", "task_type=count"
    )
    assert (code, report["matched"], report["moved"]) == (0, 0, 0) and "Error" not in error, error
    replayed = f"{pipeline.queue}_replayed"
    pipeline.declare(replayed)
    if hasattr(pipeline, "queues"):  # SQS: the test's queues are deleted by name
        pipeline.queues.names += [replayed, f"{replayed}-dlq", parking]
    code, report, error = tq_json(
        *broker_args(pipeline), "replay", pipeline.dlq, "--to", replayed, "--filter", "reason=malformed"
    )
    assert (code, report["matched"], report["moved"]) == (0, 1, 1) and "Error" not in error, error
    code, document, error = tq_json(*broker_args(pipeline), "peek", replayed, "--yes")
    assert (code, error) == (0, "")
    assert [sha(body_of(m)) for m in document["messages"]] == [sha(NESTED)]


@pytest.mark.parametrize("broker", BROKERS)
def test_a_900_kb_task_type_and_a_900_kb_error_are_dead_lettered_among_200_jobs_and_sigterm_still_stops(
    broker: str, request: pytest.FixtureRequest, tq_json: TqJson, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline: Pipeline = request.getfixturevalue(broker)
    size = SQS_LONG if broker == "sqs_pipeline" else LONG
    named = {"task_type": "x" * size, "id": f"{pipeline.id_prefix}named", "key": pipeline.key}
    poison = json.dumps(named).encode()
    pipeline.declare(pipeline.queue)
    ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(100)])
    pipeline.publish_raw([poison])
    pipeline.publish([{"task_type": "loud", "id": "loud", "size": LONG}])
    ids += pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(100, 200)])
    worker = pipeline.start("--concurrency", "4")
    pipeline.wait_for(lambda: len(pipeline.effects()) == 200, 120, "the 200 jobs")
    pipeline.wait_for(lambda: pipeline.depth(pipeline.dlq) == 2, 60, "the 2 dead letters")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, pipeline.log_text()
    assert pipeline.effects() == dict.fromkeys(ids, 1)
    assert pipeline.runs() == dict.fromkeys(ids, 1)
    logged = [line for log in pipeline.logs.glob("worker-*.log") for line in log.read_text().splitlines()]
    assert max(map(len, logged)) < 1000 and "hunter2" not in "\n".join(logged)
    capsys.readouterr()  # what the publish printed

    code, document, error = tq_json(*broker_args(pipeline), "peek", pipeline.dlq, "--yes")
    assert (code, error) == (0, "")
    letters = {letter["headers"]["x-tq-reason"]: letter for letter in document["messages"]}
    assert sha(body_of(letters["malformed"])) == sha(poison)  # byte for byte as published
    assert f"'task_type' is {size} characters" in letters["malformed"]["headers"]["x-tq-error"]
    said = letters["fatal"]["headers"]["x-tq-error"]
    assert said.startswith("FatalError: cannot work with amqp://bob:***@db.internal/ xxx")
    assert len(said.encode()) <= MAX_ERROR_BYTES


@pytest.mark.sqs
@pytest.mark.redis
def test_sqs_messages_whose_body_encoding_lies_or_is_unknown_are_dead_lettered_as_sent_among_200_jobs(
    sqs_pipeline: SqsPipeline,
) -> None:
    """Each poison body is a valid job, so a worker that ignored the attribute would run it; one that
    trusted it raised in the receive thread, which died and left the worker consuming nothing."""
    pipeline = sqs_pipeline
    pipeline.declare(pipeline.queue)
    poison = {
        encoding: json.dumps({"task_type": "count", "id": f"{pipeline.id_prefix}{name}", "key": pipeline.key})
        for name, encoding in (("lying", "base64"), ("unknown", "zstd"))
    }
    ids = pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(100)])
    for encoding, text in poison.items():
        attributes = {
            "x-tq-body-encoding": {"DataType": "String", "StringValue": encoding},
            "origin": {"DataType": "String", "StringValue": "hand-written"},
        }
        pipeline.queues.send(pipeline.queue, text, MessageAttributes=attributes)
    ids += pipeline.publish([{"task_type": "count", "id": f"c-{i}"} for i in range(100, 200)])
    for _ in range(2):
        pipeline.start("--concurrency", "4", "--prefetch", "8")
    pipeline.wait_for(lambda: len(pipeline.effects()) == 200, 120, "the 200 good jobs")
    pipeline.wait_for(lambda: pipeline.depth(pipeline.dlq) == 2, 30, "the 2 poison messages' dead letters")
    assert pipeline.effects() == dict.fromkeys(ids, 1)
    assert pipeline.runs() == dict.fromkeys(ids, 1)  # neither poison body ran
    assert "Traceback" not in pipeline.log_text()
    letters = {m["Body"]: m["MessageAttributes"] for m in pipeline.queues.drain(pipeline.dlq)}
    assert set(letters) == set(poison.values())  # the bodies exactly as sent
    for encoding, text in poison.items():
        attributes = {name: value.get("StringValue") for name, value in letters[text].items()}
        assert attributes["x-tq-body-encoding"] == encoding
        assert attributes["origin"] == "hand-written"
        assert attributes["x-tq-reason"] == "malformed"
        assert "x-tq-body-encoding" in attributes["x-tq-error"]


@pytest.mark.rabbitmq
@pytest.mark.redis
def test_a_rabbitmq_job_whose_content_encoding_tqadmin_cannot_undo_is_dead_lettered_not_run(
    pipeline: Pipeline,
) -> None:
    pipeline.declare(pipeline.queue)
    body = json.dumps(
        {"task_type": "count", "id": f"{pipeline.id_prefix}gzipped", "key": pipeline.key}
    ).encode()
    connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        properties = pika.BasicProperties(delivery_mode=2, content_encoding="gzip")
        channel.basic_publish("task_exchange", pipeline.queue, body, properties, mandatory=True)
    finally:
        connection.close()
    ids = pipeline.publish([{"task_type": "count", "id": "after"}])
    pipeline.start()
    pipeline.wait_for(lambda: pipeline.effects() == dict.fromkeys(ids, 1), 60, "the job behind it")
    pipeline.wait_for(lambda: pipeline.depth(pipeline.dlq) == 1, 30, "the dead letter")
    assert pipeline.runs() == dict.fromkeys(ids, 1)
    [(properties, letter)] = pipeline.dead_letters()
    assert letter == body and properties.content_encoding == "gzip"
    assert properties.headers["x-tq-reason"] == "malformed"
