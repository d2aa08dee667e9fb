"""Every plugin delivers a body no reading accepts as it is, and dead-letters it byte for byte: nothing a body
holds raises in a plugin's consumer or admin face (memory, RabbitMQ, SQLite, SQS and Redis alike)."""

from __future__ import annotations

import pytest
from contract_harness import Harness
from test_transport import (  # the transport contract's helpers and fixtures
    BODY,
    HEADERS,
    Running,
    consumers,  # noqa: F401 - the fixture
    includes,
    start,
    transport,  # noqa: F401 - the fixture
    work_queue,
)

from tqadmin.plugin.bodies import MalformedJob
from tqadmin.plugin.models import HEADER_REASON
from tqadmin.plugin.transport import BrokerTransport

NESTED = b"[" * 100_000 + b"]" * 100_000  # past the interpreter's recursion limit


def test_a_body_nested_100000_deep_is_delivered_as_it_is_and_dead_lettered_byte_for_byte(
    harness: Harness,
    transport: BrokerTransport,  # noqa: F811 - the fixture
    consumers: list[Running],  # noqa: F811 - the fixture
) -> None:
    queue = work_queue(harness, transport, [NESTED, BODY])
    with harness.admin() as admin:
        peeked = admin.peek(queue, 2).messages
    assert [m.body for m in peeked] == [NESTED, BODY]
    assert [m.job() is None for m in peeked] == [True, False]
    worker = start(consumers, harness, queue)
    _, poison = worker.next()
    assert poison.message.body == NESTED
    with pytest.raises(MalformedJob):
        poison.message.read_job()
    assert worker.consumer.dead_letter(poison, {HEADER_REASON: "malformed"}) is True
    _, good = worker.next()  # the consumer goes on
    assert good.message.body == BODY and worker.consumer.ack(good)
    worker.stop()
    ((body, headers),) = harness.drain(harness.plugin().dlq_name(queue))
    assert body == NESTED and includes(headers, {**HEADERS, HEADER_REASON: "malformed"})
