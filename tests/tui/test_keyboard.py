"""Every binding and action driven from the keyboard against the seeded memory broker."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.widgets import DataTable, Input
from tqadmin_memory.admin import MemoryAdmin
from tqadmin_rabbitmq.capabilities import CAPABILITIES as RABBITMQ_CAPABILITIES
from tqadmin_rabbitmq.deaths import deaths as rabbitmq_deaths
from tqadmin_sqlite.capabilities import PEEK_COST as SQLITE_PEEK_COST

from tests.tui.conftest import audit_lines, notifications, screen_text, select_queue, settled, text_of
from tests.tui.seeded import SIZE
from tests.tui.seeding import SEEDED_CAPABILITIES, RecordingTransfer, SeededAdmin
from tqadmin.errors import BadResponse, NotAuthorized, Unreachable
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import Alarm, Message, PeekResult, QueueListing
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.screens.action import ActionScreen
from tqadmin.tui.screens.help import HelpScreen, screens
from tqadmin.tui.screens.inspector import InspectorScreen
from tqadmin.tui.screens.overview import OverviewScreen
from tqadmin.tui.screens.profiles import ProfilesScreen
from tqadmin.tui.screens.queue_detail import QueueDetailScreen
from tqadmin.tui.widgets.queue_table import QueueTable, header_text, row_text

MakeApp = Callable[..., TqadminApp]
pytestmark = pytest.mark.anyio


def table_names(app: TqadminApp) -> list[str]:
    return list(app.screen.query_one(QueueTable).order)


async def test_the_overview_lists_every_queue_deepest_first(make_app: MakeApp, fake: SeededAdmin) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: app.poll_state.last_ok is not None)
        names = table_names(app)
        assert set(names) == set(fake.messages)
        depths = [app.board.stats[n].messages for n in names]
        assert depths == sorted(depths, reverse=True)


async def test_s_cycles_the_sort_column_and_capital_s_reverses_it(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        table = app.screen.query_one(QueueTable)
        while table.sort_column != "name":
            await pilot.press("s")
        assert table_names(app) == sorted(table_names(app), key=str.lower)
        await pilot.press("S")
        assert table_names(app) == sorted(table_names(app), key=str.lower, reverse=True)


async def test_vim_keys_and_arrows_move_the_cursor(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        table = app.screen.query_one(QueueTable)
        await pilot.press("j", "j", "down")
        assert table.cursor_row == 3
        await pilot.press("k", "up")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0


async def test_slash_filters_by_name_and_escape_clears(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("slash", *"dlq", "enter")
        assert table_names(app) and all(n.endswith(".dlq") for n in table_names(app))
        await pilot.press("slash", "escape")
        assert len(table_names(app)) == len(work_queues(app.board.stats.values()))


class RabbitMQLikeAdmin(SeededAdmin):
    """The seeded broker declaring RabbitMQ's peek cost: a get that requeues and counts a delivery."""

    capabilities: ClassVar[Capabilities] = replace(
        SEEDED_CAPABILITIES, peek_cost=RABBITMQ_CAPABILITIES.peek_cost, peek_counts_delivery=True
    )


async def test_enter_opens_the_queue_with_peeked_messages_and_their_cost(make_app: MakeApp) -> None:
    app = make_app(admin=RabbitMQLikeAdmin())
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("enter")
        await settled(pilot, lambda: isinstance(app.screen, QueueDetailScreen) and bool(app.screen.peeked))
        cost = text_of(app.screen.query_one("#peek-cost"))
        assert "Cost of this look" in cost and "requeue" in cost
        await pilot.press("r")
        await settled(pilot, lambda: "Cost" in text_of(app.screen.query_one("#peek-cost")))
        await pilot.press("j", "k", "enter")
        assert isinstance(app.screen, InspectorScreen)
        await pilot.press("j", "k", "G", "g", "escape")
        assert isinstance(app.screen, QueueDetailScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


def peeks(fake: SeededAdmin) -> int:
    return sum(1 for call in fake.calls if call.startswith("peek"))


async def poll(pilot: Any, fake: SeededAdmin, times: int = 5) -> None:
    """``times`` full polls of the broker, each landed on the screen before the next."""
    for _ in range(times):
        listed = fake.calls.count("list_queues")
        pilot.app.action_refresh()
        await settled(pilot, lambda n=listed: fake.calls.count("list_queues") > n)
        await pilot.pause()


async def test_polling_never_peeks_only_opening_a_queue_or_pressing_r_does(
    make_app: MakeApp, fake: SeededAdmin
) -> None:
    """Each peek counts a delivery (on a quorum queue it brings a message nearer its delivery-limit)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await poll(pilot, fake)
        assert peeks(fake) == 0
        await pilot.press("enter")
        await settled(pilot, lambda: bool(getattr(app.screen, "peeked", ())))
        await poll(pilot, fake)
        assert peeks(fake) == 1
        await pilot.press("r")
        await settled(pilot, lambda: peeks(fake) == 2)
        await pilot.press("escape", "d")
        await settled(pilot, lambda: bool(getattr(app.screen, "groups", ())))
        assert peeks(fake) == 3
        await pilot.press("j", "j")  # moving over other dead-letter queues only says how to load them
        await poll(pilot, fake)
        assert peeks(fake) == 3
        assert "press Enter or r" in text_of(app.screen.query_one("#group-title"))
        await pilot.press("enter")
        await settled(pilot, lambda: peeks(fake) == 4)


def test_the_cost_notice_warns_about_the_delivery_limit_when_messages_carry_a_delivery_count() -> None:
    from tqadmin.plugin.models import PeekResult
    from tqadmin.tui.widgets.peek_cost import cost_notice

    quorum = PeekResult("q", (Message(body=b"{}", delivery_count=3),), "gets and requeues", delivery_limit=5)
    classic = PeekResult("q", (Message(body=b"{}"),), "gets and requeues")
    assert "has 3 of the 5 after which the broker drops" in cost_notice(quorum, RABBITMQ_CAPABILITIES).plain
    assert "one more after this look" in cost_notice(quorum, RABBITMQ_CAPABILITIES).plain
    assert "Deliveries counted" not in cost_notice(classic, RABBITMQ_CAPABILITIES).plain


@pytest.mark.parametrize(
    ("plugin", "counts"),
    [("tqadmin_sqlite", False), ("tqadmin_redis", False), ("tqadmin_rabbitmq", True), ("tqadmin_sqs", True)],
)
def test_the_cost_notice_says_a_look_adds_a_delivery_only_where_the_plugin_declares_it(
    plugin: str, counts: bool
) -> None:
    import importlib

    from tqadmin.plugin.models import PeekResult
    from tqadmin.tui.widgets.peek_cost import cost_notice

    capabilities = importlib.import_module(f"{plugin}.capabilities").CAPABILITIES
    assert capabilities.peek_counts_delivery is counts
    result = PeekResult("q", (Message(body=b"{}", delivery_count=2),), capabilities.peek_cost)
    said = cost_notice(result, capabilities).plain
    assert "the most-delivered message here has 2" in said
    assert ("one more after this look" in said) is counts
    assert ("a look adds none" in said) is not counts


class SQLiteLikeAdmin(SeededAdmin):
    """The seeded broker with the embedded broker's peek: a plain read, each message's count of worker
    deliveries."""

    capabilities: ClassVar[Capabilities] = replace(
        SEEDED_CAPABILITIES, peek_cost=SQLITE_PEEK_COST, peek_counts_delivery=False
    )

    def peek(self, queue: str, count: int) -> PeekResult:
        looked = super().peek(queue, count)
        return replace(looked, messages=tuple(replace(m, delivery_count=0) for m in looked.messages))


async def test_on_a_broker_whose_look_counts_nothing_the_queue_and_dead_letter_screens_never_say_it_does(
    make_app: MakeApp,
) -> None:
    app = make_app(admin=SQLiteLikeAdmin())
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await select_queue(pilot, "orders")
        await pilot.press("enter")
        await settled(pilot, lambda: "peeked" in text_of(app.screen.query_one("#peek-cost")))
        shown = text_of(app.screen.query_one("#peek-cost"))
        assert "nothing is marked redelivered, counted" in shown and "a look adds none" in shown
        assert "one more after this look" not in shown
        await pilot.press("d")
        await settled(pilot, lambda: "Cost of this look" in text_of(app.screen.query_one("#group-cost")))
        assert "one more after this look" not in text_of(app.screen.query_one("#group-cost"))


async def test_the_inspector_shows_body_headers_history_and_last_error(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        seeded = SeededAdmin().messages["orders.dlq"][0]
        # As RabbitMQ leaves a message it dead-lettered itself, its own x-death records read by its plugin.
        x_death = {"queue": "orders", "reason": "rejected", "count": 1, "time": "2026-05-28T20:19:00+00:00"}
        message = replace(seeded, headers={**seeded.headers, "x-death": [x_death]})
        await app.push_screen(InspectorScreen("orders.dlq", message, rabbitmq_deaths(message)))
        await pilot.pause()
        shown = screen_text(app)
        for expected in ("last error", "x-tq-reason", "dead-lettered by the broker", "task_type", "rejected"):
            assert expected in shown


async def test_mode_keys_reach_every_screen_and_help_lists_every_binding(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        for key, mode in (("d", "dead_letters"), ("w", "workers"), ("c", "cron"), ("o", "overview")):
            await pilot.press(key)
            assert app.current_mode == mode
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = screen_text(app)
        for _screen, bindings in screens():
            for binding in bindings:
                assert binding.description in help_text  # type: ignore[union-attr]
        await pilot.press("j", "k", "escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_workers_screen_marks_dead_workers(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: app.telemetry is not None)
        await pilot.press("w")
        await pilot.pause()
        status = text_of(app.screen.query_one("#workers-status"))
        assert "5 live" in status and "3 dead" in status  # tqadmin's 2 and 1, the others' 3 and 2
        assert "dramatiq, rq, sidekiq, tqadmin" in status
        await pilot.press("j", "k")


def test_the_latency_table_leaves_out_a_task_type_that_never_ran_such_as_malformed_bodies() -> None:
    from rich.console import Console

    from tqadmin.tui.views import Latency, TaskTypeView, TelemetryView
    from tqadmin.tui.widgets.telemetry import percentiles_table

    ran = TaskTypeView("resize_image", 10, 1, Latency(0.01, 0.02, 0.03), Latency(0.1, 0.2, 0.3))
    never_ran = TaskTypeView("(malformed)", 0, 0, Latency(), Latency())
    table = percentiles_table(TelemetryView(task_types=(ran, never_ran)))
    console = Console(width=120, record=True)
    console.print(table)
    shown = console.export_text()
    assert table.row_count == 1 and "resize_image" in shown and "(malformed)" not in shown


async def test_without_telemetry_the_panel_says_no_workers_reporting(make_app: MakeApp) -> None:
    app = make_app(telemetry=False, cron=False)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        assert "no workers reporting" in text_of(app.screen.query_one("#telemetry-summary"))
        await pilot.press("c")
        assert "no cron state" in text_of(app.screen.query_one("#cron-leader"))


async def test_replaying_a_dead_letter_group_shows_the_dry_run_then_moves_and_audits(
    make_app: MakeApp, fake: SeededAdmin, tmp_path: Path
) -> None:
    app = make_app()
    before_dlq = len(fake.messages["orders.dlq"])
    before_orders = len(fake.messages["orders"])
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("d")
        await settled(pilot, lambda: bool(app.screen.groups))  # type: ignore[attr-defined]
        dlqs = app.screen.query_one("#dlqs", DataTable)
        assert dlqs.coordinate_to_cell_key((0, 0)).row_key.value == "emails.dlq"
        await pilot.press("j", "enter")  # orders.dlq: Enter groups it (moving alone never peeks)
        await settled(pilot, lambda: app.screen.loaded == "orders.dlq")  # type: ignore[attr-defined]
        await settled(pilot, lambda: bool(app.screen.groups))  # type: ignore[attr-defined]
        await pilot.press("tab")  # the groups pane: the action applies to the highlighted group only
        group = app.screen.groups[0]  # type: ignore[attr-defined]
        await pilot.press("R")
        assert isinstance(app.screen, ActionScreen)
        await pilot.press("enter")  # empty target: each message's original queue
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        assert app.screen.plan.matched == group.count  # type: ignore[attr-defined]
        assert len(fake.messages["orders.dlq"]) == before_dlq
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    assert len(fake.messages["orders.dlq"]) == before_dlq - group.count
    assert len(fake.messages["orders"]) == before_orders + group.count
    replayed = fake.messages["orders"][-1]
    assert replayed.headers["x-tq-replays"] == 1
    records = audit_lines(tmp_path)
    assert [r["outcome"] for r in records] == ["dry_run", "ok"]
    assert records[1]["action"] == "replay" and records[1]["count"] == group.count


async def test_move_asks_for_a_target_and_moves_everything(make_app: MakeApp, fake: SeededAdmin) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await select_queue(pilot, "emails")
        count = len(fake.messages["emails"])
        await pilot.press("m", *"reports", "enter")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    assert fake.messages["emails"] == []
    assert len([m for m in fake.messages["reports"] if (m.id or "").startswith("emails")]) == count


async def test_purge_runs_only_after_the_queue_name_is_typed(
    make_app: MakeApp, fake: SeededAdmin, tmp_path: Path
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        assert table_names(app)[0] == "reports"
        await pilot.press("X")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        await pilot.press(*"report", "enter")
        assert isinstance(app.screen, ActionScreen)
        assert ("purge", "reports") not in fake.writes
        app.screen.query_one("#confirm-name", Input).value = ""
        await pilot.press(*"reports", "enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
        assert any("purged" in n for n in notifications(app))
    assert ("purge", "reports") in fake.writes
    assert fake.messages["reports"] == []
    assert audit_lines(tmp_path)[-1]["action"] == "purge"


async def test_escape_in_the_dialog_cancels_before_anything_is_sent(
    make_app: MakeApp, fake: SeededAdmin
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("X")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
    assert fake.writes == []


async def test_export_writes_the_queue_to_a_file_and_leaves_it_in_place(
    make_app: MakeApp, fake: SeededAdmin, tmp_path: Path
) -> None:
    app = make_app()
    target = tmp_path / "reports.jsonl"
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("e")
        app.screen.query_one("#target", Input).value = str(target)
        await pilot.press("enter")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    lines = target.read_text().splitlines()
    assert len(lines) == len(fake.messages["reports"]) > 0
    assert Message.from_json(json.loads(lines[0])).body == fake.messages["reports"][0].body


async def test_export_over_an_existing_file_asks_first_and_writes_a_new_0600_file(
    make_app: MakeApp, fake: SeededAdmin, tmp_path: Path
) -> None:
    app = make_app()
    target = tmp_path / "reports.jsonl"
    target.write_text("keep me\n")
    target.chmod(0o644)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("e")
        app.screen.query_one("#target", Input).value = str(target)
        await pilot.press("enter")
        await settled(pilot)
        assert "exists: Enter again replaces it" in text_of(app.screen.query_one("#plan"))
        assert app.screen.plan is None and target.read_text() == "keep me\n"  # type: ignore[attr-defined]
        app.screen.query_one("#target", Input).disabled = False
        await pilot.press("enter")
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
    assert len(target.read_text().splitlines()) == len(fake.messages["reports"])
    assert target.stat().st_mode & 0o777 == 0o600


async def test_export_to_a_symbolic_link_is_refused_and_writes_nothing(
    make_app: MakeApp, fake: SeededAdmin, tmp_path: Path
) -> None:
    app = make_app()
    victim = tmp_path / "authorized_keys"
    victim.write_text("keep me\n")
    link = tmp_path / "reports.jsonl"
    link.symlink_to(victim)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("e")
        app.screen.query_one("#target", Input).value = str(link)
        await pilot.press("enter", "enter")
        await settled(pilot)
        assert any("symbolic link" in n for n in notifications(app))
        assert app.screen.plan is None  # type: ignore[attr-defined]
    assert victim.read_text() == "keep me\n"
    assert not any(c.startswith("open_transfer") for c in fake.calls)


async def test_a_read_only_profile_refuses_every_write_and_sends_none(
    make_app: MakeApp, fake: SeededAdmin, tmp_path: Path
) -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        for key in ("R", "m", "X"):
            await pilot.press(key)
            assert isinstance(app.screen, OverviewScreen)
        await pilot.press("d")
        await settled(pilot, lambda: bool(app.screen.groups))  # type: ignore[attr-defined]
        await pilot.press("R", "X", "m")
        assert "READ-ONLY" in text_of(app.screen.query_one("#banner"))
        refused = [n for n in notifications(app) if "read-only" in n]
        assert len(refused) == 6
    assert fake.writes == []
    assert not any(c.startswith("open_transfer") for c in fake.calls)
    assert audit_lines(tmp_path) == []


class NoPurgeAdmin(SeededAdmin):
    capabilities: ClassVar[Capabilities] = Capabilities(
        supported=SEEDED_CAPABILITIES.supported - {Operation.PURGE},
        reasons=((Operation.PURGE, "this queue type cannot be purged"),),
    )


async def test_purge_and_export_refuse_a_dead_letter_group_and_say_why(
    make_app: MakeApp, fake: SeededAdmin
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("d")
        await settled(pilot, lambda: bool(app.screen.groups))  # type: ignore[attr-defined]
        await pilot.press("tab", "X", "e")
        assert not isinstance(app.screen, ActionScreen)
        assert sum("whole queue" in n for n in notifications(app)) == 2
    assert fake.writes == []


async def test_node_alarms_show_in_the_banner(make_app: MakeApp, fake: SeededAdmin) -> None:
    fake.alarms = (Alarm("rabbit@node-1", "memory", "memory high watermark reached"),)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: bool(app.poll_state.alarms))
        banner = text_of(app.screen.query_one("#banner"))
        assert "ALARM memory on rabbit@node-1" in banner and "watermark" in banner


async def test_an_action_the_broker_lacks_is_refused_with_its_reason(make_app: MakeApp) -> None:
    admin = NoPurgeAdmin()
    app = make_app(admin=admin)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("X")
        assert isinstance(app.screen, OverviewScreen)
        assert any("cannot be purged" in n for n in notifications(app))
    assert admin.writes == []


@pytest.mark.parametrize(
    "failure",
    [
        Unreachable("cannot reach the management API at 127.0.0.1:15672 (connection refused)"),
        NotAuthorized("the management API refused the credentials (401)"),
        BadResponse("the management API answered 500"),
        BadResponse("the management API sent a body that is not JSON"),
    ],
    ids=["down", "401", "500", "garbage"],
)
async def test_a_failing_broker_keeps_the_last_data_marked_stale_backs_off_and_recovers(
    make_app: MakeApp, fake: SeededAdmin, failure: Exception
) -> None:
    app = make_app(refresh_s=0.5)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: app.poll_state.last_ok is not None)
        known = table_names(app)
        fake.failure = failure  # type: ignore[assignment]
        retries = []
        for _ in range(3):
            app.action_refresh()
            await settled(pilot, lambda n=len(retries): app.poll_state.failures >= n + 1)
            retries.append(app.poll_state.retry_in_s)
        assert retries == sorted(retries) and all(1.0 <= r <= 2 * 1.0 for r in retries)
        banner = text_of(app.screen.query_one("#banner"))
        assert str(failure)[:40] in banner and "stale" in banner
        assert table_names(app) == known
        assert app.screen.query_one(QueueTable).has_class("stale")
        fake.failure = None
        app.action_refresh()
        await settled(pilot, lambda: app.poll_state.error is None)
        assert "live" in text_of(app.screen.query_one("#banner"))
        assert not app.screen.query_one(QueueTable).has_class("stale")


class SlowAdmin(SeededAdmin):
    """Blocks every listing after the first until released, counting the listings in progress."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.running = 0
        self.most = 0

    def list_queues(self) -> QueueListing:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            if len(self.calls) > 0:
                self.gate.wait(10)
            return super().list_queues()
        finally:
            self.running -= 1


async def test_polls_never_overlap_even_when_the_broker_is_slow(make_app: MakeApp) -> None:
    admin = SlowAdmin()
    app = make_app(admin=admin, warm=0)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: app.poll_state.last_ok is not None)
        for _ in range(5):
            app.action_refresh()
            await pilot.pause()
        assert admin.running == 1
        await pilot.press("j")  # the UI still answers while the poll blocks
        admin.gate.set()
        await settled(pilot, lambda: admin.running == 0)
    assert admin.most == 1


class HangingAdmin(SeededAdmin):
    """Every listing after the first hangs until released (or two minutes: a loaded machine's first poll
    may take seconds, and the deadline is a timeout past the usual poll); ``running``: one hangs now."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.listed = 0
        self.running = False

    def list_queues(self) -> QueueListing:
        self.running = True
        try:
            if self.listed:
                self.gate.wait(120)
            self.listed += 1
            return super().list_queues()
        finally:
            self.running = False


async def test_a_poll_that_hangs_past_its_deadline_marks_the_board_stale_before_it_ends(
    make_app: MakeApp,
) -> None:
    admin = HangingAdmin()
    app = make_app(admin=admin, warm=0, refresh_s=0.5)
    app.deadline.timeout_s = 0.5  # the profile's --timeout
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(1200):  # real time, bounded (settled() would wait for the hanging poll to end)
            if app.poll_state.last_ok is not None and app.poll_state.no_answer is not None:
                break  # polled once, and the timer marked the next poll, which hangs
            await pilot.pause(0.1)
        assert admin.running, "the poll still hangs"
        banner = text_of(app.screen.query_one("#banner"))
        assert "no answer in" in banner and "(stale)" in banner
        assert app.screen.query_one(QueueTable).has_class("stale")
        admin.gate.set()
        await settled(pilot, lambda: not admin.running and app.poll_state.no_answer is None)
        assert not app.screen.query_one(QueueTable).has_class("stale")


async def test_hostile_queue_names_and_headers_are_shown_literally(make_app: MakeApp) -> None:
    hostile = "[bold red]x[/]\x1b[31m"
    admin = SeededAdmin(queues=[hostile])
    app = make_app(admin=admin)  # its warm polls drift the backlog: the message comes after
    admin.broker.purge(hostile)
    error = {"x-tq-error": "[red]boom\x1b[2J"}
    admin.broker.publish([(hostile, Message(b'{"task_type": "[blink]t[/]"}', headers=error, id="[i]d"))])
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        table = app.screen.query_one(QueueTable)
        lines = [row_text(app.board.stats[n], app.board, app.settings.thresholds) for n in table.order]
        assert any(line.plain.startswith("[bold red]x[/] ") for line in lines)
        assert not any("\x1b" in line.plain for line in lines)
        assert "[bold&#160;red]x[/]" in app.export_screenshot()  # drawn as typed, not as red text
        await select_queue(pilot, hostile, needle="")
        await pilot.press("enter")
        await settled(pilot, lambda: bool(getattr(app.screen, "peeked", ())))
        await pilot.press("enter")
        shown = screen_text(app)
        assert "[red]boom" in shown and "[i]d" in shown and "\x1b" not in shown


async def test_the_profile_switcher_marks_read_only_and_production_and_switches(
    tmp_path: Path, fake: SeededAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[profiles.staging]\nbroker = "amqp://u:secret@staging:5672/"\n'
        '[profiles.prod]\nbroker = "amqp://u:secret@prod:5672/"\nread_only = true\nproduction = true\n'
    )
    env = {
        "TQADMIN_CONFIG": str(config),
        "TQADMIN_PROFILE": "staging",
        "TQADMIN_AUDIT_LOG": str(tmp_path / "a"),
    }
    app = TqadminApp(admin_factory=lambda _s: fake, environ=env, refresh_s=3600, telemetry=None, cron=None)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        assert app.settings.profile == "staging"
        await pilot.press("P")
        assert isinstance(app.screen, ProfilesScreen)
        listed = " ".join(str(o.prompt) for o in app.screen.query_one("OptionList")._options)
        assert "PRODUCTION" in listed and "read-only" in listed and "secret" not in listed
        await pilot.press("j", "enter")
        await settled(pilot, lambda: app.settings.profile == "prod" and app.poll_state.last_ok is not None)
        banner = text_of(app.screen.query_one("#banner"))
        assert "READ-ONLY" in banner and "PRODUCTION" in banner and "secret" not in banner


class GatedTransfer(RecordingTransfer):
    """Hands out one message per fetch and holds every fetch after the first until the gate opens."""

    def __init__(
        self, admin: SeededAdmin, queue: str, session: TransferSession, gate: threading.Event
    ) -> None:
        super().__init__(admin, queue, session)
        self.gate = gate
        self.fetches = 0

    def fetch(self, limit: int) -> Sequence[Delivery]:
        self.fetches += 1
        if self.fetches > 1:
            self.gate.wait(10)
        return super().fetch(1)


class GatedAdmin(SeededAdmin):
    """Moves client-side, batch by batch through the gated session (no server-side move in one step)."""

    capabilities: ClassVar[Capabilities] = replace(
        SEEDED_CAPABILITIES, supported=SEEDED_CAPABILITIES.supported - {Operation.SERVER_SIDE_MOVE}
    )

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def open_transfer(self, queue: str) -> TransferSession:
        return GatedTransfer(self, queue, MemoryAdmin.open_transfer(self, queue), self.gate)


async def test_escape_during_a_run_cancels_between_batches_and_reports_what_was_done(
    make_app: MakeApp, tmp_path: Path
) -> None:
    admin = GatedAdmin()
    app = make_app(admin=admin)
    total = len(admin.messages["reports"])
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("m", *"orders", "enter")
        admin.gate.set()  # the dry run reads everything
        await settled(pilot, lambda: app.screen.plan is not None)  # type: ignore[attr-defined]
        admin.gate.clear()
        await pilot.press("enter")
        for _ in range(200):  # the run is held at the gate: wait for its first batch without joining it
            if len(admin.messages["reports"]) == total - 1:
                break
            await pilot.pause(0.02)
        assert len(admin.messages["reports"]) == total - 1
        await pilot.press("escape")
        admin.gate.set()
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
        assert any("cancelled after" in n for n in notifications(app))
    moved = total - len(admin.messages["reports"])
    assert 1 <= moved < total
    assert audit_lines(tmp_path)[-1]["outcome"] == "partial"


async def test_on_a_narrow_terminal_h_and_l_scroll_the_columns_and_their_header_together(
    make_app: MakeApp,
) -> None:
    app = make_app(telemetry=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        header = app.screen.query_one("#queue-header")
        assert text_of(header).startswith("queue")
        await pilot.press("l", "l", "l")
        await pilot.pause()
        shift = int(app.screen.query_one(QueueTable).scroll_x)
        assert shift > 0
        assert text_of(header).startswith(header_text("messages", True).plain[shift : shift + 5])
        await pilot.press("h", "h", "h")
        await pilot.pause()
        assert text_of(header).startswith("queue")


class BrokenTransferAdmin(SeededAdmin):
    def open_transfer(self, queue: str) -> TransferSession:
        raise Unreachable("cannot reach the broker over AMQP at 127.0.0.1:5672 (connection refused)")


async def test_a_broker_lost_before_the_dry_run_closes_the_dialog_with_the_reason(
    make_app: MakeApp, tmp_path: Path
) -> None:
    admin = BrokenTransferAdmin()
    app = make_app(admin=admin)
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot)
        await pilot.press("X")
        await settled(pilot, lambda: not isinstance(app.screen, ActionScreen))
        assert any("connection refused" in n for n in notifications(app))
    assert admin.writes == []
    assert audit_lines(tmp_path) == []


async def test_the_cron_screen_says_which_schedule_is_paused(make_app: MakeApp) -> None:
    from tqadmin.store.pauses.base import Pause, Target

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, lambda: app.cron is not None)
        now = app.clock()
        app.pauses = (
            now,
            [Pause(Target(schedule="nightly-report"), "dw [b]migration[/b]", "alice", now, now + 720)],
        )
        await pilot.press("c")
        await pilot.pause()
        table = app.screen.query_one("#schedules", DataTable)
        rows = {str(table.get_row_at(i)[0]) for i in range(table.row_count)}
        assert "nightly-report paused 12m left: dw [b]migration[/b]" in rows  # its reason shown as written
        assert "thumbnails" in rows
