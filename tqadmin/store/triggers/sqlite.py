"""Trigger requests in the state store's SQLite file: ``tq_cron_triggers (ns, ident, schedule, who)``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.store.triggers.base import TriggerRequest, TriggerRequests

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tq_cron_triggers (ns TEXT NOT NULL, ident INTEGER NOT NULL,"
    " schedule TEXT NOT NULL, who TEXT NOT NULL, PRIMARY KEY (ns, ident))",
)


class SQLiteTriggers(TriggerRequests):
    def __init__(
        self,
        path: Path,
        namespace: str,
        *,
        url: str = "",
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 10.0,
        access: Access = Access.CREATE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ns = f"{check_prefix(prefix)}:{namespace}"  # as the cron store's rows are named
        self._clock = clock
        self._file = SQLiteFile(
            path,
            url=url or f"sqlite:///{path}",
            what="state store",
            access=access,
            schema=SCHEMA,
            timeout_s=timeout_s,
        )

    def request(self, schedule: str, who: str) -> TriggerRequest:
        ident = int(self._clock() * 1_000_000)
        with self._file.write() as db:
            while db.execute(
                "SELECT 1 FROM tq_cron_triggers WHERE ns = ? AND ident = ?", (self._ns, ident)
            ).fetchone():
                ident += 1
            db.execute(
                "INSERT INTO tq_cron_triggers (ns, ident, schedule, who) VALUES (?, ?, ?, ?)",
                (self._ns, ident, schedule, who),
            )
        return TriggerRequest(schedule, ident, who)

    def waiting(self) -> list[TriggerRequest]:
        with self._file.read() as db:
            rows = db.execute(
                "SELECT schedule, ident, who FROM tq_cron_triggers WHERE ns = ? ORDER BY ident", (self._ns,)
            ).fetchall()
        return [TriggerRequest(str(s), int(i), str(w)) for s, i, w in rows]

    def done(self, request: TriggerRequest) -> None:
        with self._file.write() as db:
            db.execute("DELETE FROM tq_cron_triggers WHERE ns = ? AND ident = ?", (self._ns, request.ident))

    def close(self) -> None:
        self._file.close()
