"""A paused queue's row on the dashboard says so, after its trend: ``paused 12m left: <reason>`` for the whole
queue, ``<task type> paused ... left: <reason>`` for one task type (read from the profile's state store)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tui.seeded import until
from tqadmin.cli import main
from tqadmin.store.pauses import Pause, Target
from tqadmin.tui import TqadminApp
from tqadmin.tui.model import paused_labels
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


async def test_a_paused_row_says_so(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["publish", "--queue", "orders", "--job", '{"task_type": "charge"}']) == 0
    assert (
        main(["pause", "orders", "--task-type", "charge", "--for", "12m", "--reason", "psp down", "--yes"])
        == 0
    )
    capsys.readouterr()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    app = TqadminApp(environ={**env, "HOME": str(isolated_env)}, refresh_s=3600)
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, lambda: "orders" in app.board.stats and bool(app.pauses[1]))
        table = app.screen.query_one(QueueTable)
        label = table.paused["orders"]
        assert label.startswith("charge paused ") and label.endswith(" left: psp down")
        line = row_text(app.board.stats["orders"], app.board, app.settings.thresholds, paused=label)
        assert line.plain.rstrip().endswith("  " + label)
