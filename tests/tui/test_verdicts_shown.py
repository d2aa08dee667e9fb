"""The dashboard shows each queue's verdict from the read service: a queue whose consumer holds its prefetch
without acking on the real embedded broker turns ``stalled`` in the overview's verdict column, red, named
first with why in the line above the table, and its detail says why; a worker whose heartbeat shows every job
thread stuck is wedged on the workers screen. Screenshots of both are written to the test's directory
(``screenshots/stalled.svg`` and ``screenshots/wedged.svg`` come from them)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import Message
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.store import open_store
from tqadmin.telemetry.progress import BusyThread, Progress
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.widgets.queue_table import QueueTable, row_text

pytestmark = pytest.mark.anyio
SIZE = (170, 30)


@contextmanager
def held(url: str, queue: str) -> Iterator[None]:
    """Five jobs on ``queue`` and a live consumer that takes three and never acks them."""
    transport = plugin_for_url(url).transport(BrokerConfig(url=url))
    transport.declare(queue)
    jobs = [(queue, Message(json.dumps({"task_type": "charge", "id": f"j{n}"}).encode())) for n in range(5)]
    assert transport.publish(jobs).all_confirmed
    consumer = transport.consumer(queue, prefetch=3, lease_s=3600.0)
    thread = threading.Thread(target=consumer.run, args=(lambda _delivery: None,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        consumer.stop()
        consumer.drained()
        thread.join(timeout=30)
        transport.close()


def beat_wedged(url: str, queue: str) -> None:
    """A worker whose one job thread has run the same job for two minutes, its heartbeat fresh."""
    store = open_store(url)
    try:
        now = time.time()
        progress = Progress(1, (BusyThread("j0", "charge", now - 120),), intake_turn_at=now)
        store.beat(WorkerSnapshot("w-stuck", "h", 7, (queue,), now - 300, now, progress=progress), ttl_s=3600)
    finally:
        store.close()


async def waited(pilot: Pilot[Any], condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the dashboard never showed it"
        await pilot.pause(0.2)


async def test_a_stalled_queue_is_named_with_why_and_a_wedged_worker_is_shown(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{isolated_env / 'tq.db'}"
    config = isolated_env / "config.toml"
    config.write_text(
        f'[profiles.h]\nbroker = "{url}"\nstore = "{url}"\nstall_after_s = 2\n'
        "wedged_no_history_s = 30\nwedged_min_s = 1\n"
    )
    monkeypatch.setenv("TQADMIN_CONFIG", str(config))
    with held(url, "orders"):
        beat_wedged(url, "orders")
        app = TqadminApp(profile="h", refresh_s=0.3)
        async with app.run_test(size=SIZE) as pilot:
            await waited(
                pilot, lambda: (v := app.verdicts.get("orders")) is not None and v.verdict == "stalled"
            )
            await pilot.pause(0.5)  # the screen repainted with it
            line = str(app.screen.query_one("#verdicts", Static).content)
            assert line.startswith(" stalled orders: ready 2, 3 held unacked for "), line
            assert line.endswith(", 1 consumer, no ack in 2s") or "no ack" in line, line
            table = app.screen.query_one(QueueTable)
            shown = row_text(
                table.board.stats["orders"], table.board, table.thresholds, table.context("orders")
            )
            assert shown.plain.split()[:2] == ["orders", "stalled"], shown.plain
            assert any("red" in str(span.style) for span in shown.spans)
            app.save_screenshot("stalled.svg", str(tmp_path))

            await pilot.press("enter")  # the queue detail says why
            await pilot.pause(0.5)
            figures = str(app.screen.query_one("#queue-figures", Static).content)
            assert "\n verdict stalled: ready 2, 3 held unacked for " in figures, figures
            await pilot.press("escape")

            await pilot.press("w")
            workers = app.screen.query_one("#workers", DataTable)
            await waited(pilot, lambda: workers.row_count >= 1)
            status = str(app.screen.query_one("#workers-status", Static).content)
            assert "1 wedged (see why)" in status, status
            app.save_screenshot("wedged.svg", str(tmp_path))
