"""The history in the state store's SQLite file: an index of series and a table of points.

``tq_history_series`` names each series (namespace, profile, kind, name) once and gives it an integer id
with the time it was last recorded; ``tq_history_points`` holds ``(series, tier, bucket) -> value`` WITHOUT
ROWID, written with ``INSERT ... ON CONFLICT DO UPDATE`` so that two writers of one moment write one point,
and trimmed with ``DELETE ... WHERE bucket <= newest - span`` after every write. (``tq_history`` is taken:
it holds the workers' heartbeat history.) A series nobody recorded for the coarsest tier's span is deleted
with its points. One record call is one write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

from tqadmin.file_access import Access
from tqadmin.sqlite_file import SQLiteFile
from tqadmin.store.history import TIERS, HistoryStore, Tier, admitted
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_history_series (id INTEGER PRIMARY KEY, ns TEXT NOT NULL,"
    " profile TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, seen_s REAL NOT NULL,"
    " UNIQUE (ns, profile, kind, name))",
    "CREATE TABLE IF NOT EXISTS tq_history_points (series INTEGER NOT NULL, tier INTEGER NOT NULL,"
    " bucket INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (series, tier, bucket)) WITHOUT ROWID",
)


class SQLiteHistory(HistoryStore):
    """:class:`HistoryStore` in an SQLite file (:class:`~tqadmin.sqlite_file.SQLiteFile`), its rows under
    the store's prefix as their namespace; a reader's (:attr:`~tqadmin.file_access.Access.READ`) writes
    nothing, and reads a file without the history's tables as an empty history."""

    def __init__(
        self,
        path: Path,
        *,
        url: str = "",
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 10.0,
        max_series: int = 2000,
        tiers: Sequence[Tier] = TIERS,
        access: Access = Access.CREATE,
    ) -> None:
        self.url = url or f"sqlite:///{path}"
        self.prefix = check_prefix(prefix)
        self.max_series = max_series
        self.tiers = tuple(tiers)
        self._file = SQLiteFile(
            path, url=self.url, what="state store", access=access, schema=SCHEMA, timeout_s=timeout_s
        )

    def _record(self, profile: str, kind: str, now_s: float, values: Mapping[str, str]) -> int:
        with self._file.write() as db:
            self._forget_stale(db, now_s - self.keep_s)
            known = dict(
                db.execute(
                    "SELECT name, id FROM tq_history_series WHERE ns = ? AND profile = ? AND kind = ?",
                    (self.prefix, profile, kind),
                ).fetchall()
            )
            names = admitted(values, known, self.max_series)
            for name in names:
                if name not in known:
                    known[name] = db.execute(
                        "INSERT INTO tq_history_series (ns, profile, kind, name, seen_s)"
                        " VALUES (?, ?, ?, ?, ?) RETURNING id",
                        (self.prefix, profile, kind, name, now_s),
                    ).fetchone()[0]
            db.executemany(
                "UPDATE tq_history_series SET seen_s = MAX(seen_s, ?) WHERE id = ?",
                [(now_s, known[name]) for name in names],
            )
            for tier in self.tiers:
                bucket = tier.bucket(now_s)
                rows = [(known[name], tier.resolution_s, bucket, values[name]) for name in names]
                db.executemany(
                    "INSERT INTO tq_history_points (series, tier, bucket, value) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (series, tier, bucket) DO UPDATE SET value = excluded.value",
                    rows,
                )
                db.executemany(
                    "DELETE FROM tq_history_points WHERE series = ?1 AND tier = ?2 AND bucket <= (SELECT"
                    " MAX(bucket) FROM tq_history_points WHERE series = ?1 AND tier = ?2) - ?3",
                    [(known[name], tier.resolution_s, tier.span_s) for name in names],
                )
            return len(names)

    def _forget_stale(self, db: sqlite3.Connection, before_s: float) -> int:
        """Delete the series last recorded before ``before_s`` and their points; returns how many."""
        stale = "SELECT id FROM tq_history_series WHERE ns = ? AND seen_s < ?"
        db.execute(f"DELETE FROM tq_history_points WHERE series IN ({stale})", (self.prefix, before_s))  # noqa: S608
        return db.execute(
            "DELETE FROM tq_history_series WHERE ns = ? AND seen_s < ?", (self.prefix, before_s)
        ).rowcount

    def _points(
        self, profile: str, kind: str, names: Sequence[str], tier: Tier
    ) -> dict[str, list[tuple[int, str]]]:
        points: dict[str, list[tuple[int, str]]] = {}
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
                    points[name] = [(int(bucket), str(value)) for bucket, value in rows]
        return points

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
