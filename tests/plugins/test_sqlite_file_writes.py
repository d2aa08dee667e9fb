"""A write transaction of :class:`~tqadmin.files.sqlite.SQLiteFile` that fails at its COMMIT is rolled back
like one that fails before it: the connection is out of its transaction and the file's write lock is free,
so neither this process's next write nor another process's waits on a transaction nobody will finish.

The failing COMMIT is SQLite's own: a deferred foreign key still violated when the transaction ends makes
``COMMIT`` fail and leaves the transaction open (https://sqlite.org/foreignkeys.html, section 4.2).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tqadmin.errors import BadResponse
from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile

PARENT = "CREATE TABLE parent (id INTEGER PRIMARY KEY)"
CHILD = "CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED, note TEXT)"


def opened(path: Path) -> SQLiteFile:
    return SQLiteFile(path, url=f"sqlite:///{path}", what="test file", timeout_s=0.5, access=Access.CREATE)


def test_a_commit_that_fails_is_rolled_back_and_frees_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "file.db"
    file = opened(path)
    with file.write() as db:
        db.execute(PARENT)
        db.execute(CHILD)
    file.connection().execute("PRAGMA foreign_keys = ON")  # per connection, outside a transaction

    with pytest.raises(BadResponse, match="FOREIGN KEY"), file.write() as db:
        db.execute("INSERT INTO child VALUES (42, 'orphan')")  # no parent 42: refused at COMMIT

    assert not file.connection().in_transaction
    other = opened(path)  # another writer of the file (its own connection) gets the lock at once
    with other.write() as db:
        db.execute("INSERT INTO child VALUES (NULL, 'from another connection')")
    with file.write() as db:  # and this one writes again on the same connection
        db.execute("INSERT INTO child VALUES (NULL, 'again')")
    notes = sqlite3.connect(path).execute("SELECT note FROM child ORDER BY rowid").fetchall()
    assert notes == [("from another connection",), ("again",)]  # the orphan was rolled back
    file.close()
    other.close()
