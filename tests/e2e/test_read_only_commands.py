"""Read-only is read-only on disk: every read command of a ``--read-only`` profile, run through the real CLI,
leaves the SQLite file byte for byte as it was and creates nothing beside it (no ``-wal``, ``-shm`` or
journal), whether the file is tqadmin's own (WAL mode, no writer running), another application's (rollback
journal, none of tqadmin's tables: everything reads as empty), or one the user may read but not write (0444
in a folder 0555).
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

READS = [["queues"], ["workers"], ["stats"], ["schedules"], ["peek", QUEUE], ["dead-letters", DLQ]]


def shown(command: str) -> Callable[[dict[str, object]], bool]:
    """What each read shows of :func:`sqlite_files.tqadmin_file` (``--json``)."""
    checks: dict[str, Callable[[dict[str, object]], bool]] = {
        "queues": lambda doc: {q["name"] for q in doc["queues"]} >= {QUEUE, DLQ},  # type: ignore[attr-defined]
        "workers": lambda doc: [w["id"] for w in doc["workers"]] == ["worker-1"],  # type: ignore[attr-defined]
        "stats": lambda doc: "throughput" in doc,
        "schedules": lambda doc: [s["name"] for s in doc["schedules"]] == ["nightly"],  # type: ignore[attr-defined]
        "peek": lambda doc: len(doc["messages"]) == 2,  # type: ignore[arg-type]
        "dead-letters": lambda doc: sum(g["count"] for g in doc["groups"]) == 2,  # type: ignore[attr-defined]
    }
    return checks[command]


def run(home: Path, db: Path, command: list[str], *, bound: bool = False) -> subprocess.CompletedProcess[str]:
    url = f"sqlite:///{db}"
    argv = [sys.executable, "-m", "tqadmin.cli", "--read-only", "--json", "--broker", url, "--store", url]
    argv += ["--timeout", "3"]
    return subprocess.run(
        as_reader([*argv, *command]) if bound else [*argv, *command],
        env=environment(home, TQADMIN_AUDIT_LOG=str(home / "audit.jsonl")),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "data"
    made.mkdir()
    return made


@pytest.fixture
def unwritable(folder: Path) -> Iterator[Path]:
    """A tqadmin file 0444 in its folder 0555; skipped only where no command can be bound by them."""
    reason = permissions_bind()
    if reason is not None:
        pytest.skip(reason)
    db = folder / "tq.db"
    tqadmin_file(db)
    made_read_only(db)
    yield db
    writable_again(db)


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_read_only_read_of_a_tqadmin_file_shows_it_and_leaves_it_byte_for_byte(
    tmp_path: Path, folder: Path, command: list[str]
) -> None:
    db = folder / "tq.db"
    tqadmin_file(db)
    before = state(folder)
    result = run(tmp_path, db, command)
    assert result.returncode == 0, result.stderr
    assert shown(command[0])(json.loads(result.stdout)), result.stdout
    assert state(folder) == before


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_read_only_read_takes_no_write_lock_so_a_writer_holding_it_stops_no_read(
    tmp_path: Path, folder: Path, command: list[str]
) -> None:
    db = folder / "tq.db"
    tqadmin_file(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # the file's write lock, held for longer than the read's --timeout
    writer.execute("UPDATE tqb_clock SET now_ms = now_ms")
    try:
        result = run(tmp_path, db, command)
        assert result.returncode == 0, result.stderr
        assert shown(command[0])(json.loads(result.stdout)), result.stdout
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_read_only_read_of_another_applications_file_finds_nothing_and_changes_nothing(
    tmp_path: Path, folder: Path, command: list[str]
) -> None:
    db = folder / "theirs.db"
    foreign_file(db)
    before = state(folder)
    result = run(tmp_path, db, command)
    if command[0] in ("peek", "dead-letters"):
        assert result.returncode == 4, result.stderr  # no such queue: said, nothing created for it
        assert f"no queue {command[1]!r}" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        document = json.loads(result.stdout)
        assert document.get(command[0], []) == []
    assert state(folder) == before
    assert [name for name in before] == ["theirs.db"]


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
def test_a_file_the_user_may_read_but_not_write_is_read(
    tmp_path: Path, unwritable: Path, command: list[str]
) -> None:
    before = state(unwritable.parent)
    result = run(tmp_path, unwritable, command, bound=True)
    assert result.returncode == 0, result.stderr
    assert shown(command[0])(json.loads(result.stdout)), result.stdout
    assert state(unwritable.parent) == before


def test_without_read_only_the_writes_are_still_refused_by_the_file_modes_not_by_a_read(
    tmp_path: Path, unwritable: Path
) -> None:
    """A read needs no write permission, so a refusal can only come from a write: purge names the file."""
    url = f"sqlite:///{unwritable}"
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
