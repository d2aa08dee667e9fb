"""The pause set in the state store's SQLite file: one row per target, under the store's prefix.

``tq_pauses (ns, target, reason, who, since_ms, until_ms)``, ``until_ms`` NULL for a pause until resumed.
Each write is one ``BEGIN IMMEDIATE`` transaction, so a reap's select and delete are one step and two reapers
never both get the same expiry. Times are the host's clock, which every process sharing the file shares.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.store.pauses.base import Pause, PauseStore, Target, readable, unreadable

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_pauses (ns TEXT NOT NULL, target TEXT NOT NULL, reason TEXT NOT NULL,"
    " who TEXT NOT NULL, since_ms INTEGER NOT NULL, until_ms INTEGER, PRIMARY KEY (ns, target))",
)
_COLUMNS = "target, reason, who, since_ms, until_ms"


class SQLitePauses(PauseStore):
    """:class:`PauseStore` in an SQLite file; a reader's (:attr:`~tqadmin.files.access.Access.READ`) writes
    nothing and reads a file without the table as no pause at all."""

    def __init__(
        self,
        path: Path,
        *,
        url: str = "",
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 10.0,
        access: Access = Access.CREATE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url or f"sqlite:///{path}"
        self.prefix = check_prefix(prefix)
        self._clock = clock
        self._file = SQLiteFile(
            path, url=self.url, what="state store", access=access, schema=SCHEMA, timeout_s=timeout_s
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def now(self) -> float:
        return self._clock()

    def pause(self, target: Target, *, reason: str, who: str, for_s: float | None) -> Pause:
        written = self._write(target, reason, who, for_s, unless=())
        assert written is not None
        return written

    def pause_unless_paused(
        self, target: Target, *, reason: str, who: str, for_s: float | None
    ) -> Pause | None:
        return self._write(target, reason, who, for_s, unless=target.covered_by())

    def _write(
        self, target: Target, reason: str, who: str, for_s: float | None, *, unless: tuple[Target, ...]
    ) -> Pause | None:
        """The pause written, in one transaction with the look at ``unless`` (None: one of them stands)."""
        now = self._now_ms()
        until = None if for_s is None else now + int(for_s * 1000)
        with self._file.write() as db:
            for blocker in unless:
                if db.execute(
                    "SELECT 1 FROM tq_pauses WHERE ns = ? AND target = ?"
                    " AND (until_ms IS NULL OR until_ms > ?)",
                    (self.prefix, blocker.key, now),
                ).fetchone():
                    return None
            db.execute(
                "INSERT INTO tq_pauses (ns, target, reason, who, since_ms, until_ms)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (ns, target) DO UPDATE SET reason = excluded.reason,"
                " who = excluded.who, since_ms = excluded.since_ms, until_ms = excluded.until_ms",
                (self.prefix, target.key, reason, who, now, until),
            )
        return Pause(target, reason, who, now / 1000, None if until is None else until / 1000)

    def resume(self, target: Target) -> Pause | None:
        with self._file.write() as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM tq_pauses WHERE ns = ? AND target = ?",  # noqa: S608 - fixed columns
                (self.prefix, target.key),
            ).fetchone()
            db.execute("DELETE FROM tq_pauses WHERE ns = ? AND target = ?", (self.prefix, target.key))
        return None if row is None else _pause(row)

    def standing(self) -> tuple[float, list[Pause]]:
        now = self._now_ms()
        with self._file.read() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM tq_pauses WHERE ns = ? AND (until_ms IS NULL OR until_ms > ?)"  # noqa: S608
                " ORDER BY since_ms, target",
                (self.prefix, now),
            ).fetchall()
        return now / 1000, readable(_pause, rows)

    def reap(self) -> list[Pause]:
        now = self._now_ms()
        with self._file.read() as db:  # every worker reaps at each heartbeat: no write lock for nothing
            due = db.execute(
                "SELECT 1 FROM tq_pauses WHERE ns = ? AND until_ms <= ? LIMIT 1", (self.prefix, now)
            ).fetchone()
        if due is None:
            return []
        with self._file.write() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM tq_pauses WHERE ns = ? AND until_ms <= ? ORDER BY since_ms",  # noqa: S608
                (self.prefix, now),
            ).fetchall()
            db.execute("DELETE FROM tq_pauses WHERE ns = ? AND until_ms <= ?", (self.prefix, now))
        return readable(_pause, rows)

    def delete_prefix(self) -> int:
        """Delete this prefix's pauses (tests and clean-up); returns how many."""
        with self._file.write() as db:
            return db.execute("DELETE FROM tq_pauses WHERE ns = ?", (self.prefix,)).rowcount

    def close(self) -> None:
        self._file.close()


def _pause(row: sqlite3.Row | tuple[str, str, str, int, int | None]) -> Pause:
    target, reason, who, since_ms, until_ms = row
    try:
        return Pause(
            Target.from_key(target),
            str(reason),
            str(who),
            float(since_ms) / 1000,
            None if until_ms is None else float(until_ms) / 1000,
        )
    except (ValueError, TypeError) as exc:
        raise unreadable(exc) from None
