"""The embedded SQLite file as a new user meets it, through the real CLI in a temporary HOME.

It holds every message body and job state, so it is private like the exports and the audit log: the file,
its ``-wal`` and ``-shm`` companions 0600, the folder created for it 0700. Only commands that write create
it. A ``sqlite:///PATH`` that the user named and that does not exist is a typo until proven otherwise: exit 3
naming the path, and nothing left behind. The default file not existing yet is a fresh machine: the reads
show empty results and one line saying where the file will be and what creates it.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fresh_home import environment, tqadmin

TASKS = """
from tqadmin import task

@task("noop")
def noop(ctx, job):
    pass
"""
JOB = json.dumps({"task_type": "noop", "id": "j-1"})

pytestmark = pytest.mark.usefixtures("usual_umask")  # 022: a plain create would give 0644, 0755


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def default_file(home: Path) -> Path:
    return home / ".local" / "state" / "tqadmin" / "tqadmin.db"


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_publish_creates_the_file_0600_in_a_folder_0700(tmp_path: Path) -> None:
    published = tqadmin(tmp_path, "publish", "--queue", "q", "--job", JOB)
    assert published.returncode == 0, published.stderr
    db = default_file(tmp_path)
    assert mode(db.parent) == 0o700
    assert mode(db) == 0o600
    for folder in (tmp_path / ".local", tmp_path / ".local" / "state"):  # created on the way, as private
        assert mode(folder) == 0o700


def test_a_worker_creates_the_file_and_its_wal_and_shm_0600(tmp_path: Path) -> None:
    (tmp_path / "tasks.py").write_text(TASKS)
    command = [sys.executable, "-m", "tqadmin.cli", "worker", "--queue", "q", "--tasks", "tasks.py"]
    worker = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    db = default_file(tmp_path)
    companions = [db.with_name("tqadmin.db-wal"), db.with_name("tqadmin.db-shm")]
    try:
        deadline = time.monotonic() + 30
        while not all(p.exists() for p in companions) and worker.poll() is None:
            assert time.monotonic() < deadline, "the worker never opened its database"
            time.sleep(0.05)
        assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
        assert mode(db.parent) == 0o700
        assert [mode(p) for p in (db, *companions)] == [0o600, 0o600, 0o600]
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=30)


MISSING_BROKER = [["queues"], ["peek", "q"], ["dead-letters", "q.dlq"], ["purge", "q", "--yes"]]
MISSING_STORE = [["workers"], ["stats"], ["schedules"]]


@pytest.mark.parametrize("command", MISSING_BROKER + MISSING_STORE, ids=lambda c: c[0])
def test_a_named_sqlite_file_that_does_not_exist_is_exit_3_naming_it_and_nothing_is_created(
    tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "no-such-dir" / "typo.db"
    option = "--broker" if command in MISSING_BROKER else "--store"
    result = tqadmin(tmp_path, option, f"sqlite:///{typo}", *command)
    assert result.returncode == 3, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"no SQLite database at {typo}" in line
    assert not typo.parent.exists()
    assert not default_file(tmp_path).exists()


@pytest.mark.parametrize("command", [["queues"], ["workers"], ["stats"], ["schedules"]], ids=lambda c: c[0])
def test_on_a_fresh_machine_the_reads_show_nothing_yet_and_say_where_the_file_will_be(
    tmp_path: Path, command: list[str]
) -> None:
    result = tqadmin(tmp_path, *command)
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert str(default_file(tmp_path)) in line
    assert all(word in line for word in ("tqadmin demo", "publish", "worker"))
    as_json = tqadmin(tmp_path, "--json", *command)
    assert as_json.returncode == 0
    document = json.loads(as_json.stdout)
    listed = {"queues": "queues", "workers": "workers", "schedules": "schedules"}.get(command[0])
    if listed:
        assert document[listed] == []
    else:
        assert document["throughput"] == 0
    assert everything_under(tmp_path) == []  # not the file, nor its folder


def test_on_a_fresh_machine_a_schedule_file_is_still_shown(tmp_path: Path) -> None:
    schedule = tmp_path / "cron.toml"
    schedule.write_text('[[schedule]]\nname = "beat"\ncron = "* * * * *"\nqueue = "q"\ntask_type = "t"\n')
    result = tqadmin(tmp_path, "--json", "schedules", "--schedule", str(schedule))
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["schedules"]
    assert row["name"] == "beat" and row["next_fire"]
    assert not default_file(tmp_path).parent.exists()
