"""The SQS transport against moto's server: publish, consume, settle, and SQS's rules kept by the plugin."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from sqs_kit import consuming, poll, transport
from tqadmin_sqs.codec import MAX_ATTRIBUTES, is_xml_text, valid_attribute_name

from tests.support.sqs_server import SqsQueues
from tqadmin.plugin.models import Message
from tqadmin.plugin.transport import Outcome

pytestmark = pytest.mark.sqs

JOB = b'{"task_type": "t", "id": "j1"}'


def test_declare_creates_the_queue_and_its_dlq_with_a_redrive_policy(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.name("fresh")
    with transport(sqs_env) as t:
        t.declare(q)
        t.declare(q)  # again: nothing changes
    attributes = sqs_queues.client.get_queue_attributes(QueueUrl=sqs_queues.url(q), AttributeNames=["All"])
    policy = json.loads(attributes["Attributes"]["RedrivePolicy"])
    assert policy["deadLetterTargetArn"] == sqs_queues.arn(f"{q}-dlq")


def test_declare_keeps_a_users_queue_as_it_is(sqs_env: str, sqs_queues: SqsQueues) -> None:
    q, own_dlq = sqs_queues.create_with_dlq("mine", max_receive_count=3, VisibilityTimeout="7")
    with transport(sqs_env) as t:
        t.declare(q)
        assert t.queues.info(q).dlq == own_dlq
    attributes = sqs_queues.client.get_queue_attributes(QueueUrl=sqs_queues.url(q), AttributeNames=["All"])
    assert attributes["Attributes"]["VisibilityTimeout"] == "7"
    assert json.loads(attributes["Attributes"]["RedrivePolicy"])["maxReceiveCount"] == 3
    assert sqs_queues.client.list_queues(QueueNamePrefix=f"{q}-dlq").get("QueueUrls") is None


def test_a_queue_name_sqs_refuses_is_a_usage_error(sqs_env: str) -> None:
    from tqadmin.errors import UsageError

    with transport(sqs_env) as t, pytest.raises(UsageError, match="no dot"):
        t.declare("demo.images")


def test_publish_reports_each_message_and_a_missing_queue_fails_only_its_own(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.create("pub")
    messages = [(q, Message(JOB)) for _ in range(23)] + [(sqs_queues.name("absent"), Message(JOB))]
    with transport(sqs_env) as t:
        result = t.publish(messages)
    assert result.outcomes[:23] == (Outcome.CONFIRMED,) * 23
    assert result.outcomes[23] is Outcome.FAILED and result.error is not None
    assert sqs_queues.depth(q) == 23


def test_publish_consume_ack_keeps_body_and_headers_byte_for_byte(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.create("bytes")
    bodies = [JOB, b"\x00\xff binary", "caf\u00e9 \r\n".encode(), b"nul \x00 in text"]
    headers = {"x-tq-replays": 2, "blob": b"\x01\x02", "text": "v\x00w", "flag": True, "": "empty name"}
    with transport(sqs_env) as t:
        assert t.publish([(q, Message(b, headers)) for b in bodies]).all_confirmed
        with consuming(t, q) as running:
            got = running.wait_for(4)
            assert sorted(d.message.body for d in got) == sorted(bodies)
            assert all(dict(d.message.headers) == headers for d in got)
            assert all(running.consumer.ack(d) for d in got)
    poll(lambda: sqs_queues.depth(q) == 0, 5, "the acks")


def test_what_is_sent_keeps_the_rules_aws_enforces_and_moto_does_not(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.create("rules")
    headers: dict[str, Any] = {f"h{i}": f"v{i}" for i in range(14)}
    headers |= {"AWS.trace": "x", "Amazon.thing": "y", "nul": "a\x00b", "x-tq-reason": "fatal", "bad name": 1}
    with transport(sqs_env) as t:
        assert t.publish([(q, Message(b"\x00\x01", headers))]).all_confirmed
    (raw,) = sqs_queues.drain(q)
    attributes = raw["MessageAttributes"]
    assert len(attributes) <= MAX_ATTRIBUTES
    assert all(valid_attribute_name(name) for name in attributes)
    assert "x-tq-reason" in attributes  # what a person reads first keeps an attribute of its own
    assert all(is_xml_text(a.get("StringValue", "")) for a in attributes.values())
    assert is_xml_text(raw["Body"]) and attributes["x-tq-body-encoding"]["StringValue"] == "base64"


def test_retry_later_rounds_a_fraction_up_and_comes_back_with_its_headers(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.create("retry")
    sqs_queues.send(q, JOB.decode())
    with transport(sqs_env) as t, consuming(t, q) as running:
        (first,) = running.wait_for(1)
        asked = time.monotonic()
        assert running.consumer.retry_later(first, 0.2, {"x-tq-retry-count": 1})
        assert sqs_queues.depth(q) == 1  # the copy (delayed), the original deleted
        second = running.wait_for(2)[1]
        waited = time.monotonic() - asked
        # 0.2 s asked for, applied as 1 s (declared slack: 1 s): never sooner; later by what load adds
        assert 0.9 <= waited < 1.0 + 30
        assert second.message.body == JOB and second.message.headers["x-tq-retry-count"] == 1
        assert t.capabilities.delay_tolerance_s(0.2) >= 0.8


def test_a_copy_that_comes_before_its_time_is_deferred_without_being_handed_out(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    """How a delay past SQS's 900 s hops: the copy carries when it is due; earlier arrivals wait again."""
    q = sqs_queues.create("hop")
    due_ms = round((time.time() + 3) * 1000)
    sqs_queues.send(
        q,
        JOB.decode(),
        MessageAttributes={"x-tq-not-before": {"DataType": "Number", "StringValue": str(due_ms)}},
    )
    with transport(sqs_env) as t, consuming(t, q) as running:
        time.sleep(1.5)
        handed, looked_at = list(running.deliveries), time.time()
        if looked_at * 1000 < due_ms:  # (a loaded machine may look only once it is due)
            assert handed == []  # everything handed out by then came before its time
        (delivery,) = running.wait_for(1, timeout_s=60)
        assert time.time() * 1000 >= due_ms - 50
        assert delivery.message.enqueued_at == pytest.approx(due_ms / 1000)


def test_retry_past_900_s_sends_900_and_the_due_time(sqs_env: str, sqs_queues: SqsQueues) -> None:
    q = sqs_queues.create("long")
    sqs_queues.send(q, JOB.decode())
    with transport(sqs_env) as t, consuming(t, q) as running:
        (first,) = running.wait_for(1)
        assert running.consumer.retry_later(first, 3600, {})
    attributes = sqs_queues.client.get_queue_attributes(
        QueueUrl=sqs_queues.url(q), AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesDelayed"] == "1"


def test_dead_letter_goes_to_the_redrive_target_else_to_q_dlq(sqs_env: str, sqs_queues: SqsQueues) -> None:
    own, own_dlq = sqs_queues.create_with_dlq("own")
    plain = sqs_queues.create("plain")
    for q in (own, plain):
        sqs_queues.send(
            q,
            JOB.decode(),
            MessageAttributes={"x-tq-retry-count": {"DataType": "Number", "StringValue": "3"}},
        )
    with transport(sqs_env) as t:
        t.declare(plain)  # gives it plain-dlq, leaves it without a redrive policy
        for q in (own, plain):
            with consuming(t, q) as running:
                (delivery,) = running.wait_for(1)
                assert running.consumer.dead_letter(delivery, {"x-tq-reason": "fatal", "x-tq-attempts": 4})
    for dlq in (own_dlq, f"{plain}-dlq"):
        (raw,) = sqs_queues.drain(dlq)
        assert raw["Body"] == JOB.decode()
        assert raw["MessageAttributes"]["x-tq-reason"]["StringValue"] == "fatal"
        assert "x-tq-retry-count" not in raw["MessageAttributes"]  # a replay gets its whole budget again


def test_extend_keeps_a_message_past_its_lease_and_a_lapsed_one_is_never_settled(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.create("lease")
    sqs_queues.send_jobs(q, 2)
    lease_s, kept_s = 3, 60  # renewed for a minute: no turn of a loaded machine lapses it mid-test
    with transport(sqs_env) as t, consuming(t, q, lease_s=lease_s) as running:
        kept, lapsed = running.wait_for(2)
        assert running.consumer.extend([kept], kept_s) == []
        time.sleep(lease_s + 0.5)  # past the lease both were handed with (a lower bound: load only adds)
        assert running.consumer.alive(kept)
        assert not running.consumer.alive(lapsed)  # SQS has given it back
        assert running.consumer.extend([lapsed], kept_s) == [lapsed]
        again = running.wait_for(3)[2]
        assert again.message.id == lapsed.message.id and again.message.delivery_count == 2
        assert not running.consumer.ack(lapsed)
        assert running.consumer.extend([again], kept_s) == []
        assert running.consumer.ack(kept) and running.consumer.ack(again)
    poll(lambda: sqs_queues.depth(q) == 0, 5, "the acks")


def test_fifo_copies_keep_their_group_and_get_a_fresh_deduplication_id(
    sqs_env: str, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.name("order.fifo")
    with transport(sqs_env) as t:
        t.declare(q)
        first = Message(JOB, properties={"MessageGroupId": "customer-7"}, id="j1")
        assert t.publish([(q, first)]).all_confirmed
        with consuming(t, q) as running:
            (original,) = running.wait_for(1)
            assert running.consumer.retry_later(original, 0, {"x-tq-retry-count": 1})
            copy = running.wait_for(2)[1]
            assert running.consumer.dead_letter(copy, {"x-tq-reason": "fatal"})
    (dead,) = sqs_queues.drain(q.replace(".fifo", "-dlq.fifo"))
    ids = {p.message.properties["MessageDeduplicationId"] for p in (original, copy)} | {
        dead["Attributes"]["MessageDeduplicationId"]
    }
    assert len(ids) == 3
    assert {original.message.properties["MessageGroupId"], copy.message.properties["MessageGroupId"]} == {
        "customer-7"
    }
    assert dead["Attributes"]["MessageGroupId"] == "customer-7"


def test_a_message_over_the_queues_size_limit_fails_alone(sqs_env: str, sqs_queues: SqsQueues) -> None:
    q = sqs_queues.create("big", MaximumMessageSize="1024")
    with transport(sqs_env) as t:
        result = t.publish([(q, Message(b"x" * 2000)), (q, Message(JOB))])
    assert result.outcomes == (Outcome.FAILED, Outcome.CONFIRMED)
    assert "at most 1024" in str(result.error)
