"""A body that cannot be decoded stops nothing, on every broker: it is dead-lettered as ``malformed`` byte for
byte, the jobs behind it run once each, and the admin commands over its dead-letter queue show or skip it.

The poison body is a JSON array nested 100,000 deep (200 KB): past the interpreter's recursion limit, so any
reader that hands it to ``json.loads`` unguarded raises ``RecursionError`` (on RabbitMQ inside pika's
callback, which dropped the connection and redelivered the message for ever).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from redis_pipeline import redis_pipeline_fixture  # noqa: F401 - the fixture
from sqs_pipeline import sqs_pipeline_fixture  # noqa: F401 - the fixture
from worker_harness import Pipeline, pipeline_fixture, sqlite_pipeline_fixture  # noqa: F401 - the fixtures

NESTED = b"[" * 100_000 + b"]" * 100_000
JOBS = 20

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
