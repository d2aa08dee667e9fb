"""What moto does not model, through a small SQS endpoint in front of it (``tests/support/sqs_proxy.py``):
entries refused inside a batch, throttling, message move tasks, and AWS's FIFO deduplication window."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from sqs_kit import consuming, transport

from tests.support.sqs_proxy import Answer, FifoDeduplication, MoveTasks, SqsProxy, error
from tests.support.sqs_server import SqsQueues
from tqadmin.plugin.models import Message

pytestmark = pytest.mark.sqs

TqJson = Callable[..., tuple[int, Any, str]]


@pytest.fixture
def proxy(sqs_env: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SqsProxy]:
    """The endpoint in front of moto, which the CLI and the plugin use from now on."""
    endpoint = SqsProxy(sqs_env)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint.endpoint)
    yield endpoint
    endpoint.close()


def refusing(upstream: str, ids: set[str]) -> Callable[[dict[str, Any]], Answer]:
    """SendMessageBatch that refuses the entries with these ids and sends the others to moto."""
    client = boto3.client("sqs", endpoint_url=upstream, region_name="us-east-1")

    def hook(payload: dict[str, Any]) -> Answer:
        kept = [e for e in payload["Entries"] if e["Id"] not in ids]
        failed = [
            {"Id": e["Id"], "Code": "InternalError", "Message": "try again", "SenderFault": False}
            for e in payload["Entries"]
            if e["Id"] in ids
        ]
        sent = client.send_message_batch(QueueUrl=payload["QueueUrl"], Entries=kept) if kept else {}
        return Answer(200, {"Successful": sent.get("Successful", []), "Failed": failed})

    return hook


def test_entries_refused_inside_a_batch_fail_alone(
    proxy: SqsProxy, sqs_queues: SqsQueues, sqs_env: str
) -> None:
    q = sqs_queues.create("partial")
    proxy.hooks["SendMessageBatch"] = refusing(sqs_env, {"1", "3"})
    with transport(proxy.endpoint) as t:
        result = t.publish([(q, Message(f'{{"task_type": "t", "id": "{i}"}}'.encode())) for i in range(5)])
    assert [o.value for o in result.outcomes] == ["confirmed", "failed", "confirmed", "failed", "confirmed"]
    assert "InternalError" in str(result.error)
    assert sqs_queues.depth(q) == 3


def test_a_move_whose_copies_are_partly_refused_keeps_every_original_and_a_rerun_finishes(
    proxy: SqsProxy, sqs_queues: SqsQueues, sqs_env: str, tq_json: TqJson
) -> None:
    src, dst = sqs_queues.create("src"), sqs_queues.create("dst")
    ids = sqs_queues.send_jobs(src, 7)
    proxy.hooks["SendMessageBatch"] = refusing(sqs_env, {"2"})
    code, doc, err = tq_json("move", src, dst)
    assert code == 4 and doc["moved"] == 0 and "refused" in err
    assert sqs_queues.visible(src) == 7  # the batch's originals all stayed
    del proxy.hooks["SendMessageBatch"]
    assert tq_json("move", src, dst)[0] == 0
    arrived = {json.loads(m["Body"])["id"] for m in sqs_queues.drain(dst)}
    assert arrived == set(ids) and sqs_queues.depth(src) == 0  # nothing lost (some twice: dedup's job)


def test_throttled_calls_are_retried_and_persistent_throttling_is_exit_4(
    proxy: SqsProxy, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    q = sqs_queues.create("throttled")
    refusals = iter(range(2))
    throttled = error("ThrottlingException", "Rate exceeded")
    proxy.hooks["SendMessageBatch"] = lambda _p: throttled if next(refusals, None) is not None else None
    job = '{"task_type": "t", "id": "a"}'
    assert tq_json("publish", "--queue", q, "--job", job)[0] == 0
    assert proxy.count("SendMessageBatch") == 3
    proxy.hooks["SendMessageBatch"] = lambda _p: throttled
    code, _, err = tq_json("publish", "--queue", q, "--job", job)
    assert code == 4 and "throttled" in err
    assert sqs_queues.depth(q) == 1


def test_replay_of_a_dlq_uses_a_move_task_and_follows_it_with_progress(
    proxy: SqsProxy, sqs_queues: SqsQueues, sqs_env: str, tq_json: TqJson
) -> None:
    MoveTasks(sqs_env, rate=20).install(proxy)
    q, dlq = sqs_queues.create_with_dlq("redriven")
    sqs_queues.send_jobs(dlq, 30)
    code, doc, err = tq_json("replay", dlq)
    assert code == 0, err
    assert doc["moved"] == 30 and doc["target"] == q and "move task" in doc["detail"]
    assert "x-tq-replays not incremented" in doc["detail"]
    assert "of 30 moved" in err  # progress, from ListMessageMoveTasks
    assert proxy.count("StartMessageMoveTask") == 1
    assert (sqs_queues.visible(q), sqs_queues.depth(dlq)) == (30, 0)


def test_a_replay_while_a_move_task_of_that_dlq_runs_is_exit_4_already_running(
    proxy: SqsProxy, sqs_queues: SqsQueues, sqs_env: str, tq_json: TqJson
) -> None:
    MoveTasks(sqs_env, rate=2).install(proxy)
    q, dlq = sqs_queues.create_with_dlq("busy")
    sqs_queues.send_jobs(dlq, 20)
    someone = boto3.client("sqs", endpoint_url=proxy.endpoint, region_name="us-east-1")
    someone.start_message_move_task(SourceArn=sqs_queues.arn(dlq), DestinationArn=sqs_queues.arn(q))
    code, _, err = tq_json("replay", dlq)
    assert code == 4 and "already running" in err
    assert proxy.count("StartMessageMoveTask") == 1


def test_fifo_copies_never_reuse_a_deduplication_id(
    proxy: SqsProxy, sqs_queues: SqsQueues, tq_json: TqJson
) -> None:
    watch = FifoDeduplication()
    watch.install(proxy)
    q = sqs_queues.name("jobs.fifo")
    assert tq_json("publish", "--queue", q, "--job", '{"task_type": "t", "id": "same"}')[0] == 0
    with transport(proxy.endpoint) as t, consuming(t, q) as running:
        (original,) = running.wait_for(1)
        assert running.consumer.retry_later(original, 0, {"x-tq-retry-count": 1})
        assert running.consumer.dead_letter(running.wait_for(2)[1], {"x-tq-reason": "fatal"})
    dlq = q.replace(".fifo", "-dlq.fifo")
    code, doc, err = tq_json("replay", dlq, "--client-side", "--to", q)
    assert code == 0 and doc["moved"] == 1, err
    assert tq_json("move", q, dlq)[0] == 0
    assert len(watch.seen) == 5 and watch.reused == []
    assert [json.loads(m["Body"])["id"] for m in sqs_queues.drain(dlq)] == ["same"]
