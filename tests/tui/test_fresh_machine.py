"""The dashboard on a fresh machine: nothing configured and the embedded file not created yet is the normal
state, not an outage. The board is live and empty, the banner says where the file will be and what creates
it, and the dashboard (a reader) leaves no file behind; a file the user named that does not exist is an
error on the banner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tui.conftest import text_of
from tests.tui.seeded import until
from tqadmin.tui import TqadminApp
from tqadmin.tui.widgets.banner import Banner

pytestmark = pytest.mark.anyio
SIZE = (160, 40)


def fresh_home(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    return {**env, "HOME": str(home), "TQADMIN_AUDIT_LOG": str(home / "audit.jsonl"), **extra}


async def test_a_fresh_machine_shows_an_empty_live_board_saying_where_the_file_will_be(
    tmp_path: Path,
) -> None:
    app = TqadminApp(environ=fresh_home(tmp_path), refresh_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.poll_state.last_ok is not None and app.telemetry is not None)
        assert app.poll_state.error is None and app.board.stats == {}
        assert app.telemetry_error is None and app.cron_error is None
        banner = text_of(app.screen.query_one(Banner))
        assert "live" in banner
        assert "tqadmin.db does not exist" in banner and "tqadmin demo" in banner
    assert list(tmp_path.iterdir()) == []


async def test_a_named_file_that_does_not_exist_is_an_error_on_the_banner(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    app = TqadminApp(environ=fresh_home(tmp_path, TQADMIN_BROKER_URL=f"sqlite:///{typo}"), refresh_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.poll_state.error is not None)
        assert f"no SQLite database at {typo}" in (app.poll_state.error or "")
    assert not typo.exists()
