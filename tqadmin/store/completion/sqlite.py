"""The state store on one SQLite file: the same contract as Redis, for a single host and no server.

Each operation is one ``BEGIN IMMEDIATE`` transaction, so claims and commits from several processes on the
host serialise on the database's write lock; a ``ctx.once`` effect gets the connection inside that
transaction and is rolled back with the completion mark if anything fails, which is stronger than Redis's
MULTI. A reader (``tqadmin workers``, ``stats``, the dashboard, the exporter) opens the file read-only and
writes nothing. Times come from the local clock, shared by every process on the host. ``prefix`` is a
namespace column, so tests and deployments can share a file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile, path_of
from tqadmin.store.completion.base import (
    Claim,
    ClaimState,
    Effect,
    Retention,
    StateStore,
    WorkerRecord,
    by_start,
    unique_chunks,
)
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.telemetry.snapshot import Reading, WorkerHistory, WorkerSnapshot

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_jobs (ns TEXT NOT NULL, job_id TEXT NOT NULL, state TEXT NOT NULL,"
    " owner TEXT NOT NULL DEFAULT '', token INTEGER NOT NULL DEFAULT 0, expires_ms INTEGER,"
    " crashes INTEGER NOT NULL DEFAULT 0, done_at_ms INTEGER, updated_ms INTEGER NOT NULL,"
    " PRIMARY KEY (ns, job_id))",
    "CREATE INDEX IF NOT EXISTS tq_jobs_updated ON tq_jobs (ns, updated_ms)",
    "CREATE TABLE IF NOT EXISTS tq_workers (ns TEXT NOT NULL, worker_id TEXT NOT NULL,"
    " snapshot TEXT NOT NULL, beat_ms INTEGER NOT NULL, ttl_ms INTEGER NOT NULL,"
    " PRIMARY KEY (ns, worker_id))",
    "CREATE TABLE IF NOT EXISTS tq_history (ns TEXT NOT NULL, worker_id TEXT NOT NULL,"
    " at_ms INTEGER NOT NULL, snapshot TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS tq_history_at ON tq_history (ns, worker_id, at_ms)",
)

_DONE_AMONG_CHUNK = 500


class _EffectFailed(Exception):
    """Carries an effect's exception through the store's error translation untouched."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class SQLiteStore(StateStore):
    """:class:`StateStore` on an SQLite file (:class:`~tqadmin.files.sqlite.SQLiteFile`: WAL, one connection
    per thread), possibly the embedded broker's file too: its tables are its own. ``access`` is
    :attr:`~tqadmin.files.access.Access.READ` for a reader (``tqadmin workers``, the dashboard), which writes
    nothing and reads a file without the store's tables as an empty store."""

    def __init__(
        self,
        path: Path,
        *,
        url: str = "",
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 10.0,
        retention: Retention | None = None,
        clock: Callable[[], float] = time.time,
        access: Access = Access.CREATE,
    ) -> None:
        self.url = url or f"sqlite:///{path}"
        self.prefix = check_prefix(prefix)
        self._file = SQLiteFile(
            path, url=self.url, what="state store", access=access, schema=SCHEMA, timeout_s=timeout_s
        )
        self._retention = retention or Retention()
        self._clock = clock

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        timeout_s: float = 10.0,
        prefix: str = DEFAULT_PREFIX,
        retention: Retention | None = None,
        access: Access = Access.CREATE,
    ) -> SQLiteStore:
        """``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``; a reader's ``access`` is
        :attr:`~tqadmin.files.access.Access.READ`, which a file that does not exist stops
        (:class:`~tqadmin.errors.NoDatabase`)."""
        return cls(
            path_of(url), url=url, prefix=prefix, timeout_s=timeout_s, retention=retention, access=access
        )

    # -- plumbing --------------------------------------------------------------------------------------

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction, holding the database's write lock from the start."""
        return self._file.write()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- completion store ---------------------------------------------------------------------------------

    def claim(self, job_id: str, owner: str, lease_s: float) -> Claim:
        return self.claim_many([job_id], owner, lease_s)[0]

    def claim_many(self, job_ids: Sequence[str], owner: str, lease_s: float) -> list[Claim]:
        with self._write() as db:
            return [self._claim(db, job_id, owner, lease_s) for job_id in job_ids]

    def _claim(self, db: sqlite3.Connection, job_id: str, owner: str, lease_s: float) -> Claim:
        now = self._now_ms()
        row = db.execute(
            "SELECT state, owner, token, expires_ms, crashes FROM tq_jobs WHERE ns = ? AND job_id = ?",
            (self.prefix, job_id),
        ).fetchone()
        state, holder, token, expires, crashes = row or ("", "", 0, 0, 0)
        if state == "done":
            return Claim(job_id, ClaimState.DONE, holder, token, crashes)
        if state in ("claimed", "running"):
            if expires > now:
                return Claim(job_id, ClaimState.HELD, holder, token, crashes, (expires - now) / 1000)
            crashes += state == "running"  # a run started and its lease ran out: its worker died
        token += 1
        db.execute(
            "INSERT INTO tq_jobs (ns, job_id, state, owner, token, expires_ms, crashes, updated_ms)"
            " VALUES (?, ?, 'claimed', ?, ?, ?, ?, ?) ON CONFLICT (ns, job_id) DO UPDATE SET"
            " state = 'claimed', owner = excluded.owner, token = excluded.token,"
            " expires_ms = excluded.expires_ms, crashes = excluded.crashes,"
            " updated_ms = excluded.updated_ms",
            (self.prefix, job_id, owner, token, now + int(lease_s * 1000), crashes, now),
        )
        return Claim(job_id, ClaimState.CLAIMED, owner, token, crashes)

    def _if_current(self, db: sqlite3.Connection, claim: Claim, assignments: str, *values: object) -> bool:
        cursor = db.execute(
            f"UPDATE tq_jobs SET {assignments}, updated_ms = ?"  # noqa: S608 - fixed column lists, no user text
            " WHERE ns = ? AND job_id = ? AND state IN ('claimed', 'running') AND token = ?",
            (*values, self._now_ms(), self.prefix, claim.job_id, claim.token),
        )
        return cursor.rowcount == 1

    def renew(self, claim: Claim, lease_s: float) -> bool:
        return self.renew_many([claim], lease_s)[0]

    def renew_many(self, claims: Sequence[Claim], lease_s: float) -> list[bool]:
        if not claims:
            return []
        with self._write() as db:
            until = self._now_ms() + int(lease_s * 1000)
            return [self._if_current(db, claim, "expires_ms = ?", until) for claim in claims]

    def start_many(self, claims: Sequence[Claim]) -> list[bool]:
        if not claims:
            return []
        with self._write() as db:
            return [self._if_current(db, claim, "state = 'running'") for claim in claims]

    def _mark_done(self, db: sqlite3.Connection, claim: Claim) -> bool:
        return self._if_current(
            db, claim, "state = 'done', expires_ms = NULL, done_at_ms = ?", self._now_ms()
        )

    def complete(self, claim: Claim, effect: Effect | None = None) -> bool:
        try:
            with self._write() as db:
                if not self._mark_done(db, claim):
                    return False
                if effect is not None:
                    try:
                        effect(db)  # inside the same transaction: an exception rolls back the mark too
                    except Exception as exc:
                        raise _EffectFailed(exc) from exc
                return True
        except _EffectFailed as failed:
            raise failed.error from None  # the task's own error (even an SQL one), not a store outage

    def complete_many(self, claims: Sequence[Claim]) -> list[bool]:
        return self.complete_and_claim(claims, (), "", 0)[0]

    def complete_and_claim(
        self, claims: Sequence[Claim], job_ids: Sequence[str], owner: str, lease_s: float
    ) -> tuple[list[bool], list[Claim]]:
        """Both in one transaction: one write lock for a worker's round trip (a window's claims, marks)."""
        if not claims and not job_ids:
            return [], []
        with self._write() as db:
            done = [self._mark_done(db, claim) for claim in claims]
            return done, [self._claim(db, job_id, owner, lease_s) for job_id in job_ids]

    def release(self, claim: Claim, *, forget_crashes: bool = False) -> bool:
        crashes = "0" if forget_crashes else "crashes"
        with self._write() as db:
            return self._if_current(db, claim, f"state = 'released', expires_ms = NULL, crashes = {crashes}")

    def abandon_many(self, claims: Sequence[Claim], *, started: bool) -> list[bool]:
        if not claims:
            return []
        with self._write() as db:
            if started:
                now = self._now_ms()
                return [self._if_current(db, c, "state = 'running', expires_ms = ?", now) for c in claims]
            return [self._if_current(db, c, "state = 'released', expires_ms = NULL") for c in claims]

    def done_among(self, job_ids: Iterable[str]) -> set[str]:
        done: set[str] = set()
        with self._file.read() as db:
            for chunk in unique_chunks(job_ids, _DONE_AMONG_CHUNK):
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT job_id FROM tq_jobs WHERE ns = ? AND state = 'done' AND job_id IN ({marks})",  # noqa: S608
                    (self.prefix, *chunk),
                )
                done.update(row[0] for row in rows)
        return done

    # -- heartbeats -------------------------------------------------------------------------------------

    def beat(self, snapshot: WorkerSnapshot, ttl_s: float) -> None:
        now = self._now_ms()
        keep = self._retention
        ns, worker = self.prefix, snapshot.worker_id
        document = snapshot.encode()
        with self._write() as db:
            db.execute(
                "INSERT INTO tq_workers (ns, worker_id, snapshot, beat_ms, ttl_ms) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (ns, worker_id) DO UPDATE SET snapshot = excluded.snapshot,"
                " beat_ms = excluded.beat_ms, ttl_ms = excluded.ttl_ms",
                (ns, worker, document, now, int(ttl_s * 1000)),
            )
            (last,) = db.execute(
                "SELECT MAX(at_ms) FROM tq_history WHERE ns = ? AND worker_id = ?", (ns, worker)
            ).fetchone()
            if last is None or now - last >= keep.history_step_s * 1000:
                db.execute("INSERT INTO tq_history VALUES (?, ?, ?, ?)", (ns, worker, now, document))
                db.execute(
                    "DELETE FROM tq_history WHERE ns = ? AND worker_id = ? AND at_ms < (SELECT at_ms FROM"
                    " tq_history WHERE ns = ? AND worker_id = ? ORDER BY at_ms DESC LIMIT 1 OFFSET ?)",
                    (ns, worker, ns, worker, keep.history_cap - 1),
                )
            gone = now - int(keep.dead_worker_s * 1000)
            db.execute(
                "DELETE FROM tq_history WHERE ns = ? AND worker_id IN"
                " (SELECT worker_id FROM tq_workers WHERE ns = ? AND beat_ms < ?)",
                (ns, ns, gone),
            )
            db.execute("DELETE FROM tq_workers WHERE ns = ? AND beat_ms < ?", (ns, gone))
            db.execute(
                "DELETE FROM tq_jobs WHERE ns = ? AND updated_ms < ?", (ns, now - int(keep.job_s * 1000))
            )

    def workers(self) -> list[WorkerRecord]:
        now = self._now_ms()
        with self._file.read() as db:
            rows = db.execute("SELECT snapshot, beat_ms, ttl_ms FROM tq_workers WHERE ns = ?", (self.prefix,))
            records = [
                WorkerRecord(WorkerSnapshot.decode(doc), max(now - beat, 0) / 1000, now - beat <= ttl)
                for doc, beat, ttl in rows
            ]
        return by_start(records)

    def history(self, window_s: float) -> tuple[float, list[WorkerHistory]]:
        now = self._now_ms()
        start = now - int(window_s * 1000)
        histories = []
        with self._file.read() as db:
            active = db.execute(
                "SELECT worker_id, snapshot, beat_ms FROM tq_workers WHERE ns = ? AND beat_ms >= ?",
                (self.prefix, start),
            ).fetchall()
            for worker, document, beat in active:
                found = (
                    db.execute(
                        "SELECT at_ms, snapshot FROM tq_history WHERE ns = ? AND worker_id = ? AND at_ms <= ?"
                        " ORDER BY at_ms DESC LIMIT 1",
                        (self.prefix, worker, start),
                    ).fetchone()
                    or db.execute(
                        "SELECT at_ms, snapshot FROM tq_history WHERE ns = ? AND worker_id = ? AND at_ms > ?"
                        " ORDER BY at_ms LIMIT 1",
                        (self.prefix, worker, start),
                    ).fetchone()
                )
                baseline = Reading(found[0] / 1000, WorkerSnapshot.decode(found[1])) if found else None
                histories.append(
                    WorkerHistory(Reading(beat / 1000, WorkerSnapshot.decode(document)), baseline)
                )
        return now / 1000, histories

    def delete_prefix(self) -> int:
        """Delete every row of this store's namespace (tests and ``demo`` clean-up); returns how many."""
        with self._write() as db:
            return sum(
                db.execute(f"DELETE FROM {table} WHERE ns = ?", (self.prefix,)).rowcount  # noqa: S608
                for table in ("tq_jobs", "tq_workers", "tq_history")
            )

    def close(self) -> None:
        self._file.close()
