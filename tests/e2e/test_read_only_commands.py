"""Read-only is read-only on disk: every read command of a ``--read-only`` profile, run through the real CLI,
leaves the SQLite file byte for byte as it was and creates nothing beside it (no ``-wal``, ``-shm`` or
journal), whether the file is tqadmin's own (WAL mode, no writer running), another application's (rollback
journal, none of tqadmin's tables: everything reads as empty), or one the user may read but not write (0444
in a folder 0555); and it takes no write lock, so a writer holding one stops no read.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fresh_home import environment

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

READS = [["queues"], ["workers"], ["stats"], ["schedules"], ["peek", QUEUE], ["dead-letters", DLQ]]
Document = dict[str, list[dict[str, object]]]
SHOWN: dict[str, Callable[[Document], bool]] = {  # what each read shows of sqlite_files.tqadmin_file
    "queues": lambda doc: {q["name"] for q in doc["queues"]} >= {QUEUE, DLQ},
    "workers": lambda doc: [w["id"] for w in doc["workers"]] == ["worker-1"],
    "stats": lambda doc: "throughput" in doc,
    "schedules": lambda doc: [s["name"] for s in doc["schedules"]] == ["nightly"],
    "peek": lambda doc: len(doc["messages"]) == 2,
    "dead-letters": lambda doc: sum(int(str(g["count"])) for g in doc["groups"]) == 2,
}


def run(home: Path, db: Path, *command: str, bound: bool = False) -> subprocess.CompletedProcess[str]:
    """``tqadmin --read-only --json COMMAND`` on ``db``; ``bound``: as a user the file's modes bind."""
    url = f"sqlite:///{db}"
    argv = [sys.executable, "-m", "tqadmin.cli", "--read-only", "--json", "--timeout", "3"]
    argv += ["--broker", url, "--store", url, *command]
    return subprocess.run(
        as_reader(argv) if bound else argv,
        env=environment(home, TQADMIN_AUDIT_LOG=str(home / "audit.jsonl")),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def shows_the_file(result: subprocess.CompletedProcess[str], command: str) -> None:
    assert result.returncode == 0, result.stderr
    assert SHOWN[command](json.loads(result.stdout)), result.stdout


@pytest.fixture
def tq_db(tmp_path: Path) -> Path:
    db = data_folder(tmp_path) / "tq.db"
    tqadmin_file(db)
    return db


@pytest.fixture
def unwritable_db(tq_db: Path) -> Iterator[Path]:
    with unwritable(tq_db):
        yield tq_db


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_read_only_read_of_a_tqadmin_file_shows_it_and_leaves_it_byte_for_byte(
    tmp_path: Path, tq_db: Path, command: list[str]
) -> None:
    with unchanged(tq_db.parent):
        shows_the_file(run(tmp_path, tq_db, *command), command[0])


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_read_only_read_takes_no_write_lock_so_a_writer_holding_it_stops_no_read(
    tmp_path: Path, tq_db: Path, command: list[str]
) -> None:
    writer = sqlite3.connect(tq_db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the file's write lock, held for longer than the read's --timeout
    writer.execute("UPDATE tqb_clock SET now_ms = now_ms")
    try:
        shows_the_file(run(tmp_path, tq_db, *command), command[0])
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_read_only_read_of_another_applications_file_finds_nothing_and_changes_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    db = data_folder(tmp_path) / "theirs.db"
    foreign_file(db)
    with unchanged(db.parent):
        result = run(tmp_path, db, *command)
    if command[0] in ("peek", "dead-letters"):
        assert result.returncode == 4, result.stderr  # no such queue: said, nothing created for it
        assert f"no queue {command[1]!r}" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout).get(command[0], []) == []


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_file_the_user_may_read_but_not_write_is_read(
    tmp_path: Path, unwritable_db: Path, command: list[str]
) -> None:
    with unchanged(unwritable_db.parent):
        shows_the_file(run(tmp_path, unwritable_db, *command, bound=True), command[0])


def test_without_read_only_a_write_is_refused_by_the_file_modes_naming_the_file(
    tmp_path: Path, unwritable_db: Path
) -> None:
    """A read needs no write permission, so only a write meets the modes: purge says the file is not
    writable."""
    url = f"sqlite:///{unwritable_db}"
    argv = [sys.executable, "-m", "tqadmin.cli", "--broker", url, "--store", url, "purge", QUEUE, "--yes"]
    result = subprocess.run(
        as_reader(argv),
        env=environment(tmp_path, TQADMIN_AUDIT_LOG=str(tmp_path / "audit.jsonl")),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "SQLite broker" in result.stderr and "not writable" in result.stderr
