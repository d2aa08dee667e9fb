"""A read-only dashboard writes nothing: after it looked at everything (the overview, a queue's messages, the
dead letters' groups, the workers, the cron, the last hour of history), the SQLite file is byte for byte as
it was and nothing was created beside it, be it tqadmin's own file, another application's (which shows
empty), or one the user may read but not write (the dashboard run as such a user, in a process of its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlite_files import (
    DLQ,
    QUEUE,
    as_reader,
    foreign_file,
    made_read_only,
    permissions_bind,
    state,
    tqadmin_file,
    writable_again,
)

from tests.tui.read_only_look import look
from tqadmin.tui import TqadminApp

pytestmark = pytest.mark.anyio
LOOK = Path(__file__).with_name("read_only_look.py")


def read_only_profile(home: Path, db: Path) -> dict[str, str]:
    """A user's environment: the broker and the store on ``db``, read-only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TQADMIN_", "XDG_"))}
    url = f"sqlite:///{db}"
    return {
        **env,
        "HOME": str(home),
        "TQADMIN_AUDIT_LOG": str(home / "audit.jsonl"),
        "TQADMIN_BROKER_URL": url,
        "TQADMIN_STORE_URL": url,
        "TQADMIN_READ_ONLY": "1",
    }


def what_a_look_at_tqadmin_file_shows(seen: dict[str, object]) -> None:
    assert seen["errors"] == []
    assert seen["queues"] == [QUEUE, DLQ]
    assert seen["workers"] == ["worker-1"]
    assert seen["schedules"] == ["nightly"]
    assert seen["peeked"] == ["j-1", "j-2"]
    assert seen["dead_letters"] == 2


async def test_a_read_only_dashboard_shows_a_tqadmin_file_and_leaves_it_byte_for_byte(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "tq.db"
    tqadmin_file(db)
    before = state(folder)
    seen = await look(TqadminApp(environ=read_only_profile(tmp_path, db), refresh_s=3600))
    what_a_look_at_tqadmin_file_shows(seen)
    assert state(folder) == before


async def test_a_read_only_dashboard_shows_another_applications_file_empty_and_changes_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "theirs.db"
    foreign_file(db)
    before = state(folder)
    seen = await look(TqadminApp(environ=read_only_profile(tmp_path, db), refresh_s=3600))
    assert seen == {"queues": [], "workers": [], "schedules": [], "errors": []}
    assert state(folder) == before


def test_a_dashboard_run_by_a_user_who_may_not_write_the_file_shows_it(tmp_path: Path) -> None:
    reason = permissions_bind()
    if reason is not None:
        pytest.skip(reason)
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "tq.db"
    tqadmin_file(db)
    made_read_only(db)
    before = state(folder)
    try:
        root = Path(__file__).resolve().parents[2]
        shown = subprocess.run(
            as_reader([sys.executable, str(LOOK)]),
            env={**read_only_profile(tmp_path, db), "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert shown.returncode == 0, shown.stderr
        what_a_look_at_tqadmin_file_shows(json.loads(shown.stdout.splitlines()[-1]))
        assert state(folder) == before
    finally:
        writable_again(db)
