"""SQLite files for the read-only tests, and how to tell that nothing touched them.

- :func:`tqadmin_file`: a file as tqadmin's writers leave it (queues with messages and dead letters, a
  worker's heartbeat, a cron schedule, history), every writer closed: a WAL-mode file whose ``-wal`` and
  ``-shm`` the last writer deleted, the file a reader meets after a deploy or while the service is stopped.
- :func:`foreign_file`: a file holding only another application's table, in SQLite's default rollback-journal
  mode (the reproduction of issue 28: a reader used to create tqadmin's tables in it and switch it to WAL).
- :func:`state` and :func:`unchanged`: every file of the folder and the hash of its bytes, compared before and
  after a block (the database unchanged, no ``-wal``, ``-shm`` or journal created).
- :func:`unwritable` and :func:`as_reader`: a file 0444 in a folder 0555, and a command run as a user those
  modes bind. Tests run as root, which ignores permissions; the command keeps root's user id but drops the
  capabilities that override them (``setpriv --bounding-set -dac_override,-dac_read_search``), so root is
  bound by the modes like any owner: the file is read, never written, and nothing is created beside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.models import HEADER_ERROR, HEADER_REASON, Message, QueueStats
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.store import open_store
from tqadmin.store.factory import open_cron_store, open_history
from tqadmin.telemetry.counters import TaskStats
from tqadmin.telemetry.snapshot import WorkerSnapshot

QUEUE = "orders"
DLQ = "orders.dlq"
SCHEDULE = {
    "name": "nightly",
    "cron": "0 3 * * *",
    "queue": QUEUE,
    "task_type": "report",
    "job": {},
    "splay": 0,
    "misfire_grace": 60,
    "timezone": "UTC",
}
FOREIGN_TABLE = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)"
WITHOUT_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]


def tqadmin_file(path: Path) -> None:
    """Broker, state store, cron and history written in ``path`` by tqadmin's own writers, then closed."""
    url = f"sqlite:///{path}"
    transport = plugin_for_url(url).transport(BrokerConfig(url=url))
    transport.declare(QUEUE)
    for queue, message in [
        (QUEUE, Message(b'{"task_type": "send_email", "id": "j-1"}')),
        (QUEUE, Message(b'{"task_type": "send_email", "id": "j-2"}')),
        (DLQ, Message(b'{"task_type": "send_email", "id": "j-0"}', headers={HEADER_REASON: "failed"})),
        (DLQ, Message(b'{"task_type": "resize", "id": "j-3"}', headers={HEADER_ERROR: "boom"})),
    ]:
        assert transport.publish([(queue, message)]).all_confirmed
    transport.close()
    now = time.time()
    done = TaskStats(done=5)
    done.run.record(0.25, times=5)
    snapshot = WorkerSnapshot(
        "worker-1", "host", 4242, (QUEUE,), now - 60, now, (), {(QUEUE, "send_email"): done}
    )
    store = open_store(url)
    store.beat(snapshot, 3600.0)
    store.close()
    cron = open_cron_store(url)
    cron.register("cron-1", [SCHEDULE])
    cron.arm("nightly", int(now) - 60)
    cron.close()
    history = open_history(url)
    figures = QueueStats(name=QUEUE, messages=2, ready=2, unacked=0, consumers=0)
    history.record_queues("default", now, [figures])
    history.close()
    assert not Path(f"{path}-wal").exists(), "every writer closed: the last one deleted the WAL"


def foreign_file(path: Path) -> None:
    """Another application's database: one table, one row, rollback journal (SQLite's default)."""
    db = sqlite3.connect(path)
    db.execute(FOREIGN_TABLE)
    db.execute("INSERT INTO notes (text) VALUES ('not tqadmin''s')")
    db.commit()
    db.close()


def state(folder: Path) -> dict[str, str]:
    """Each file under ``folder`` by name, with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@contextmanager
def unchanged(folder: Path) -> Iterator[None]:
    """Assert that the block leaves every file under ``folder`` as it was and creates none (:func:`state`)."""
    before = state(folder)
    yield
    assert state(folder) == before


@contextmanager
def unwritable(path: Path) -> Iterator[Path]:
    """``path`` 0444 in its folder 0555 for the block, so that neither can be written by a command run
    :func:`as_reader`; the test is skipped, saying why, only where this machine cannot bind one. The folder
    is made writable again after (the test's temporary folder is removed)."""
    reason = permissions_bind()
    if reason is not None:
        pytest.skip(reason)
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        yield path
    finally:
        path.parent.chmod(0o755)


def data_folder(tmp_path: Path) -> Path:
    """A folder of the test's own for the database, so that :func:`state` sees only the database's files."""
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def as_reader(command: list[str]) -> list[str]:
    """``command`` run bound by file permissions: as it is for a user other than root; for root, without the
    capabilities that override them (see the module's docstring)."""
    return [*WITHOUT_DAC, *command] if os.geteuid() == 0 else command


def permissions_bind() -> str | None:
    """Why :func:`as_reader` cannot bind a command by file permissions on this machine, or ``None``."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "tests run as root and setpriv (util-linux) is not installed to drop root's override"
    probe = (
        "import os, sys, tempfile\n"
        "fd, name = tempfile.mkstemp()\n"
        "os.close(fd)\n"
        "os.chmod(name, 0o444)\n"
        "try:\n"
        "    open(name, 'a').close()\n"
        "except PermissionError:\n"
        "    sys.exit(0)\n"
        "finally:\n"
        "    os.unlink(name)\n"
        "sys.exit(1)\n"
    )
    try:
        ran = subprocess.run(as_reader([sys.executable, "-c", probe]), timeout=60, check=False)
    except OSError as exc:
        return f"could not run a command bound by file permissions here ({exc})"
    if ran.returncode != 0:
        return (
            "a command run without CAP_DAC_OVERRIDE could still write a 0444 file (a container without it?)"
        )
    return None
