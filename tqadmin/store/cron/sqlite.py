"""The cron store on an SQLite file (the embedded default's): the same lease, fencing and tick records as on
Redis, each operation one ``BEGIN IMMEDIATE`` transaction, so the check of the current token and the write
it guards are one atomic step, as a Lua script makes them on Redis.

Times come from the host's clock, which every cron instance sharing the file shares. Rows carry a
namespace (the store URL's ``prefix`` and the cron's namespace), so deployments can share a file. The
registry of cron instances, which no lease guards, is a room of its own (:mod:`.sqlite_instances`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tqadmin.connect.prefixes import split_prefix
from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile, path_of
from tqadmin.store.cron.base import (
    CronStore,
    FiredTick,
    LeaderInfo,
    Lease,
    Registration,
    TickOutcome,
    TickRecord,
    TickState,
    check_namespace,
    tick_id,
)
from tqadmin.store.cron.sqlite_instances import INSTANCES_SCHEMA, SQLiteCronInstances
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_cron_lease (ns TEXT PRIMARY KEY, instance TEXT NOT NULL,"
    " token INTEGER NOT NULL, expires_ms INTEGER NOT NULL, acquired_ms INTEGER NOT NULL,"
    " renewed_ms INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tq_cron_fence (ns TEXT PRIMARY KEY, token INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tq_cron_ticks (ns TEXT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL,"
    " token INTEGER NOT NULL, instance TEXT NOT NULL, expires_ms INTEGER NOT NULL, PRIMARY KEY (ns, id))",
    "CREATE TABLE IF NOT EXISTS tq_cron_pending (ns TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,"
    " scheduled INTEGER NOT NULL, PRIMARY KEY (ns, id))",
    "CREATE TABLE IF NOT EXISTS tq_cron_schedules (ns TEXT NOT NULL, name TEXT NOT NULL, cursor INTEGER,"
    " missed INTEGER NOT NULL DEFAULT 0, fired_scheduled INTEGER, fired_s REAL, fired_token INTEGER,"
    " fired_instance TEXT, PRIMARY KEY (ns, name))",
    *INSTANCES_SCHEMA,
)


class SQLiteCronStore(CronStore):
    def __init__(
        self,
        file: SQLiteFile,
        namespace: str,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.namespace = check_namespace(namespace)
        self._file = file
        self._ns = f"{check_prefix(prefix)}:{namespace}"
        self._clock = clock
        self._instances = SQLiteCronInstances(file, self._ns, clock)

    @classmethod
    def from_url(
        cls, url: str, namespace: str, timeout_s: float = 10.0, *, access: Access = Access.CREATE
    ) -> SQLiteCronStore:
        """``url`` may carry ``?prefix=`` like every store URL; a reader's ``access`` is ``READ``, which
        writes nothing and reads a file without the cron's tables as a cron that never ran."""
        base, prefix = split_prefix(url)
        file = SQLiteFile(
            path_of(base), url=base, what="state store", access=access, schema=SCHEMA, timeout_s=timeout_s
        )
        return cls(file, namespace, prefix or DEFAULT_PREFIX)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _current(self, db: sqlite3.Connection, lease: Lease, now: int) -> bool:
        """``lease`` is the live one and holds the latest token: only then may it fire or skip ticks."""
        row = db.execute(
            "SELECT 1 FROM tq_cron_lease l JOIN tq_cron_fence f ON f.ns = l.ns WHERE l.ns = ?"
            " AND l.instance = ? AND l.token = ? AND f.token = ? AND l.expires_ms > ?",
            (self._ns, lease.instance, lease.token, lease.token, now),
        ).fetchone()
        return row is not None

    def _live_tick(self, db: sqlite3.Connection, ident: str, now: int) -> tuple[str, int, str] | None:
        row = db.execute(
            "SELECT state, token, instance FROM tq_cron_ticks WHERE ns = ? AND id = ? AND expires_ms > ?",
            (self._ns, ident, now),
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), str(row[2]))

    def _set_tick(self, db: sqlite3.Connection, ident: str, lease: Lease, now: int, keep_s: float) -> None:
        db.execute(
            "INSERT INTO tq_cron_ticks (ns, id, state, token, instance, expires_ms)"
            " VALUES (?, ?, 'claimed', ?, ?, ?)"
            " ON CONFLICT (ns, id) DO UPDATE SET state = 'claimed', token = excluded.token,"
            " instance = excluded.instance, expires_ms = excluded.expires_ms",
            (self._ns, ident, lease.token, lease.instance, now + _ms(keep_s)),
        )

    # lease

    def acquire(self, instance: str, ttl_s: float) -> Lease | None:
        now = self._now_ms()
        with self._file.write() as db:
            held = db.execute(
                "SELECT 1 FROM tq_cron_lease WHERE ns = ? AND expires_ms > ?", (self._ns, now)
            ).fetchone()
            if held:
                return None
            token = self._fence(db) + 1
            db.execute(
                "INSERT INTO tq_cron_fence (ns, token) VALUES (?, ?)"
                " ON CONFLICT (ns) DO UPDATE SET token = excluded.token",
                (self._ns, token),
            )
            db.execute(
                "INSERT OR REPLACE INTO tq_cron_lease"
                " (ns, instance, token, expires_ms, acquired_ms, renewed_ms) VALUES (?, ?, ?, ?, ?, ?)",
                (self._ns, instance, token, now + _ms(ttl_s), now, now),
            )
        return Lease(instance, token, ttl_s)

    def renew(self, lease: Lease) -> bool:
        now = self._now_ms()
        with self._file.write() as db:
            cursor = db.execute(
                "UPDATE tq_cron_lease SET expires_ms = ?, renewed_ms = ?"
                " WHERE ns = ? AND instance = ? AND token = ? AND expires_ms > ?",
                (now + _ms(lease.ttl_s), now, self._ns, lease.instance, lease.token, now),
            )
            return cursor.rowcount == 1

    def release(self, lease: Lease) -> None:
        with self._file.write() as db:
            db.execute(
                "DELETE FROM tq_cron_lease WHERE ns = ? AND instance = ? AND token = ? AND expires_ms > ?",
                (self._ns, lease.instance, lease.token, self._now_ms()),
            )

    def leader(self) -> LeaderInfo | None:
        now = self._now_ms()
        with self._file.read() as db:
            row = db.execute(
                "SELECT instance, token, acquired_ms, renewed_ms, expires_ms FROM tq_cron_lease"
                " WHERE ns = ? AND expires_ms > ?",
                (self._ns, now),
            ).fetchone()
        if row is None:
            return None
        instance, token, acquired, renewed, expires = row
        return LeaderInfo(
            instance, int(token), acquired / 1000, renewed / 1000, (expires - now) / 1000, now / 1000
        )

    def fencing_token(self) -> int:
        with self._file.read() as db:
            return self._fence(db)

    def _fence(self, db: sqlite3.Connection) -> int:
        row = db.execute("SELECT token FROM tq_cron_fence WHERE ns = ?", (self._ns,)).fetchone()
        return int(row[0]) if row else 0

    # ticks

    def claim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        ident, now = tick_id(name, scheduled), self._now_ms()
        with self._file.write() as db:
            if not self._current(db, lease, now):
                return TickOutcome.STALE
            if self._live_tick(db, ident, now) is not None:
                return TickOutcome.DUPLICATE
            db.execute("DELETE FROM tq_cron_ticks WHERE ns = ? AND expires_ms <= ?", (self._ns, now))
            self._set_tick(db, ident, lease, now, keep_s)
            db.execute(
                "INSERT OR IGNORE INTO tq_cron_pending (ns, id, name, scheduled) VALUES (?, ?, ?, ?)",
                (self._ns, ident, name, scheduled),
            )
        return TickOutcome.CLAIMED

    def reclaim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        ident, now = tick_id(name, scheduled), self._now_ms()
        with self._file.write() as db:
            if not self._current(db, lease, now):
                return TickOutcome.STALE
            pending = db.execute(
                "SELECT 1 FROM tq_cron_pending WHERE ns = ? AND id = ?", (self._ns, ident)
            ).fetchone()
            if pending is None:
                return TickOutcome.DUPLICATE
            record = self._live_tick(db, ident, now)
            if record is not None and record[0] == TickState.FIRED:
                db.execute("DELETE FROM tq_cron_pending WHERE ns = ? AND id = ?", (self._ns, ident))
                return TickOutcome.DUPLICATE
            self._set_tick(db, ident, lease, now, keep_s)
        return TickOutcome.CLAIMED

    def mark_fired(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> None:
        ident, now = tick_id(name, scheduled), self._now_ms()
        with self._file.write() as db:
            record = self._live_tick(db, ident, now)
            if record is None:
                db.execute(
                    "INSERT OR REPLACE INTO tq_cron_ticks (ns, id, state, token, instance, expires_ms)"
                    " VALUES (?, ?, 'fired', ?, ?, ?)",
                    (self._ns, ident, lease.token, lease.instance, now + _ms(keep_s)),
                )
            elif record[1] <= lease.token:  # a stale leader's late confirm keeps the new leader's record
                db.execute(
                    "UPDATE tq_cron_ticks SET state = 'fired', token = ?, instance = ?"
                    " WHERE ns = ? AND id = ?",
                    (lease.token, lease.instance, self._ns, ident),
                )
            db.execute("DELETE FROM tq_cron_pending WHERE ns = ? AND id = ?", (self._ns, ident))
            self._advance(db, name, scheduled)
            db.execute(
                "UPDATE tq_cron_schedules SET fired_scheduled = ?, fired_s = ?, fired_token = ?,"
                " fired_instance = ? WHERE ns = ? AND name = ?"
                " AND (fired_scheduled IS NULL OR fired_scheduled < ?)",
                (scheduled, self._clock(), lease.token, lease.instance, self._ns, name, scheduled),
            )

    def _advance(self, db: sqlite3.Connection, name: str, through: int) -> None:
        """Move the schedule's cursor forward to ``through`` (never back)."""
        db.execute(
            "INSERT INTO tq_cron_schedules (ns, name, cursor) VALUES (?, ?, ?) ON CONFLICT (ns, name)"
            " DO UPDATE SET cursor = MAX(COALESCE(cursor, excluded.cursor), excluded.cursor)",
            (self._ns, name, through),
        )

    def mark_missed(self, lease: Lease, name: str, through: int, count: int) -> bool:
        with self._file.write() as db:
            if not self._current(db, lease, self._now_ms()):
                return False
            self._advance(db, name, through)
            db.execute(
                "UPDATE tq_cron_schedules SET missed = missed + ? WHERE ns = ? AND name = ?",
                (count, self._ns, name),
            )
        return True

    def arm(self, name: str, cursor: int) -> int:
        with self._file.write() as db:
            db.execute(
                "INSERT INTO tq_cron_schedules (ns, name, cursor) VALUES (?, ?, ?) ON CONFLICT (ns, name)"
                " DO UPDATE SET cursor = COALESCE(cursor, excluded.cursor)",
                (self._ns, name, cursor),
            )
            (stored,) = db.execute(
                "SELECT cursor FROM tq_cron_schedules WHERE ns = ? AND name = ?", (self._ns, name)
            ).fetchone()
        return int(stored)

    def cursors(self, names: Iterable[str]) -> dict[str, int]:
        wanted = set(names)
        with self._file.read() as db:
            rows = db.execute(
                "SELECT name, cursor FROM tq_cron_schedules WHERE ns = ? AND cursor IS NOT NULL", (self._ns,)
            ).fetchall()
        return {name: int(cursor) for name, cursor in rows if name in wanted}

    def pending(self) -> list[TickRecord]:
        now = self._now_ms()
        with self._file.read() as db:
            rows = db.execute(
                "SELECT p.name, p.scheduled, t.state, t.token, t.instance FROM tq_cron_pending p"
                " LEFT JOIN tq_cron_ticks t ON t.ns = p.ns AND t.id = p.id AND t.expires_ms > ?"
                " WHERE p.ns = ? ORDER BY p.scheduled, p.id",
                (now, self._ns),
            ).fetchall()
        return [
            TickRecord(
                name, int(scheduled), TickState(state or TickState.CLAIMED), int(token or 0), instance or ""
            )
            for name, scheduled, state, token, instance in rows
        ]

    def drop_pending(self, name: str, scheduled: int) -> None:
        with self._file.write() as db:
            db.execute(
                "DELETE FROM tq_cron_pending WHERE ns = ? AND id = ?", (self._ns, tick_id(name, scheduled))
            )

    def tick(self, name: str, scheduled: int) -> TickRecord | None:
        with self._file.read() as db:
            record = self._live_tick(db, tick_id(name, scheduled), self._now_ms())
        if record is None:
            return None
        state, token, instance = record
        return TickRecord(name, scheduled, TickState(state), token, instance)

    def last_fired(self) -> dict[str, FiredTick]:
        with self._file.read() as db:
            rows = db.execute(
                "SELECT name, fired_scheduled, fired_s, fired_token, fired_instance FROM tq_cron_schedules"
                " WHERE ns = ? AND fired_scheduled IS NOT NULL",
                (self._ns,),
            ).fetchall()
        return {
            name: FiredTick(name, int(scheduled), fired_s, int(token), instance)
            for name, scheduled, fired_s, token, instance in rows
        }

    def missed_counts(self) -> dict[str, int]:
        with self._file.read() as db:
            rows = db.execute(
                "SELECT name, missed FROM tq_cron_schedules WHERE ns = ? AND missed > 0", (self._ns,)
            ).fetchall()
        return {name: int(missed) for name, missed in rows}

    # registry (its own room: .sqlite_instances)

    def register(self, instance: str, schedules: Iterable[Mapping[str, Any]]) -> None:
        self._instances.register(instance, schedules)

    def heartbeat(self, instance: str) -> None:
        self._instances.heartbeat(instance)

    def registrations(self) -> list[Registration]:
        return self._instances.registrations()

    def forget_instances(self, seen_before: float) -> int:
        return self._instances.forget_instances(seen_before)

    def now(self) -> float:
        return self._clock()

    def close(self) -> None:
        self._file.close()


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
