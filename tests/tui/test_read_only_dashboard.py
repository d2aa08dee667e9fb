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

from tests.support.sqlite_files import (
    DLQ,
    QUEUE,
    as_reader,
    data_folder,
    foreign_file,
    tqadmin_file,
    unchanged,
    unwritable,
)
from tests.tui.read_only_look import look
from tqadmin.tui import TqadminApp

pytestmark = pytest.mark.anyio
LOOK = Path(__file__).with_name("read_only_look.py")
ROOT = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def tq_db(tmp_path: Path) -> Path:
    db = data_folder(tmp_path) / "tq.db"
    tqadmin_file(db)
    return db


def shows_the_file(seen: dict[str, object]) -> None:
    assert seen == {
        "queues": [QUEUE, DLQ],
        "workers": ["worker-1"],
        "schedules": ["nightly"],
        "errors": [],
        "peeked": ["j-1", "j-2"],
        "dead_letters": 2,
    }


async def test_a_read_only_dashboard_shows_a_tqadmin_file_and_leaves_it_byte_for_byte(
    tmp_path: Path, tq_db: Path
) -> None:
    with unchanged(tq_db.parent):
        shows_the_file(await look(TqadminApp(environ=read_only_profile(tmp_path, tq_db), refresh_s=3600)))


async def test_a_read_only_dashboard_shows_another_applications_file_empty_and_changes_nothing(
    tmp_path: Path,
) -> None:
    db = data_folder(tmp_path) / "theirs.db"
    foreign_file(db)
    with unchanged(db.parent):
        seen = await look(TqadminApp(environ=read_only_profile(tmp_path, db), refresh_s=3600))
    assert seen == {"queues": [], "workers": [], "schedules": [], "errors": []}


def test_a_dashboard_run_by_a_user_who_may_not_write_the_file_shows_it(tmp_path: Path, tq_db: Path) -> None:
    with unwritable(tq_db), unchanged(tq_db.parent):
        shown = subprocess.run(
            as_reader([sys.executable, str(LOOK)]),
            env={**read_only_profile(tmp_path, tq_db), "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert shown.returncode == 0, shown.stderr
    shows_the_file(json.loads(shown.stdout.splitlines()[-1]))
