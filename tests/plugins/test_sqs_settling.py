"""SQS settles through the shared leased base: its acks go in SQS's batches of ten, a batch SQS did not
answer is sent again, and the messages whose acks wait through an outage stay hidden, renewed by the base's
``extend``, until their deletes land (moto behind the fault endpoint of ``tests/support/sqs_proxy.py``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqs_kit import consuming, poll, transport
from tqadmin_sqs.consuming import SqsConsumer
from tqadmin_sqs.queues import QueueInfo, Queues

from tests.support.sqs_proxy import Answer, SqsProxy, error
from tests.support.sqs_server import SqsQueues

pytestmark = pytest.mark.sqs

LEASE_S = 6.0  # the messages' visibility: the outage below outlasts it twice
OUTAGE_S = 15.0
RENEW_EVERY_S = 1.0  # what the worker's monitor does, at a sixth of the lease


@pytest.fixture
def proxy(sqs_env: str) -> Iterator[SqsProxy]:
    endpoint = SqsProxy(sqs_env)
    yield endpoint
    endpoint.close()


class Outage:
    """DeleteMessageBatch answered with HTTP 500 while ``on`` (botocore's retries included), forwarded
    otherwise: renewals and receives go on, as when one kind of call fails on SQS's side."""

    def __init__(self, proxy: SqsProxy, failures: int | None = None) -> None:
        self.on = True
        self.failures = failures  # the calls that fail, if not until healed
        self.failed = 0
        proxy.hooks["DeleteMessageBatch"] = self.hook

    def hook(self, _payload: dict[str, Any]) -> Answer | None:
        if not self.on or (self.failures is not None and self.failed >= self.failures):
            return None
        self.failed += 1
        return error("InternalError", "we encountered an internal error", 500)


def deleted(proxy: SqsProxy) -> list[int]:
    """The size of each DeleteMessageBatch the endpoint saw."""
    return [len(p["Entries"]) for name, p in proxy.calls if name == "DeleteMessageBatch"]


def test_acks_go_in_batches_of_ten(proxy: SqsProxy, sqs_queues: SqsQueues) -> None:
    q = sqs_queues.create("batched")
    sqs_queues.send_jobs(q, 23)
    with transport(proxy.endpoint) as t, consuming(t, q, prefetch=30) as running:
        for delivery in running.wait_for(23):
            assert running.consumer.ack(delivery)
        poll(lambda: sqs_queues.depth(q) == 0, 60, "every ack to land")
    sizes = deleted(proxy)
    assert sum(sizes) == 23 and max(sizes) <= 10
    assert len(sizes) < 23  # batched, not one call an ack


def test_a_failed_settle_is_sent_again_until_sqs_takes_it(proxy: SqsProxy, sqs_queues: SqsQueues) -> None:
    q = sqs_queues.create("resent")
    sqs_queues.send_jobs(q, 3)
    outage = Outage(proxy, failures=6)  # more than botocore's own tries of one call
    with transport(proxy.endpoint) as t, consuming(t, q, prefetch=10) as running:
        for delivery in running.wait_for(3):
            assert running.consumer.ack(delivery)
        poll(lambda: sqs_queues.depth(q) == 0, 120, "the acks to land after the failures")
    assert outage.failed == 6 and sum(deleted(proxy)) > 3  # sent again, not dropped


def test_an_outage_mid_batch_loses_no_settle_and_the_acked_stay_hidden_until_it_ends(
    proxy: SqsProxy, sqs_queues: SqsQueues
) -> None:
    q = sqs_queues.create("outage")
    sqs_queues.send_jobs(q, 25)
    outage = Outage(proxy)
    came_back: list[int] = []
    with transport(proxy.endpoint) as t, consuming(t, q, prefetch=30, lease_s=LEASE_S) as running:
        got = running.wait_for(25)
        for delivery in got[:10]:  # a full batch goes at once, into the outage
            assert running.consumer.ack(delivery)
        poll(lambda: outage.failed > 0, 60, "the first batch to fail")
        for delivery in got[10:]:  # and the rest are acked while it lasts
            assert running.consumer.ack(delivery)
        ends = time.monotonic() + OUTAGE_S
        while time.monotonic() < ends:  # the worker's monitor: renew what is held, acks in flight too
            assert running.consumer.extend([], LEASE_S) == []
            came_back.append(sqs_queues.visible(q))
            time.sleep(RENEW_EVERY_S)
        outage.on = False
        poll(lambda: sqs_queues.depth(q) == 0, 120, "every ack to land once the outage ended")
        assert len(running.deliveries) == 25  # none came back to this consumer either
    assert set(came_back) == {0}  # no acked message became visible to another consumer meanwhile
    assert outage.failed >= 2 and sum(deleted(proxy)) > 25  # failed batches sent again


class Recording:
    """A client that answers settles at once, refusing some receipts, and notes the calls in order."""

    def __init__(self, refuse: frozenset[str]) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.refuse = refuse
        self.lock = threading.Lock()

    def _answer(self, name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
        with self.lock:
            self.calls.append((name, [e["ReceiptHandle"] for e in entries]))
        return {
            "Successful": [{"Id": e["Id"]} for e in entries if e["ReceiptHandle"] not in self.refuse],
            "Failed": [
                {"Id": e["Id"], "Code": "ReceiptHandleIsInvalid"}
                for e in entries
                if e["ReceiptHandle"] in self.refuse
            ],
        }

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self._answer("delete", Entries)

    def change_message_visibility_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self._answer("visibility", Entries)


def test_a_settle_gives_back_the_releases_then_deletes_the_acks_and_names_the_refused() -> None:
    client = Recording(refuse=frozenset({"stale"}))
    info = QueueInfo("q", "http://127.0.0.1:1/q", "arn:q", False, None, None, 262_144, 30)
    consumer = SqsConsumer(Queues(client, "SQS"), info, 10, 30.0)
    assert consumer.settle(["fresh", "stale"], ["back"]) == ["stale"]
    assert client.calls == [("visibility", ["back"]), ("delete", ["fresh", "stale"])]
