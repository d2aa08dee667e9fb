"""The admin face of the SQLite broker: figures, peeks and transfers straight from the file.

Every read is one read transaction on the file opened read-only, which no writer waits for and which writes
nothing (:mod:`tqadmin.files.sqlite_readonly`). The file is opened for writing on the first write only. Every
write is one transaction: purge and the server-side move are a statement or two; the client-side transfers
(move with a filter, replay, export, purge with a backup, import, delete by id) run on
:class:`~tqadmin_sqlite.transfer.SQLiteTransferSession`. A read-only profile's admin never opens the file for
writing: its sessions (export, ``dead-letters``, dry runs) are :class:`~tqadmin_sqlite.transfer.SQLiteLook`,
which read rows without leasing them.
"""

from __future__ import annotations

import time
from typing import ClassVar

from tqadmin.errors import ReadOnly
from tqadmin.files.access import Access
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, PeekResult, QueueListing
from tqadmin_sqlite import rows
from tqadmin_sqlite.capabilities import CAPABILITIES
from tqadmin_sqlite.database import BrokerFile, Clock
from tqadmin_sqlite.listing import queue_stats
from tqadmin_sqlite.rows import UNHELD
from tqadmin_sqlite.transfer import SQLiteLook, SQLiteTransferSession

SERVER_SIDE = "server-side: one SQLite transaction (copies in, originals out)"


class SQLiteAdmin(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(self, config: BrokerConfig, clock: Clock = time.time) -> None:
        self.broker = BrokerFile(config, clock, access=Access.READ)  # a look never creates or changes it
        self._config = config
        self._clock = clock
        self._writer: BrokerFile | None = None

    def _writing(self, action: str) -> BrokerFile:
        """The file opened for writing, on the first write; never in a read-only profile (whose gate
        refuses every write before it gets here)."""
        if self._config.read_only:
            raise ReadOnly(action)
        if self._writer is None:
            self._writer = BrokerFile(self._config, self._clock, access=Access.WRITE)
        return self._writer

    def list_queues(self) -> QueueListing:
        with self.broker.read() as (db, now_ms):
            stats = queue_stats(db, now_ms)
        return QueueListing(tuple(stats), broker=f"SQLite file {self.broker.file.path}")

    def queue_exists(self, queue: str) -> bool:
        with self.broker.read() as (db, _):
            return not rows.missing_queues(db, [queue])

    def peek(self, queue: str, count: int) -> PeekResult:
        """The first ``count`` messages in queue order (due ones first, then delayed and held ones), read
        and left exactly as they were."""
        with self.broker.read() as (db, _):
            rows.require_queues(db, self.broker.where, queue)
            found = db.execute(
                f"SELECT {rows.COLUMNS} FROM tqb_messages WHERE queue = ? ORDER BY available_ms, id LIMIT ?",
                (queue, count),
            ).fetchall()
        return PeekResult(queue, tuple(rows.to_message(row) for row in found), self.capabilities.peek_cost)

    def open_transfer(self, queue: str) -> TransferSession:
        if self._config.read_only:
            return SQLiteLook(self.broker, queue)
        return SQLiteTransferSession(self._writing("transfer"), queue)

    def purge(self, queue: str) -> int:
        """Drop every message no consumer holds (as RabbitMQ keeps unacked ones), in one statement."""
        with self._writing("purge").write() as tx:
            rows.require_queues(tx.db, self.broker.where, queue)
            cursor = tx.db.execute(
                f"DELETE FROM tqb_messages WHERE queue = ? AND {UNHELD}", (queue, tx.now_ms)
            )
        return cursor.rowcount

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport:
        """Move what no consumer holds, oldest first, in one transaction: the copies (at the tail of
        ``target``, headers untouched) and the removal of the originals commit together or not at all."""
        with self._writing("move").write() as tx:
            rows.require_queues(tx.db, self.broker.where, source, target)
            chosen = (
                f"SELECT id FROM tqb_messages WHERE queue = :source AND {UNHELD.replace('?', ':now')}"
                " ORDER BY available_ms, id LIMIT :limit"
            )
            values = {
                "source": source,
                "target": target,
                "now": tx.now_ms,
                "limit": -1 if limit is None else limit,
            }
            moved = tx.db.execute(
                "INSERT INTO tqb_messages"
                " (queue, job_id, body, headers, properties, enqueued_ms, available_ms)"
                " SELECT :target, job_id, body, headers, properties, :now, :now FROM tqb_messages"
                f" WHERE id IN ({chosen}) ORDER BY available_ms, id",
                values,
            ).rowcount
            tx.db.execute(f"DELETE FROM tqb_messages WHERE id IN ({chosen})", values)
            tx.published[target] += moved
            tx.acked[source] += moved
        return ActionReport(
            action="move", source=source, target=target, matched=moved, moved=moved, detail=SERVER_SIDE
        )

    def close(self) -> None:
        self.broker.close()
        if self._writer is not None:
            self._writer.close()
