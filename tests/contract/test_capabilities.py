"""Every plugin honours what it declares: a declared operation works, an undeclared one is refused with its
declared reason.

Run against each plugin's broker through the harnesses in ``contract_harness.py`` (and a memory broker that
withholds every operation, so the refusals run too); the last test checks the contract's defaults with a
plugin that declares nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

import pytest
from contract_harness import Harness  # the harnesses sit beside this file

from tqadmin.errors import NotSupported
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import Message, QueueListing

BODIES = [b'{"task_type": "t", "id": "a"}', b'{"task_type": "t", "id": "b"}', b"\x00\xff"]


def check_peek(h: Harness, admin: BrokerAdmin) -> None:
    q = h.make_queue(BODIES)
    result = admin.peek(q, 2)
    assert [m.body for m in result.messages] == BODIES[:2]
    assert result.cost == admin.capabilities.peek_cost != ""
    assert h.depth(q) == 3
    # A second look adds one to each delivery count exactly where the plugin declares that a look counts.
    before = {m.body: m.delivery_count for m in result.messages}
    after = {m.body: m.delivery_count for m in admin.peek(q, 2).messages}
    added = {after[b] - n for b, n in before.items() if n is not None and after.get(b) is not None}
    assert added <= {1 if admin.capabilities.peek_counts_delivery else 0}


def check_transfer(h: Harness, admin: BrokerAdmin) -> None:
    src, dst = h.make_queue(BODIES), h.make_queue([])
    with admin.open_transfer(src) as session:
        assert session.count_at_start() == 3
        first = session.fetch(2)
        session.publish_confirmed([(dst, d.message) for d in first])
        session.ack(first)
        rest = session.fetch(10)
        assert [d.message.body for d in rest] == BODIES[2:]
        assert session.fetch(10) == []
    assert (h.depth(src), h.depth(dst)) == (1, 2)


def check_publish(h: Harness, admin: BrokerAdmin) -> None:
    q = h.make_queue([])
    with admin.open_transfer(q) as session:
        session.publish_confirmed([(q, Message(body=b"x"))])
    assert h.depth(q) == 1


def check_purge(h: Harness, admin: BrokerAdmin) -> None:
    q = h.make_queue(BODIES)
    assert admin.purge(q) == 3
    assert h.depth(q) == 0


def check_server_side_move(h: Harness, admin: BrokerAdmin) -> None:
    src, dst = h.move_pair(BODIES)
    report = admin.server_side_move(src, dst, None)
    assert report is not None and report.moved == 3
    assert (h.depth(src), h.depth(dst)) == (0, 3)


CHECKS: dict[Operation, Callable[[Harness, BrokerAdmin], None]] = {
    Operation.PEEK: check_peek,
    Operation.MOVE: check_transfer,
    Operation.REPLAY: check_transfer,
    Operation.EXPORT: check_transfer,
    Operation.DELETE: check_transfer,
    Operation.IMPORT: check_publish,
    Operation.PUBLISH: check_publish,
    Operation.PURGE: check_purge,
    Operation.SERVER_SIDE_MOVE: check_server_side_move,
}


# The admin method an operation stands on, where it has one of its own; the others (replay, export, import,
# delete, publish) are built by tqadmin.admin on a transfer session, and their commands ask
# ``capabilities.require`` before they open one.
OWN_METHODS: dict[Operation, Callable[[Harness, BrokerAdmin], object]] = {
    Operation.PEEK: lambda h, admin: admin.peek(h.make_queue(BODIES), 1),
    Operation.MOVE: lambda h, admin: admin.open_transfer(h.make_queue(BODIES)),
    Operation.PURGE: lambda h, admin: admin.purge(h.make_queue(BODIES)),
}


def check_refused(h: Harness, admin: BrokerAdmin, operation: Operation) -> None:
    reason = re.escape(admin.capabilities.why_not(operation))
    with pytest.raises(NotSupported, match=reason):
        admin.capabilities.require(operation)
    if operation in OWN_METHODS:
        with pytest.raises(NotSupported, match=reason):
            OWN_METHODS[operation](h, admin)
    if operation is Operation.SERVER_SIDE_MOVE:  # not available: the command moves through the client
        src, dst = h.make_queue(BODIES), h.make_queue([])
        assert admin.server_side_move(src, dst, None) is None
        assert (h.depth(src), h.depth(dst)) == (3, 0)


@pytest.mark.parametrize("operation", list(Operation))
def test_every_declared_operation_works_and_every_other_is_refused_with_its_reason(
    declaring_harness: Harness, operation: Operation
) -> None:
    with declaring_harness.admin() as admin:
        if admin.capabilities.supports(operation):
            CHECKS[operation](declaring_harness, admin)
        else:
            check_refused(declaring_harness, admin, operation)


class ListOnly(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = Capabilities(
        supported=frozenset(), reasons=((Operation.PEEK, "this broker cannot look without taking"),)
    )

    def list_queues(self) -> QueueListing:
        return QueueListing(queues=())


def test_a_plugin_that_declares_nothing_raises_not_supported_with_its_reason() -> None:
    admin = ListOnly()
    with pytest.raises(NotSupported, match="cannot look without taking"):
        admin.peek("q", 1)
    for call in (lambda: admin.open_transfer("q"), lambda: admin.purge("q")):
        with pytest.raises(NotSupported):
            call()
    assert admin.server_side_move("a", "b", None) is None
