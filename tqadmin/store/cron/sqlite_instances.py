"""The registry of cron instances on an SQLite file: who runs a cron, with which schedules, as each one last
said, for ``tqadmin cron`` and the dashboard. No lease guards it: every instance writes its own row, leader or
not, so it needs none of the fencing of :class:`tqadmin.store.cron.sqlite.SQLiteCronStore`, which holds one
of these and answers the registry's part of :class:`tqadmin.store.cron.base.CronStore` through it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tqadmin.files.sqlite import SQLiteFile
from tqadmin.store.cron.base import Registration

INSTANCES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_cron_instances (ns TEXT NOT NULL, instance TEXT NOT NULL,"
    " schedules TEXT, seen_s REAL NOT NULL, PRIMARY KEY (ns, instance))",
)


class SQLiteCronInstances:
    """The rows of one namespace (``prefix:namespace``) of the file's ``tq_cron_instances`` table."""

    def __init__(self, file: SQLiteFile, ns: str, clock: Callable[[], float]) -> None:
        self._file = file
        self._ns = ns
        self._clock = clock

    def register(self, instance: str, schedules: Iterable[Mapping[str, Any]]) -> None:
        document = json.dumps({"schedules": list(schedules)}, separators=(",", ":"))
        with self._file.write() as db:
            db.execute(
                "INSERT INTO tq_cron_instances (ns, instance, schedules, seen_s) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (ns, instance) DO UPDATE SET schedules = excluded.schedules,"
                " seen_s = excluded.seen_s",
                (self._ns, instance, document, self._clock()),
            )

    def heartbeat(self, instance: str) -> None:
        with self._file.write() as db:
            db.execute(
                "INSERT INTO tq_cron_instances (ns, instance, seen_s) VALUES (?, ?, ?)"
                " ON CONFLICT (ns, instance) DO UPDATE SET seen_s = excluded.seen_s",
                (self._ns, instance, self._clock()),
            )

    def registrations(self) -> list[Registration]:
        with self._file.read() as db:
            rows = db.execute(
                "SELECT instance, seen_s, schedules FROM tq_cron_instances WHERE ns = ?"
                " ORDER BY seen_s DESC, instance",
                (self._ns,),
            ).fetchall()
        result = []
        for instance, seen_s, document in rows:
            try:
                schedules = json.loads(document or "{}").get("schedules", [])
            except ValueError:
                schedules = []
            result.append(Registration(instance, seen_s, tuple(schedules)))
        return result

    def forget_instances(self, seen_before: float) -> int:
        with self._file.write() as db:
            return db.execute(
                "DELETE FROM tq_cron_instances WHERE ns = ? AND seen_s < ?", (self._ns, seen_before)
            ).rowcount
