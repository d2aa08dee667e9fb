"""The demo's dashboard lists the demo's queues only, and acts through the real admin."""

import inspect
from typing import Any, ClassVar

from tqadmin.demo.focus import FocusedAdmin, focused, focused_factory
from tqadmin.demo.layout import plan
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.models import Alarm, PeekResult, QueueListing, QueueStats

CAPABILITIES = Capabilities(frozenset({Operation.PEEK, Operation.PURGE}), peek_cost="nothing")


class RecordingAdmin(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def list_queues(self) -> QueueListing:
        names = ["demo.images", "demo.images.dlq", "demo.images.retry.1s", "orders", "demonstration"]
        return QueueListing(tuple(QueueStats(n, 1, 1, 0, 0) for n in names), (Alarm("n1", "memory"),), "rmq")

    def peek(self, queue: str, count: int) -> PeekResult:
        self.calls.append(("peek", queue))
        return PeekResult(queue, (), "free")

    def purge(self, queue: str) -> int:
        self.calls.append(("purge", queue))
        return 3


def test_only_the_demos_queues_are_listed_with_the_brokers_alarms() -> None:
    admin = focused(RecordingAdmin(), plan("demo", 4))
    listing = admin.list_queues()
    assert [q.name for q in listing.queues] == ["demo.images", "demo.images.dlq", "demo.images.retry.1s"]
    assert listing.alarms == (Alarm("n1", "memory"),) and listing.broker == "rmq"


def test_actions_go_to_the_real_admin_with_its_capabilities() -> None:
    inner = RecordingAdmin()
    admin = focused_factory(lambda settings: inner, plan("demo", 4))(None)  # type: ignore[arg-type]
    assert type(admin).capabilities is CAPABILITIES
    assert admin.purge("demo.images.dlq") == 3
    admin.peek("demo.images", 5)
    assert inner.calls == [("purge", "demo.images.dlq"), ("peek", "demo.images")]


def test_every_operation_of_the_contract_is_passed_on() -> None:
    contract = {
        name
        for name, member in inspect.getmembers(BrokerAdmin, inspect.isfunction)
        if not name.startswith("_")
    }
    assert contract <= set(vars(FocusedAdmin)), "a new BrokerAdmin operation must be delegated"
