"""A reader of :class:`~tqadmin.files.sqlite.SQLiteFile` (``Access.READ``) writes nothing in the file or
beside it, whatever state the file is in: another application's (its tables missing read as empty), a WAL
file no process has open (no ``-wal`` and ``-shm`` created), a WAL file a writer is using (its commits seen,
nothing added), a file the reader may not write; and a writer that starts or checkpoints during a read never
makes the read return something torn."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sqlite_files import as_reader, data_folder, foreign_file, state, unchanged, unwritable
from tqadmin.errors import ReadOnly, Unreachable
from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS jobs_name ON jobs (name)",
)


def opened(path: Path, access: Access) -> SQLiteFile:
    return SQLiteFile(
        path, url=f"sqlite:///{path}", what="test file", access=access, schema=SCHEMA, timeout_s=5
    )


def names(file: SQLiteFile) -> list[str]:
    with file.read() as db:
        return [row[0] for row in db.execute("SELECT name FROM jobs ORDER BY id")]


def written(path: Path, *jobs: str) -> SQLiteFile:
    """A writer of ``path`` (WAL, as tqadmin's writers are), left open, having committed ``jobs``."""
    writer = opened(path, Access.CREATE)
    with writer.write() as db:
        db.executemany("INSERT INTO jobs (name) VALUES (?)", [(job,) for job in jobs])
    return writer


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_without_the_readers_tables_reads_as_empty_and_is_left_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "theirs.db"
    foreign_file(db)
    with unchanged(tmp_path):
        assert names(opened(db, Access.READ)) == []
    journal = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "delete", "still in its own journal mode"
    tables = sqlite3.connect(db).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("notes",)]


def test_a_table_created_after_the_reader_opened_is_read_at_the_next_read(tmp_path: Path) -> None:
    db = tmp_path / "tq.db"
    foreign_file(db)
    reader = opened(db, Access.READ)
    assert names(reader) == []
    writer = written(db, "first")
    assert names(reader) == ["first"]
    writer.close()
    assert names(reader) == ["first"]


def test_a_wal_file_no_process_has_open_is_read_without_a_wal_or_shm_created(tmp_path: Path) -> None:
    db = tmp_path / "tq.db"
    written(db, "a", "b").close()
    assert list(state(tmp_path)) == ["tq.db"], "the last writer deleted its -wal and -shm"
    with unchanged(tmp_path):
        assert names(opened(db, Access.READ)) == ["a", "b"]


def test_beside_a_running_writer_the_reader_sees_its_commits_and_changes_no_file(tmp_path: Path) -> None:
    db = tmp_path / "tq.db"
    writer = written(db, "a")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["tq.db", "tq.db-shm", "tq.db-wal"]
    reader = opened(db, Access.READ)
    assert names(reader) == ["a"]
    with writer.write() as conn:
        conn.execute("INSERT INTO jobs (name) VALUES ('b')")
    committed = (digest(db), digest(tmp_path / "tq.db-wal"))
    assert names(reader) == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    assert (
        digest(db),
        digest(tmp_path / "tq.db-wal"),
    ) == committed  # the -shm is shared memory: not compared
    writer.close()


def test_a_writer_that_starts_during_a_read_keeps_its_wal_until_the_read_ends(tmp_path: Path) -> None:
    """The reader holds SQLite's SHARED lock: the writer cannot take the exclusive lock it needs to delete
    its WAL when it closes, so the next read finds the WAL and reads the writer's commit from it."""
    db = tmp_path / "tq.db"
    written(db, "a").close()
    reader = opened(db, Access.READ)
    with reader.read() as conn:
        late = written(db, "b")
        late.close()
        assert (tmp_path / "tq.db-wal").exists()
        assert [row[0] for row in conn.execute("SELECT name FROM jobs ORDER BY id")] == ["a"]
    assert names(reader) == ["a", "b"]


def test_a_checkpoint_into_the_file_during_a_read_is_refused_as_changed_not_returned(tmp_path: Path) -> None:
    db = tmp_path / "tq.db"
    written(db, "a").close()
    reader = opened(db, Access.READ)
    with (
        pytest.raises(Unreachable, match="checkpointed by a writer that started during the read; read again"),
        reader.read() as conn,
    ):
        conn.execute("SELECT name FROM jobs").fetchall()
        late = written(db, *(f"job-{n}" for n in range(100)))
        late.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        late.close()
    assert len(names(reader)) == 101


def test_a_reader_has_no_writing_connection(tmp_path: Path) -> None:
    db = tmp_path / "tq.db"
    written(db, "a").close()
    with unchanged(tmp_path):
        reader = opened(db, Access.READ)
        with pytest.raises(ReadOnly), reader.write():
            pass
        with pytest.raises(ReadOnly):
            reader.connection()


READ_IN_A_PROCESS = """
import sys
from pathlib import Path
from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile
path = Path(sys.argv[1])
file = SQLiteFile(path, url="sqlite:///" + sys.argv[1], what="test file", access=Access.READ, timeout_s=5)
with file.read() as db:
    print(",".join(row[0] for row in db.execute("SELECT name FROM jobs ORDER BY id")))
"""


@pytest.mark.parametrize("writer_running", [False, True], ids=["no writer", "a writer running"])
def test_a_file_the_reader_may_read_but_not_write_is_read(tmp_path: Path, writer_running: bool) -> None:
    db = data_folder(tmp_path) / "tq.db"
    written(db, "a", "b").close()
    with unwritable(db):
        writer = written(db, "c") if writer_running else None  # root, whom the modes do not bind
        before = state(db.parent)
        read = subprocess.run(
            as_reader([sys.executable, "-c", READ_IN_A_PROCESS, str(db)]),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        after = state(db.parent)
        if writer is not None:
            writer.close()
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == (["a,b,c"] if writer_running else ["a,b"])
    assert sorted(after) == sorted(before) and after["tq.db"] == before["tq.db"]
    if not writer_running:
        assert after == before  # with a writer running, its -shm is shared memory readers note reads in
