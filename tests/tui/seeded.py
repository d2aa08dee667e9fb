"""The seeded app and its scenes: the same screens for snapshot tests, ``scripts/screenshots`` and bench.

The app runs on a seeded memory broker (:mod:`tests.tui.seeding`) with a frozen clock. A scene is a way
to build the app plus the keys that bring it to one screen; waiting is bounded by state ("the groups are
loaded"), never by a sleep, so the picture is the same on every machine.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from tests.tui.seeding import (
    FROZEN_NOW,
    LEASE_S,
    URL,
    SeededAdmin,
    SeededCron,
    seeded_celery_events,
    seeded_history,
    seeded_telemetry,
)
from tqadmin.config import Settings, Thresholds
from tqadmin.errors import Unreachable
from tqadmin.plugin.models import Message
from tqadmin.plugin.workers import WorkerReading
from tqadmin.tui.app import TqadminApp

WARM_POLLS = 12
CELERY_ID = "5f1c9a2e-0b7d-4c1e-9d43-7a61c2e0f"  # and a number: the ids of the Celery tasks
SIZE = (140, 45)
PROFILES = """\
default_profile = "staging"

[profiles.local]
broker = "amqp://guest:guest@127.0.0.1:5672/%2F"

[profiles.staging]
broker = "amqp://tq:hunter2@rabbit.staging.internal:5672/jobs"

[profiles.production]
broker = "amqp://tq:hunter2@rabbit.prod.internal:5672/jobs"
read_only = true
production = true

[profiles.production-write]
broker = "amqp://tq-admin:hunter2@rabbit.prod.internal:5672/jobs"
production = true
"""


def seeded_app(
    admin: SeededAdmin | None = None,
    *,
    audit_log: Path = Path("/dev/null"),
    read_only: bool = False,
    warm: int = WARM_POLLS,
    telemetry: bool = True,
    cron: bool = True,
    refresh_s: float = 3600.0,
    config_path: Path | None = None,
    history: bool = False,
) -> TqadminApp:
    """An app on a seeded memory broker with a frozen clock; ``warm`` polls fill the depth sparklines."""
    admin = admin or SeededAdmin()
    settings = Settings(
        profile="seeded",
        broker_url=URL,
        read_only=read_only,
        audit_log=audit_log,
        config_path=config_path,
        thresholds=Thresholds(depth=100, oldest_age_s=600.0, dlq_messages=1),
    )
    source = seeded_telemetry() if telemetry else None
    app = TqadminApp(
        settings=settings,
        admin_factory=lambda _settings: admin,
        telemetry=source,
        cron=SeededCron() if cron else None,
        refresh_s=refresh_s,
        clock=lambda: FROZEN_NOW,
        history=seeded_history(admin, source) if history and source else None,
    )
    for _ in range(warm):
        admin.step()
        app.board.apply(admin.list_queues())
    return app


async def until(pilot: Pilot[Any], condition: Callable[[], bool], tries: int = 200) -> None:
    """Let background work land until ``condition()`` holds (a bounded number of rounds, no sleeps)."""
    for _ in range(tries):
        with contextlib.suppress(WorkerCancelled):  # a poll replaced by the next one (exclusive)
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if condition():
            return
    raise RuntimeError("the seeded app never reached the expected state")


def _live(app: TqadminApp) -> Callable[[], bool]:
    return lambda: (
        app.poll_state.last_ok is not None and (app.telemetry_source is None or app.telemetry is not None)
    )


Steps = Callable[[Pilot[Any]], Awaitable[None]]


@dataclass(frozen=True)
class Scene:
    """How to build the app for one screen and the keys that reach it."""

    name: str
    steps: Steps
    options: dict[str, Any] = field(default_factory=dict)
    admin: Callable[[], SeededAdmin] = SeededAdmin
    size: tuple[int, int] = SIZE

    def build(self, **overrides: Any) -> TqadminApp:
        options = {**self.options, **overrides}
        if options.pop("with_profiles", False):
            path = Path(tempfile.mkdtemp()) / "config.toml"
            path.write_text(PROFILES)
            options["config_path"] = path
        return seeded_app(self.admin(), **options)


async def _overview(pilot: Pilot[Any]) -> None:
    await until(pilot, _live(pilot.app))  # type: ignore[arg-type]


async def _detail(pilot: Pilot[Any]) -> None:
    await _overview(pilot)
    await pilot.press("enter")
    await until(pilot, lambda: bool(getattr(pilot.app.screen, "peeked", ())))


def _inspect(queue: str) -> Steps:
    """The first message of ``queue`` in the inspector."""

    async def steps(pilot: Pilot[Any]) -> None:
        await _overview(pilot)
        await pilot.press("slash", *queue, "enter", "enter")
        await until(pilot, lambda: bool(getattr(pilot.app.screen, "peeked", ())))
        await pilot.press("enter")
        await pilot.pause()

    return steps


async def _inspector(pilot: Pilot[Any]) -> None:
    await _inspect("orders.dlq")(pilot)


async def _dead_letters(pilot: Pilot[Any]) -> None:
    await _overview(pilot)
    await pilot.press("d")
    await until(pilot, lambda: bool(getattr(pilot.app.screen, "groups", ())))


def _press(*keys: str) -> Steps:
    async def steps(pilot: Pilot[Any]) -> None:
        await _overview(pilot)
        await pilot.press(*keys)
        await pilot.pause()

    return steps


async def _history(pilot: Pilot[Any]) -> None:
    """The overview over the last hour of stored history, as a dashboard opened after a restart shows it."""
    app: TqadminApp = pilot.app  # type: ignore[assignment]
    await _overview(pilot)
    await pilot.press("H")
    await until(pilot, lambda: app.span_reading is not None)


async def _history_detail(pilot: Pilot[Any]) -> None:
    await _overview(pilot)
    await pilot.press("enter")
    await until(
        pilot, lambda: "depth, last hour: " in str(pilot.app.screen.query_one("#queue-trend").content)
    )
    await until(pilot, lambda: bool(getattr(pilot.app.screen, "peeked", ())))


async def _purge_confirm(pilot: Pilot[Any]) -> None:
    await _overview(pilot)
    await pilot.press("X")
    await until(pilot, lambda: getattr(pilot.app.screen, "plan", None) is not None)
    await pilot.press(*"rep")


async def _replay_group(pilot: Pilot[Any]) -> None:
    await _dead_letters(pilot)
    await pilot.press("tab", "R", "enter")
    await until(pilot, lambda: getattr(pilot.app.screen, "plan", None) is not None)


async def _broker_down(pilot: Pilot[Any]) -> None:
    app: TqadminApp = pilot.app  # type: ignore[assignment]
    await _overview(pilot)
    admin = app.admin_factory(app.settings)
    assert isinstance(admin, SeededAdmin)
    admin.failure = Unreachable(f"cannot reach the broker at {URL} (connection refused)")
    app.action_refresh()
    await until(pilot, lambda: app.poll_state.error is not None)


def _celery_task(task: str, task_id: str, args: list[Any], kwargs: dict[str, Any]) -> Message:
    """A Celery protocol 2 task message, as its producer sends it."""
    headers = {
        "lang": "py",
        "task": task,
        "id": task_id,
        "root_id": task_id,
        "parent_id": None,
        "group": None,
        "retries": 2,
        "eta": None,
        "expires": None,
        "timelimit": [None, None],
        "argsrepr": repr(tuple(args)),
        "kwargsrepr": repr(kwargs),
        "origin": "gen4242@shop-web-1",
        "ignore_result": False,
    }
    embed = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
    body = json.dumps([args, kwargs, embed]).encode()
    properties = {"content_type": "application/json", "correlation_id": task_id}
    return Message(body=body, headers=headers, id=task_id, properties=properties)


def _celery() -> SeededAdmin:
    """A Celery application's queue and the tasks its workers rejected, beside tqadmin's own queue: the
    memory broker dead-letters them as it does any message, the body and headers as they were."""
    admin = SeededAdmin(queues=["orders", "shop"])
    broker = admin.broker
    broker.purge("shop.dlq")
    waiting = broker.take("shop", broker.figures("shop").ready, LEASE_S)  # the rejected tasks come next
    broker.publish(
        [
            ("shop", _celery_task("shop.tasks.charge", f"{CELERY_ID}001", ["order-1017", 4999], {})),
            ("shop", _celery_task("shop.tasks.resize", f"{CELERY_ID}002", ["cat.png"], {"width": 64})),
        ]
    )
    for delivery in broker.take("shop", 2, LEASE_S):
        broker.forward(delivery, "shop.dlq", delivery.message, 0.0)
    broker.release(waiting)
    return admin


class _WithCeleryEvents(SeededAdmin):
    def framework_workers(self) -> WorkerReading:
        return seeded_celery_events()


def _hostile() -> SeededAdmin:
    return SeededAdmin(queues=["orders", "[bold red]x[/]\x1b[31m", "[link=http://evil]click[/link]"])


SCENES: tuple[Scene, ...] = (
    Scene("overview", _overview),
    Scene("queue-detail", _detail),
    Scene("message-inspector", _inspector),
    Scene("celery-inspector", _inspect("shop.dlq"), admin=_celery),
    Scene("dead-letters", _dead_letters),
    Scene("replay-group-dry-run", _replay_group),
    Scene("purge-confirm", _purge_confirm),
    Scene("workers", _press("w")),
    Scene("cron", _press("c")),
    Scene("help", _press("question_mark")),
    Scene("profiles", _press("P"), {"with_profiles": True}),
    Scene("read-only", _overview, {"read_only": True}),
    Scene("broker-down", _broker_down),
    Scene("history", _history, {"history": True}),
    Scene("history-queue-detail", _history_detail, {"history": True}),
    Scene("hostile-names", _overview, admin=_hostile),
    Scene("frameworks", _overview, admin=_WithCeleryEvents),
    Scene("frameworks-workers", _press("w"), admin=_WithCeleryEvents),
    Scene("no-workers", _overview, {"telemetry": False, "cron": False}),
    # Without the latency charts: plotext places ticks of a chart this small differently from run to run.
    Scene("overview-80x24", _overview, {"telemetry": False}, size=(80, 24)),
)
