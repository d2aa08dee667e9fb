"""The broker's file: its tables (beside the state store's, which are its own), and its clock.

The broker's clock never runs backwards. Every write transaction moves a high-water mark to the wall clock
when the wall clock is later, and keeps it otherwise: a clock stepped back by S seconds holds the broker's
time still for S seconds rather than turning ready messages into "not yet due", putting new messages ahead
of old ones, or letting one lease end before the lease it replaced. A forward step passes through (leases
end early; the token on every claimed row fences the late holder out).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tqadmin.files.access import Access
from tqadmin.files.sqlite import SQLiteFile, path_of
from tqadmin.plugin.base import BrokerConfig

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tqb_queues (name TEXT PRIMARY KEY, dlq TEXT, created_ms INTEGER NOT NULL)",
    # available_ms: the due time of a waiting message, the lease end of a claimed one (claimed: consumer set).
    # AUTOINCREMENT: an id is never reused, so (id, deliveries, consumer) names one delivery for ever.
    "CREATE TABLE IF NOT EXISTS tqb_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL,"
    " job_id TEXT, body BLOB NOT NULL, headers TEXT, properties TEXT, enqueued_ms INTEGER NOT NULL,"
    " available_ms INTEGER NOT NULL, consumer TEXT, deliveries INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS tqb_messages_due ON tqb_messages (queue, available_ms, id)",
    "CREATE INDEX IF NOT EXISTS tqb_messages_held ON tqb_messages (queue, available_ms)"
    " WHERE consumer IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS tqb_rates (queue TEXT NOT NULL, second INTEGER NOT NULL,"
    " published INTEGER NOT NULL DEFAULT 0, delivered INTEGER NOT NULL DEFAULT 0,"
    " acked INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (queue, second)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS tqb_consumers (id TEXT PRIMARY KEY, queue TEXT NOT NULL,"
    " seen_ms INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tqb_clock (one INTEGER PRIMARY KEY CHECK (one = 1), now_ms INTEGER NOT NULL)",
)

Clock = Callable[[], float]

# Every writer (publisher, consumer, admin) prunes, at its first write and then once a PRUNE_S of broker
# time: so ``tqb_rates`` holds at most (KEEP_RATES_S + PRUNE_S) rows per queue, however the file is used.
PRUNE_S = 60
KEEP_RATES_S = 300  # the listing reads the last RATE_WINDOW_S; a few minutes are kept for a closer look
FORGET_CONSUMER_S = 3600


@dataclass(slots=True)
class Tx:
    """One write transaction: its connection, the broker's time, and the counters it bumps (rates)."""

    db: sqlite3.Connection
    now_ms: int
    published: Counter[str] = field(default_factory=Counter)
    delivered: Counter[str] = field(default_factory=Counter)
    acked: Counter[str] = field(default_factory=Counter)


class BrokerFile:
    """The SQLite file of one ``sqlite:///PATH`` broker URL. ``access``: the transport face (publish,
    consume) creates a file that does not exist yet, and the broker's tables in it (``CREATE``); the admin
    face's writes need the file to exist (``WRITE``); its reads open it read-only (``READ``), which changes
    nothing and reads a file without the broker's tables as a broker without queues."""

    def __init__(self, config: BrokerConfig, clock: Clock = time.time, *, access: Access) -> None:
        self.file = SQLiteFile(
            path_of(config.url),
            url=config.url,
            what="SQLite broker",
            access=access,
            schema=SCHEMA,
            timeout_s=config.timeout_s,
        )
        self.clock = clock
        self._pruned_ms: int | None = None  # broker time of this process's last pruning

    @property
    def where(self) -> str:
        return self.file.where

    def wall_ms(self) -> int:
        return int(self.clock() * 1000)

    @contextlib.contextmanager
    def write(self) -> Iterator[Tx]:
        with self.file.write() as db:
            (mark,) = db.execute("SELECT COALESCE(MAX(now_ms), 0) FROM tqb_clock").fetchone()
            tx = Tx(db, max(self.wall_ms(), mark))
            yield tx
            db.execute(
                "INSERT INTO tqb_clock (one, now_ms) VALUES (1, ?)"
                " ON CONFLICT (one) DO UPDATE SET now_ms = excluded.now_ms",
                (tx.now_ms,),
            )
            _count(tx)
            self._prune(tx)

    @contextlib.contextmanager
    def read(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A read transaction (one snapshot) and the broker's time; no writer waits for it."""
        with self.file.read() as db:
            (mark,) = db.execute("SELECT COALESCE(MAX(now_ms), 0) FROM tqb_clock").fetchone()
            yield db, max(self.wall_ms(), mark)

    def _prune(self, tx: Tx) -> None:
        """Drop rate counters and consumer rows too old to matter, once a ``PRUNE_S`` (broker time)."""
        if self._pruned_ms is not None and tx.now_ms - self._pruned_ms < PRUNE_S * 1000:
            return
        self._pruned_ms = tx.now_ms
        tx.db.execute("DELETE FROM tqb_rates WHERE second < ?", (tx.now_ms // 1000 - KEEP_RATES_S,))
        tx.db.execute("DELETE FROM tqb_consumers WHERE seen_ms < ?", (tx.now_ms - FORGET_CONSUMER_S * 1000,))

    def close(self) -> None:
        self.file.close()


def _count(tx: Tx) -> None:
    """Add the transaction's counts to the current second's bucket of each queue (rates come from these)."""
    second = tx.now_ms // 1000
    for queue in {*tx.published, *tx.delivered, *tx.acked}:
        tx.db.execute(
            "INSERT INTO tqb_rates (queue, second, published, delivered, acked) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (queue, second) DO UPDATE SET published = published + excluded.published,"
            " delivered = delivered + excluded.delivered, acked = acked + excluded.acked",
            (queue, second, tx.published[queue], tx.delivered[queue], tx.acked[queue]),
        )
