"""Fixtures for the dashboard tests: a seeded memory broker and an app on it with a frozen clock."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot

from tests.tui.seeded import seeded_app, until
from tests.tui.seeding import SeededAdmin
from tqadmin.tui.app import TqadminApp


@pytest.fixture
def fake() -> SeededAdmin:
    return SeededAdmin()


@pytest.fixture
def make_app(tmp_path: Path, fake: SeededAdmin) -> Callable[..., TqadminApp]:
    def build(**kwargs: Any) -> TqadminApp:
        kwargs.setdefault("audit_log", tmp_path / "audit.jsonl")
        return seeded_app(kwargs.pop("admin", fake), **kwargs)

    return build


async def settled(pilot: Pilot[Any], condition: Callable[[], bool] | None = None) -> None:
    """Let background polls land; optionally until ``condition()`` holds (bounded, never timed)."""
    await until(pilot, condition or (lambda: True))


@pytest.fixture
def anyio_backend() -> str:
    """Pilot tests are coroutines; anyio's pytest plugin runs them on asyncio."""
    return "asyncio"


def text_of(widget: Any) -> str:
    """What a Static shows, as plain text (rendered through Rich, so tables and syntax count too)."""
    console = Console(width=200, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(widget.content)
    return capture.get()


def screen_text(app: Any) -> str:
    return "\n".join(text_of(w) for w in app.screen.query("Static"))


async def select_queue(pilot: Pilot[Any], queue: str, needle: str | None = None) -> None:
    """Filter the overview by ``needle`` (the queue's name by default; "" for none), then move the cursor
    onto ``queue`` with ``j``, as a user would."""
    from tqadmin.tui.widgets.queue_table import QueueTable

    if needle != "":
        await pilot.press("slash", *(needle or queue), "enter")
    table = pilot.app.screen.query_one(QueueTable)
    for _ in range(table.row_count):
        if table.selected_queue() == queue:
            return
        await pilot.press("j")
    assert table.selected_queue() == queue


def audit_lines(tmp_path: Path) -> list[dict[str, Any]]:
    """The audit records a test's app wrote (``make_app`` puts the log in ``tmp_path``)."""
    path = tmp_path / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def notifications(app: Any) -> list[str]:
    return [n.message for n in app._notifications]
