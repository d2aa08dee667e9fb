"""Safe transfers on the SQLite broker: rows taken under a session lease, copies in before originals out.

A fetched row is claimed by the session (not counted as a delivery: an admin's look is not a worker's), so
no worker takes it meanwhile and the session never fetches it twice. The session's lease is renewed while it
works; if the admin process dies, its rows come back by themselves when the lease ends. Closing the session
puts back every row it did not ack, each at its old place in the queue.

A read-only profile's session is a look (:class:`SQLiteLook`): a plain ``SELECT`` per batch on the file opened
read-only, holding nothing, so that an export, ``dead-letters`` or a dry run writes nothing at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from tqadmin.errors import BrokerError, ReadOnly
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.sessions import CappedSession, HeldSession
from tqadmin.plugin.models import Message
from tqadmin_sqlite import rows
from tqadmin_sqlite.consuming import new_consumer_id
from tqadmin_sqlite.database import BrokerFile
from tqadmin_sqlite.rows import Token

SESSION_LEASE_S = 120.0


def _count_at_start(broker: BrokerFile, queue: str) -> int:
    """Every message of the queue when a session opens, held by a consumer or not (a held one is fetched
    only if its holder lets it go); :class:`~tqadmin.errors.QueueNotFound` for a queue that is not there."""
    with broker.read() as (db, _):
        rows.require_queues(db, broker.where, queue)
        (count,) = db.execute("SELECT COUNT(*) FROM tqb_messages WHERE queue = ?", (queue,)).fetchone()
    return int(count)


class SQLiteTransferSession(HeldSession[Token]):
    takes_delayed = True  # a row waiting out its retry delay is a row of the queue like any other

    def __init__(self, broker: BrokerFile, queue: str, lease_s: float = SESSION_LEASE_S) -> None:
        self._broker = broker
        self._queue = queue
        self._lease_ms = round(lease_s * 1000)
        self._id = new_consumer_id("admin")
        super().__init__(_count_at_start(broker, queue), lease_s=lease_s)

    def take(self, want: int) -> Sequence[Delivery]:
        with self._broker.write() as tx:
            claimed = rows.claim(tx, self._queue, self._id, want, self._lease_ms, admin=True)
        return [
            Delivery(rows.to_message(row), Token(row[0], row[6], self._id, self._queue, before_ms=row[7]))
            for row in claimed
        ]

    def token(self, delivery: Delivery) -> Token | None:
        return delivery.token if isinstance(delivery.token, Token) else None

    def key(self, token: Token) -> int:
        return token.id

    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        with self._broker.write() as tx:
            hint = "create it, or pick another target; the originals were left in place"
            rows.require_routable(tx.db, self._broker.where, (queue for queue, _ in items), hint)
            for queue, message in items:
                rows.insert(tx, queue, [message])

    def remove(self, tokens: Sequence[Token]) -> None:
        with self._broker.write() as tx:
            lost = rows.delete(tx, tokens)
        if lost:
            raise BrokerError(
                f"{len(lost)} message(s) of {self._queue!r} were taken back from this session before it"
                " removed them (its lease ended): they were copied and are still in the source too"
            )

    def give_back(self, tokens: Sequence[Token]) -> None:
        with self._broker.write() as tx:
            rows.put_back(tx, tokens)

    def renew(self, tokens: Sequence[Token]) -> None:
        """Every row the session holds, for another lease, in one statement."""
        with self._broker.write() as tx:
            tx.db.execute(
                "UPDATE tqb_messages SET available_ms = ? WHERE queue = ? AND consumer = ?",
                (tx.now_ms + self._lease_ms, self._queue, self._id),
            )


class SQLiteLook(CappedSession):
    """A session that only reads: every row of the queue that no consumer holds, up to the count at start,
    in the order the rows were written (by id, which is never reused, so each is read once even though
    every batch is a read of its own), none of them leased, counted or moved. It refuses to publish or ack
    (a read-only profile's gate refuses those actions before they start); a release has nothing to give
    back."""

    takes_delayed = True

    def __init__(self, broker: BrokerFile, queue: str) -> None:
        self._broker = broker
        self._queue = queue
        self._after = 0  # id of the last row read
        super().__init__(_count_at_start(broker, queue))

    def take(self, want: int) -> Sequence[Delivery]:
        with self._broker.read() as (db, now_ms):
            found = db.execute(
                f"SELECT {rows.COLUMNS} FROM tqb_messages WHERE queue = ? AND id > ? AND {rows.UNHELD}"
                " ORDER BY id LIMIT ?",
                (self._queue, self._after, now_ms, want),
            ).fetchall()
        if found:
            self._after = found[-1][0]
        return [Delivery(rows.to_message(row), None) for row in found]

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        raise ReadOnly("publish")

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        raise ReadOnly("removing messages")

    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Nothing was taken: nothing to give back."""

    def close(self) -> None:
        """Nothing is held and each read closed its own connection."""
