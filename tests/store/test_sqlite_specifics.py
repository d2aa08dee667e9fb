"""What only the SQLite store does: effects are SQL in the completion transaction, paths come from the URL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tqadmin.errors import ConfigError
from tqadmin.store import open_store


def test_a_failing_sql_effect_is_the_tasks_error_and_rolls_back_the_mark(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}")
    claim = store.claim("job-1", "worker-a", 30)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        store.complete(claim, lambda tx: tx.execute("INSERT INTO missing_table VALUES (1)"))
    assert store.done_among(["job-1"]) == set()
    assert store.complete(claim)
    store.close()


def test_an_sqlite_store_needs_a_file_path() -> None:
    with pytest.raises(ConfigError, match="needs a file"):
        open_store("sqlite:///:memory:")
    with pytest.raises(ConfigError, match="needs a file"):
        open_store("sqlite://")
