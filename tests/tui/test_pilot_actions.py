"""The dashboard's actions go through the CLI's action service: the same path (the broker's own move where
the CLI takes it), the same write gate (the audit log included), the same dead-letter groups."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable
from tqadmin_rabbitmq.deaths import deaths as rabbitmq_deaths

from tests.tui.conftest import audit_lines, notifications, select_queue, settled
from tests.tui.seeded import SIZE
from tests.tui.seeding import SeededAdmin
from tqadmin.admin.dead_letters import group_key
from tqadmin.admin.paths import run_transfer
from tqadmin.admin.plans import TransferRequest
from tqadmin.plugin.models import ActionReport, DeathRecord, Message
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.screens.action import ActionScreen
from tqadmin.tui.screens.overview import OverviewScreen

MakeApp = Callable[..., TqadminApp]
pytestmark = pytest.mark.anyio


class ShovelAdmin(SeededAdmin):
    """The seeded broker, whose server-side move (one step under its lock) is recorded as a shovel."""

    def __init__(self) -> None:
        super().__init__()
        self.shovels: list[tuple[str, str, int | None]] = []

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        self.shovels.append((source, target, limit))
        return super().server_side_move(source, target, limit)


class BrokerDeathsAdmin(SeededAdmin):
    """The seeded broker reading each message's own death records as RabbitMQ's plugin reads x-death."""

    def deaths(self, message: Message) -> tuple[DeathRecord, ...]:
        return rabbitmq_deaths(message)


async def test_a_whole_queue_move_takes_the_brokers_own_move_where_the_cli_does(
    make_app: MakeApp, tmp_path: Path
) -> None:
    admin = ShovelAdmin()
    app = make_app(admin=admin)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await select_queue(pilot, "emails")
        await pilot.press("m", *"reports", "enter")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        assert admin.shovels == []  # the dry run counts through the client: the broker's move cannot
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    assert admin.shovels == [("emails", "reports", None)]
    assert admin.messages["emails"] == []
    assert admin.calls.count("open_transfer emails") == 1  # the dry run's look only
    records = audit_lines(tmp_path)
    assert [r["outcome"] for r in records] == ["dry_run", "ok"]
    arrived = [m for m in admin.messages["reports"] if (m.id or "").startswith("emails")]
    assert records[-1]["count"] == len(arrived) > 0
    cli = ShovelAdmin()
    run_transfer(cli, TransferRequest("move", "emails", "reports"), lambda _line: None)
    assert cli.shovels == admin.shovels  # what the CLI does with the same request


async def test_a_group_move_takes_the_client_path_as_a_filtered_cli_move_does(
    make_app: MakeApp, tmp_path: Path
) -> None:
    admin = ShovelAdmin()
    app = make_app(admin=admin)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("d")
        await settled(pilot, lambda: bool(app.screen.groups))  # type: ignore[attr-defined]
        await pilot.press("tab", "m", *"reports", "enter")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    assert admin.shovels == []
    assert audit_lines(tmp_path)[-1]["outcome"] == "ok"


def rejected_by_the_broker(n: int) -> Message:
    """A dead letter only the broker dead-lettered: no x-tq-* header, only its own record of the death."""
    death = {"count": 1, "reason": "rejected", "queue": "shop", "time": "2026-05-28T20:18:00+00:00"}
    body = json.dumps({"task_type": "charge", "id": f"c-{n}"}).encode()
    return Message(body=body, headers={"x-death": [death]}, id=f"c-{n}")


async def test_a_dead_letter_only_the_broker_recorded_is_grouped_with_its_reason_as_the_cli_groups_it(
    make_app: MakeApp,
) -> None:
    admin = BrokerDeathsAdmin(queues=["shop"])
    admin.broker.purge("shop.dlq")  # the seeded dead letters carry the worker's headers; these carry none
    admin.broker.publish([("shop.dlq", rejected_by_the_broker(n)) for n in range(2)])
    app = make_app(admin=admin)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("d")
        await settled(pilot, lambda: bool(app.screen.groups))  # type: ignore[attr-defined]
        (group,) = app.screen.groups  # type: ignore[attr-defined]
        row = app.screen.query_one("#groups", DataTable).get_row_at(0)
    message = admin.messages["shop.dlq"][0]
    assert group.count == 2
    assert group.reason == "rejected (by the broker)" == group_key(message, "reason", admin.deaths)
    assert group.error == group_key(message, "error", admin.deaths)
    assert group.task_type == "charge"
    assert [cell.plain for cell in row[1:3]] == ["rejected (by the broker)", "charge"]


async def test_a_write_is_refused_before_its_dialog_when_the_audit_log_cannot_be_written(
    make_app: MakeApp, tmp_path: Path
) -> None:
    in_the_way = tmp_path / "state"
    in_the_way.write_text("a file where the audit log's folder should be\n")
    admin = SeededAdmin()
    app = make_app(admin=admin, audit_log=in_the_way / "audit.jsonl")
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        for key in ("m", "R", "X"):
            await pilot.press(key)
            assert isinstance(app.screen, OverviewScreen)
        refused = [n for n in notifications(app) if "cannot write the audit log" in n]
        assert len(refused) == 3 and all("is disabled" in n for n in refused)
    assert admin.writes == []
    assert not any(c.startswith("open_transfer") for c in admin.calls)
