"""The history in the state store's SQLite file: an index of series, a table of points, and the worker
processes' figures.

``tq_history_series`` names each series (namespace, profile, kind, name) once and gives it an integer id
with the time it was last recorded; ``tq_history_points`` holds ``(series, tier, bucket) -> value`` WITHOUT
ROWID, written with ``INSERT ... ON CONFLICT DO UPDATE`` so that two writers of one moment write one point;
after every write the points more than :data:`~tqadmin.store.history.base.CLOCK_TOLERANCE_S` after the store's
clock are deleted and each tier keeps its newest ``points`` buckets. ``tq_history_workers`` keeps each
worker process's figures as last recorded (:mod:`tqadmin.store.history.increments`) with when. The store's
clock is the host's (every process sharing the file shares it). (``tq_history`` is taken: it holds the
workers' heartbeat history.) A series nobody recorded for the coarsest tier's span is deleted with its points,
a departed process's figures after the finest tier's span. One record call is one write transaction, which is
what makes a task record's read, plan and write one step.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile
from tqadmin.store.history.base import (
    CLOCK_TOLERANCE_S,
    DEFAULT_MAX_DEPARTED,
    TASKS,
    TIERS,
    HistoryStore,
    RawPoints,
    Recorded,
    Tier,
    admitted,
)
from tqadmin.store.history.increments import TaskState, candidates, plan_tasks, worker_key
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.telemetry.ledger import WorkerFigures

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_history_series (id INTEGER PRIMARY KEY, ns TEXT NOT NULL,"
    " profile TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, seen_s REAL NOT NULL,"
    " UNIQUE (ns, profile, kind, name))",
    "CREATE TABLE IF NOT EXISTS tq_history_points (series INTEGER NOT NULL, tier INTEGER NOT NULL,"
    " bucket INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (series, tier, bucket)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS tq_history_workers (ns TEXT NOT NULL, profile TEXT NOT NULL,"
    " worker TEXT NOT NULL, seen_s REAL NOT NULL, figures TEXT NOT NULL,"
    " PRIMARY KEY (ns, profile, worker)) WITHOUT ROWID",
)
_IN_CHUNK = 500  # bound parameters per IN (...): well under SQLite's limit


class SQLiteHistory(HistoryStore):
    """:class:`HistoryStore` in an SQLite file (:class:`~tqadmin.files.sqlite.SQLiteFile`), its rows under
    the store's prefix as their namespace; a reader's (:attr:`~tqadmin.files.access.Access.READ`) writes
    nothing, and reads a file without the history's tables as an empty history."""

    def __init__(
        self,
        path: Path,
        *,
        url: str = "",
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 10.0,
        max_series: int = 2000,
        max_departed: int = DEFAULT_MAX_DEPARTED,
        tiers: Sequence[Tier] = TIERS,
        access: Access = Access.CREATE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url or f"sqlite:///{path}"
        self.prefix = check_prefix(prefix)
        self.max_series = max_series
        self.max_departed = max_departed
        self.tiers = tuple(tiers)
        self._clock = clock  # the store's: the host's, whatever clock a recorder was given
        self._file = SQLiteFile(
            path, url=self.url, what="state store", access=access, schema=SCHEMA, timeout_s=timeout_s
        )

    def _record(self, profile: str, kind: str, now_s: float, values: Mapping[str, Sequence[str]]) -> Recorded:
        store_now = self._clock()
        refused = self.refused(now_s, store_now, len(values))
        if refused is not None:
            return refused
        with self._file.write() as db:
            self._forget_stale(db, now_s)
            return self._write(db, profile, kind, now_s, values, latest=store_now + CLOCK_TOLERANCE_S)

    def _record_tasks(self, profile: str, now_s: float, workers: Sequence[WorkerFigures]) -> Recorded:
        store_now = self._clock()
        refused = self.refused(now_s, store_now, len(candidates(workers, self.max_series)))
        if refused is not None:
            return refused
        latest = store_now + CLOCK_TOLERANCE_S
        with self._file.write() as db:
            self._forget_stale(db, now_s)
            state = self._task_state(db, profile, now_s, workers, latest)
            plan = plan_tasks(workers, state, self.tiers, self.max_series)
            values = {name: plan.values[name] for name in plan.names}
            written = self._write(db, profile, TASKS, now_s, values, latest=latest)
            self._keep_figures(db, profile, now_s, plan.lasts)
            return Recorded(written.series, written.refused, plan.skipped)

    def _write(
        self,
        db: sqlite3.Connection,
        profile: str,
        kind: str,
        now_s: float,
        values: Mapping[str, Sequence[str]],
        *,
        latest: float,
    ) -> Recorded:
        """Admit, write every tier's point, delete the points that start after ``latest`` and trim each
        tier to its newest buckets; returns how many series were written and how many points deleted."""
        known = self._known(db, profile, kind)
        names = admitted(values, known, self.max_series)
        for name in names:
            if name not in known:
                known[name] = db.execute(
                    "INSERT INTO tq_history_series (ns, profile, kind, name, seen_s)"
                    " VALUES (?, ?, ?, ?, ?) RETURNING id",
                    (self.prefix, profile, kind, name, now_s),
                ).fetchone()[0]
        db.executemany(
            "UPDATE tq_history_series SET seen_s = ? WHERE id = ?", [(now_s, known[name]) for name in names]
        )
        refused = 0
        for index, tier in enumerate(self.tiers):
            bucket = tier.bucket(now_s)
            series = [(known[name], tier.resolution_s) for name in names]
            db.executemany(
                "INSERT INTO tq_history_points (series, tier, bucket, value) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (series, tier, bucket) DO UPDATE SET value = excluded.value",
                [(known[name], tier.resolution_s, bucket, values[name][index]) for name in names],
            )
            for one in series:
                refused += db.execute(
                    "DELETE FROM tq_history_points WHERE series = ? AND tier = ? AND bucket > ?",
                    (*one, latest),
                ).rowcount
            db.executemany(
                "DELETE FROM tq_history_points WHERE series = ?1 AND tier = ?2 AND bucket < (SELECT bucket"
                " FROM tq_history_points WHERE series = ?1 AND tier = ?2 ORDER BY bucket DESC LIMIT 1"
                " OFFSET ?3)",
                [(*one, tier.points - 1) for one in series],
            )
        return Recorded(len(names), refused)

    def _known(self, db: sqlite3.Connection, profile: str, kind: str) -> dict[str, int]:
        rows = db.execute(
            "SELECT name, id FROM tq_history_series WHERE ns = ? AND profile = ? AND kind = ?",
            (self.prefix, profile, kind),
        ).fetchall()
        return {str(name): int(series) for name, series in rows}

    def _task_state(
        self,
        db: sqlite3.Connection,
        profile: str,
        now_s: float,
        workers: Sequence[WorkerFigures],
        latest: float,
    ) -> TaskState:
        (recorded_at,) = db.execute(
            "SELECT MAX(seen_s) FROM tq_history_workers WHERE ns = ? AND profile = ? AND seen_s <= ?",
            (self.prefix, profile, latest),
        ).fetchone()
        keys = [worker_key(worker) for worker in workers]
        lasts: dict[str, Any] = {}
        for start in range(0, len(keys), _IN_CHUNK):
            chunk = keys[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            lasts.update(
                db.execute(
                    "SELECT worker, figures FROM tq_history_workers WHERE ns = ? AND profile = ?"  # noqa: S608
                    f" AND worker IN ({marks})",
                    (self.prefix, profile, *chunk),
                ).fetchall()
            )
        known = self._known(db, profile, TASKS)
        current: dict[tuple[str, int], Any] = {}
        ahead: dict[tuple[str, int], list[Any]] = {}
        buckets = " OR ".join("(tier = ? AND bucket = ?)" for _ in self.tiers)
        here = [value for tier in self.tiers for value in (tier.resolution_s, tier.bucket(now_s))]
        for name in candidates(workers, self.max_series):
            if name not in known:
                continue
            rows = db.execute(
                "SELECT tier, bucket > ?1, value FROM tq_history_points"  # noqa: S608
                f" WHERE series = ?2 AND (bucket > ?1 OR {buckets})",
                (latest, known[name], *here),
            )
            for tier, is_ahead, value in rows:
                if is_ahead:
                    ahead.setdefault((name, tier), []).append(value)
                else:
                    current[(name, tier)] = value
        return TaskState(recorded_at, lasts, set(known), current, ahead)

    def _keep_figures(
        self, db: sqlite3.Connection, profile: str, now_s: float, lasts: Mapping[str, str]
    ) -> None:
        """The listed processes' figures as of ``now_s``; of the departed ones, those listed within
        :attr:`departed_keep_s`, at most :attr:`max_departed` (the newest)."""
        db.executemany(
            "INSERT INTO tq_history_workers (ns, profile, worker, seen_s, figures) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (ns, profile, worker) DO UPDATE SET seen_s = excluded.seen_s,"
            " figures = excluded.figures",
            [(self.prefix, profile, key, now_s, figures) for key, figures in lasts.items()],
        )
        db.execute(
            "DELETE FROM tq_history_workers WHERE ns = ? AND profile = ? AND seen_s < ?",
            (self.prefix, profile, now_s - self.departed_keep_s),
        )
        db.execute(
            "DELETE FROM tq_history_workers WHERE ns = ?1 AND profile = ?2 AND worker IN (SELECT worker FROM"
            " tq_history_workers WHERE ns = ?1 AND profile = ?2 AND seen_s < ?3 ORDER BY seen_s DESC"
            " LIMIT -1 OFFSET ?4)",
            (self.prefix, profile, now_s, self.max_departed),
        )

    def _forget_stale(self, db: sqlite3.Connection, now_s: float) -> int:
        """Delete what nobody recorded for a :attr:`keep_s` before ``now_s``: series with their points, and
        worker processes' figures (of a profile nobody records any more); returns how many series."""
        before_s = now_s - self.keep_s
        db.execute("DELETE FROM tq_history_workers WHERE ns = ? AND seen_s < ?", (self.prefix, before_s))
        stale = "SELECT id FROM tq_history_series WHERE ns = ? AND seen_s < ?"
        db.execute(f"DELETE FROM tq_history_points WHERE series IN ({stale})", (self.prefix, before_s))  # noqa: S608
        return db.execute(
            "DELETE FROM tq_history_series WHERE ns = ? AND seen_s < ?", (self.prefix, before_s)
        ).rowcount

    def _points(self, profile: str, kind: str, names: Sequence[str], tier: Tier) -> tuple[RawPoints, int]:
        points: RawPoints = {}
        with self._file.read() as db:
            for name in names:
                rows = db.execute(
                    "SELECT p.bucket, p.value FROM tq_history_series s"
                    " JOIN tq_history_points p ON p.series = s.id"
                    " WHERE s.ns = ? AND s.profile = ? AND s.kind = ? AND s.name = ? AND p.tier = ?"
                    " ORDER BY p.bucket",
                    (self.prefix, profile, kind, name, tier.resolution_s),
                ).fetchall()
                if rows:
                    points[name] = [(bucket, value) for bucket, value in rows]
        return points, 0

    def _names(self, profile: str, kind: str) -> list[str]:
        with self._file.read() as db:
            rows = db.execute(
                "SELECT name FROM tq_history_series WHERE ns = ? AND profile = ? AND kind = ?",
                (self.prefix, profile, kind),
            ).fetchall()
        return [str(name) for (name,) in rows]

    def delete_prefix(self) -> int:
        """Delete every series of this namespace and its points (tests); returns how many series."""
        with self._file.write() as db:
            return self._forget_stale(db, float("inf"))

    def close(self) -> None:
        self._file.close()
