"""The seeded app: the same screen for snapshot tests, ``scripts/screenshots`` and the benchmark."""

from __future__ import annotations

from pathlib import Path

from tqadmin.config import Settings, Thresholds
from tqadmin.tui.app import TqadminApp
from tqadmin.tui.fake import FROZEN_NOW, FakeAdmin, FakeCron, FakeTelemetry

WARM_POLLS = 12


def seeded_app(
    fake: FakeAdmin | None = None,
    *,
    audit_log: Path = Path("/dev/null"),
    read_only: bool = False,
    warm: int = WARM_POLLS,
    telemetry: bool = True,
    cron: bool = True,
    refresh_s: float = 3600.0,
) -> TqadminApp:
    """An app on a seeded fake broker with a frozen clock; ``warm`` polls fill the depth sparklines."""
    admin = fake or FakeAdmin()
    settings = Settings(
        profile="seeded",
        broker_url="fake://seeded",
        read_only=read_only,
        audit_log=audit_log,
        thresholds=Thresholds(depth=100, oldest_age_s=600.0, dlq_messages=1),
    )
    app = TqadminApp(
        settings=settings,
        admin_factory=lambda _settings: admin,
        telemetry=FakeTelemetry() if telemetry else None,
        cron=FakeCron() if cron else None,
        refresh_s=refresh_s,
        clock=lambda: FROZEN_NOW,
    )
    for _ in range(warm):
        admin.step()
        app.board.apply(admin.list_queues())
    return app
