"""History on the dashboard: what one dashboard recorded, the next one opened after a restart draws at once
(``H`` for the overview's span, the queue detail's hour without a key), and a read-only profile writes
nothing, anywhere."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.tui.conftest import notifications, screen_text, select_queue, text_of
from tests.tui.seeded import until
from tests.tui.seeding import SeededAdmin
from tqadmin.config import Overrides, Settings, resolve
from tqadmin.files.access import Access
from tqadmin.reading.recording import SPANS
from tqadmin.store import open_store
from tqadmin.store.factory import open_history
from tqadmin.store.history.base import TIERS
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import WorkerSnapshot
from tqadmin.tui.app import TqadminApp

pytestmark = pytest.mark.anyio
T0 = 1_780_000_200.0  # in the past: the store refuses a recorder's clock ahead of its own
STARTED = time.time() - 600  # the worker process's start, the same at every heartbeat


class StepClock:
    """A clock six seconds later at every look: each poll of a fast dashboard is a point of history."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        self.now += 6.0
        return self.now


def beat(settings: Settings, done: int) -> None:
    """A worker of the pipeline reports ``done`` runs of ``send_email`` so far."""
    stats = TaskStats(done=done)
    stats.run.record(0.25, times=done)
    snapshot = WorkerSnapshot(
        "worker-1", "host", 4242, ("orders",), STARTED, time.time(), (), {("orders", "send_email"): stats}
    )
    store = open_store(settings.store_url)
    store.beat(snapshot, 60.0)
    store.close()


def recorded(settings: Settings, queue: str = "orders") -> int:
    history = open_history(settings.store_url, access=Access.READ)
    try:
        return len(history.queue_history("default", queue, TIERS[0]))
    finally:
        history.close()


async def run_dashboard(settings: Settings, clock: StepClock, points: int) -> None:
    """A dashboard polling fast until ``points`` more points of ``orders`` are in the history, then closed."""
    app = TqadminApp(
        settings=settings, admin_factory=lambda _s: SeededAdmin(), cron=None, refresh_s=0.01, clock=clock
    )
    target = recorded(settings) + points
    async with app.run_test() as pilot:
        await until(pilot, lambda: recorded(settings) >= target)


async def test_a_dashboard_opened_after_a_restart_draws_the_hour_the_last_one_recorded(
    isolated_env: Path,
) -> None:
    settings = resolve(Overrides())
    clock = StepClock(T0)
    beat(settings, done=100)
    await run_dashboard(settings, clock, points=4)
    beat(settings, done=400)  # the worker ran 300 more while nobody looked
    clock.now += 600  # ten minutes with no dashboard: a gap
    await run_dashboard(settings, clock, points=4)

    later = clock.now + 60
    app = TqadminApp(
        settings=settings,
        admin_factory=lambda _s: SeededAdmin(),
        cron=None,
        refresh_s=3600,
        clock=lambda: later,
    )
    async with app.run_test(size=(140, 45)) as pilot:
        await until(pilot, lambda: app.telemetry is not None and app.poll_state.last_ok is not None)
        await pilot.press("H")
        await until(pilot, lambda: app.span_reading is not None)
        assert app.span is SPANS[1]
        trend = app.board.trend("orders")
        assert any(cell is not None for cell in trend) and None in trend  # drawn, with its gaps
        status = text_of(app.screen.query_one("#table-status"))
        assert "last hour, from history" in status
        assert "depth 1h" in text_of(app.screen.query_one("#queue-header"))
        view = app.shown_telemetry()
        assert view is not None and view.window_s == 3600
        [send_email] = view.task_types
        assert send_email.done == 300  # the activity across both dashboards' points, not a window of one

        await select_queue(pilot, "orders")
        await pilot.press("enter")
        await until(pilot, lambda: "depth, last hour" in screen_text(app))
        line = text_of(app.screen.query_one("#queue-trend"))
        assert "·" in line and "max" in line

        await pilot.press("escape", "H", "H", "H")  # day, week, back to live
        await until(pilot, lambda: app.span is SPANS[0])
        assert app.board.trend("orders") == app.board.history["orders"]
        assert app.shown_telemetry() is app.telemetry


async def test_a_read_only_dashboard_writes_no_history_and_creates_no_file(isolated_env: Path) -> None:
    settings = resolve(Overrides(read_only=True))
    state = isolated_env / ".local" / "state" / "tqadmin"

    async def look(then: int) -> None:
        admin = SeededAdmin()
        app = TqadminApp(
            settings=settings, admin_factory=lambda _s: admin, cron=None, refresh_s=0.01, clock=StepClock(T0)
        )
        async with app.run_test() as pilot:
            await pilot.press("H")
            await until(
                pilot, lambda: app.span_reading is not None and admin.calls.count("list_queues") >= then
            )
            assert app.recorder is None

    await look(then=5)
    assert not state.exists(), "a reader never creates the embedded file"
    open_store(settings.store_url).close()  # now a worker made it: still nothing is written
    await look(then=5)
    assert recorded(settings) == 0


async def test_without_a_state_store_there_is_no_span_to_choose(isolated_env: Path) -> None:
    app = TqadminApp(
        settings=resolve(Overrides()), admin_factory=lambda _s: SeededAdmin(), telemetry=None, cron=None
    )
    async with app.run_test() as pilot:
        await pilot.press("H")
        await until(pilot, lambda: bool(notifications(app)))
        assert app.span is SPANS[0]
        assert "no history here" in notifications(app)[0]
        assert "depth trend" in text_of(app.screen.query_one("#queue-header"))
