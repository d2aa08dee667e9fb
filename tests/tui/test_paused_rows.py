"""``p`` pauses and resumes from the dashboard (refused in a read-only profile), and a paused queue's row
says so after its trend: ``paused 12m left: <reason>`` for the whole queue, ``<task type> paused ... left:
<reason>`` for one task type (read from the profile's state store)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import Input

from tests.tui.conftest import audit_lines, notifications, select_queue, text_of
from tests.tui.seeded import until
from tests.tui.seeding import seeded_telemetry
from tqadmin.cli import main
from tqadmin.store.pauses.base import Pause, Target
from tqadmin.tui import TqadminApp
from tqadmin.tui.model import paused_labels
from tqadmin.tui.screens.pause import PauseScreen
from tqadmin.tui.widgets.queue_table import QueueTable, row_text

pytestmark = pytest.mark.anyio


def test_the_labels_of_paused_queues() -> None:
    pauses = [
        Pause(Target("orders", "charge"), "psp down", "a", 1000.0, 1000.0 + 720),
        Pause(Target("orders"), "", "a", 1000.0, None),
        Pause(Target("mail"), "smtp", "a", 1000.0, 1030.0),
    ]
    assert paused_labels(pauses, 1000.0) == {
        "orders": "paused until resumed; charge paused 12m left: psp down",
        "mail": "paused 30s left: smtp",
    }


@pytest.mark.parametrize("own_telemetry", [False, True], ids=["store telemetry", "the demo's own telemetry"])
async def test_a_paused_row_says_so(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], own_telemetry: bool
) -> None:
    assert main(["publish", "--queue", "orders", "--job", '{"task_type": "charge"}']) == 0
    assert (
        main(["pause", "orders", "--task-type", "charge", "--for", "12m", "--reason", "psp down", "--yes"])
        == 0
    )
    capsys.readouterr()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    # The demo gives telemetry of its own (its workers only) and asks for the profile's pauses all the same.
    environ = {**env, "HOME": str(isolated_env)}
    if own_telemetry:
        app = TqadminApp(environ=environ, refresh_s=3600, telemetry=seeded_telemetry(), pauses=True)
    else:
        app = TqadminApp(environ=environ, refresh_s=3600)
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, lambda: "orders" in app.board.stats and bool(app.pauses[1]))
        table = app.screen.query_one(QueueTable)
        label = table.paused["orders"]
        assert label.startswith("charge paused ") and label.endswith(" left: psp down")
        line = row_text(app.board.stats["orders"], app.board, app.settings.thresholds, paused=label)
        assert line.plain.rstrip().endswith("  " + label)


def _app(home: Path, **extra: str) -> TqadminApp:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    return TqadminApp(
        environ={**env, "HOME": str(home), "TQADMIN_AUDIT_LOG": str(home / "audit.jsonl"), **extra},
        refresh_s=3600,
    )


async def test_p_pauses_a_task_type_and_resumes_it(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish", "--queue", "orders", "--job", '{"task_type": "charge"}']) == 0
    capsys.readouterr()
    app = _app(isolated_env)
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, lambda: "orders" in app.board.stats)
        await select_queue(pilot, "orders")
        await pilot.press("p")
        assert isinstance(app.screen, PauseScreen)
        await pilot.press("enter")  # no duration: refused in the dialog, nothing written
        assert "30s, 10m, 2h" in text_of(app.screen.query_one("#pause-error"))
        app.screen.query_one("#pause-task-type", Input).value = "charge"
        app.screen.query_one("#pause-for", Input).value = "12m"
        app.screen.query_one("#pause-reason", Input).value = "psp down"
        app.screen.query_one("#pause-for", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, PauseScreen))
        await pilot.press("p")
        app.screen.query_one("#pause-task-type", Input).value = "charge"
        await pilot.click("#resume")
        await until(pilot, lambda: not isinstance(app.screen, PauseScreen))
    records = [r for r in audit_lines(isolated_env) if r["action"] in {"pause", "resume"}]
    assert [(r["action"], r["task_type"], r["via"]) for r in records] == [
        ("pause", "charge", "tui"),
        ("resume", "charge", "tui"),
    ]
    assert records[0]["reason"] == "psp down" and records[0]["until"]


async def test_p_is_refused_in_a_read_only_profile(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["publish", "--queue", "orders", "--job", '{"task_type": "charge"}']) == 0
    capsys.readouterr()
    app = _app(isolated_env, TQADMIN_READ_ONLY="1")
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, lambda: "orders" in app.board.stats)
        await select_queue(pilot, "orders")
        await pilot.press("p")
        assert not isinstance(app.screen, PauseScreen)
        assert any("read-only" in n for n in notifications(app))
    assert [r for r in audit_lines(isolated_env) if r["action"] == "pause"] == []


def test_a_queue_its_own_framework_paused_is_labelled_with_how_that_framework_resumes_it() -> None:
    from tqadmin.frameworks import own_pauses
    from tqadmin.plugin.models import QueueStats

    sidekiq = QueueStats("sidekiq:mail", 3, 3, 0, None, state="paused", read_only="a Sidekiq queue")
    ours = QueueStats("orders", 3, 3, 0, 1, state="paused")  # not another framework's: tqadmin's own pauses
    running = QueueStats("sidekiq:web", 1, 1, 0, None, read_only="a Sidekiq queue")
    assert own_pauses.labels([sidekiq, ours, running]) == {
        "sidekiq:mail": "paused by its framework (Sidekiq's own pause:"
        " Sidekiq::Queue.new(NAME).unpause! or its Web UI resumes it)"
    }


def test_a_breakers_pause_reads_as_the_breakers_on_its_row() -> None:
    reason = "breaker: 5 failures in a row; last: ConnectionError: PSP answers 503"
    pause = Pause(Target("orders", "charge"), reason, "breaker@web-1:4242", 1000.0, 1000.0 + 120)
    assert paused_labels([pause], 1000.0) == {"orders": f"charge paused 2m00s left: {reason}"}
