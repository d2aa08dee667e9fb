"""A dashboard's look at a profile, as an operator takes it: the overview, the first queue's messages (its
detail screen peeks them), the first dead-letter queue's groups, the workers, the cron and the last hour of
history; then it quits. What it saw comes back as a dictionary.

Run as a script (``python tests/tui/read_only_look.py``, the repository on ``PYTHONPATH``) it looks at the
profile its environment configures and prints that dictionary as JSON, so that a test can run the dashboard
as a user that file permissions bind.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from textual.widgets import DataTable

from tests.tui.seeded import until
from tqadmin.tui import TqadminApp

SIZE = (160, 40)


async def look(app: TqadminApp) -> dict[str, Any]:
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: (
                app.poll_state.last_ok is not None
                and (app.telemetry is not None or app.telemetry_error is not None)
                and (app.cron is not None or app.cron_error is not None)
            ),
        )
        seen: dict[str, Any] = {
            "queues": sorted(app.board.stats),
            "workers": [w.id for w in app.telemetry.workers] if app.telemetry else None,
            "schedules": [s.name for s in app.cron.schedules] if app.cron else None,
            "errors": [e for e in (app.poll_state.error, app.telemetry_error, app.cron_error) if e],
        }
        await pilot.press("H")  # the last hour, read from the history
        await until(pilot, lambda: app.span_reading is not None)
        await pilot.press("H", "H", "H")  # back to live
        if app.board.stats:
            await pilot.press("enter")  # the first queue's detail: it peeks on opening
            await until(pilot, lambda: bool(getattr(app.screen, "peeked", ())))
            seen["peeked"] = [m.id for m in app.screen.peeked]  # type: ignore[attr-defined]
            await pilot.press("escape")
        await pilot.press("d")  # the dead-letter queues; Enter groups the first one's messages
        await until(pilot, lambda: bool(app.screen.query("#dlqs")))
        if app.screen.query_one("#dlqs", DataTable).row_count:
            await pilot.press("enter")
            await until(pilot, lambda: bool(getattr(app.screen, "groups", ())))
            seen["dead_letters"] = sum(g.count for g in app.screen.groups)  # type: ignore[attr-defined]
        await pilot.press("w", "c", "o")
        await until(pilot, lambda: app.poll_state.last_ok is not None)
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(look(TqadminApp(environ=dict(os.environ), refresh_s=3600)))))
