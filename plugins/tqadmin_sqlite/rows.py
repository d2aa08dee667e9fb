"""Messages as rows of ``tqb_messages``, and the statements both faces build on.

A claimed row carries the consumer that holds it and, in ``available_ms``, the end of its lease; a waiting
one its due time. Every statement that settles, extends or puts back a delivery names it by
``(id, deliveries, consumer)`` and changes nothing when that is no longer the row's: a delivery whose lease
passed to another consumer, or that was already settled, can never be acked, moved or extended again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tqadmin.errors import QueueNotFound, Unroutable
from tqadmin.plugin.models import Message
from tqadmin_sqlite.database import Tx

COLUMNS = "id, job_id, body, headers, properties, enqueued_ms, deliveries, available_ms"
Row = tuple[int, str | None, bytes, str | None, str | None, int, int, int]
# Not held by a live lease: waiting (due or not) or claimed by a consumer whose lease has ended.
UNHELD = "(consumer IS NULL OR available_ms <= ?)"


@dataclass(slots=True, eq=False)
class Token:
    """The plugin's handle on one claimed row. ``before_ms`` is where the row stood in its queue (its
    available time) when claimed, so a release puts it back in place. The lease's end is kept twice: ``until``
    on this process's monotonic clock (immune to the wall clock being set back) and ``until_ms`` on the
    broker's clock, the one every other consumer compares against (so a wall clock that runs ahead of the
    monotonic one cannot make a lease look live here after another consumer took the row)."""

    id: int
    deliveries: int
    consumer: str
    queue: str
    before_ms: int
    until: float = 0.0
    until_ms: int = 0

    def leased(self, monotonic: float, wall_ms: int) -> bool:
        """Whether the lease is still this consumer's, by both clocks."""
        return monotonic < self.until and wall_ms < self.until_ms

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.id, self.deliveries, self.consumer)


def encode_map(values: Mapping[str, Any]) -> str | None:
    """Headers or properties as JSON text (``None`` when empty); values JSON cannot hold (bytes, dates,
    as an AMQP field table may carry) are stored the way an export writes them."""
    if not values:
        return None
    try:
        return json.dumps(dict(values), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(Message(b"", headers=values).to_json()["headers"], separators=(",", ":"))


def decode_map(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text else {}


def job_id_of(message: Message) -> str | None:
    """The message's id, or the ``id`` field of its job when it came without one (a raw publish)."""
    if message.id is not None:
        return message.id
    job = message.job()
    value = job.get("id") if job else None
    return str(value) if value is not None else None


def to_message(row: Row, *, delivered: bool = False) -> Message:
    """A row as the contract's message; ``delivered``: it was just claimed as a delivery (so the count read
    before the claim is one short)."""
    _, job_id, body, headers, properties, enqueued_ms, earlier, _ = row
    return Message(
        body=bytes(body),
        headers=decode_map(headers),
        properties=decode_map(properties),
        id=job_id,
        redelivered=earlier > 0,
        enqueued_at=enqueued_ms / 1000,
        delivery_count=earlier + int(delivered),
    )


def insert(tx: Tx, queue: str, messages: Iterable[Message], due_ms: int | None = None) -> int:
    """Append ``messages`` to ``queue``, due at ``due_ms`` (now when not given): at the tail of what is due
    by then. Returns how many."""
    due = tx.now_ms if due_ms is None else due_ms
    rows = [
        (queue, job_id_of(m), m.body, encode_map(m.headers), encode_map(m.properties), due, due)
        for m in messages
    ]
    tx.db.executemany(
        "INSERT INTO tqb_messages (queue, job_id, body, headers, properties, enqueued_ms, available_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    tx.published[queue] += len(rows)
    return len(rows)


def register(tx: Tx, queue: str, dlq: str | None) -> None:
    """Make ``queue`` known (listed even when empty), with its dead-letter queue when it has one."""
    tx.db.execute(
        "INSERT INTO tqb_queues (name, dlq, created_ms) VALUES (?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET dlq = COALESCE(tqb_queues.dlq, excluded.dlq)",
        (queue, dlq, tx.now_ms),
    )


def missing_queues(db: sqlite3.Connection, names: Iterable[str]) -> list[str]:
    """The names among ``names`` that are no queue of this broker."""
    return [
        name
        for name in sorted(set(names))
        if db.execute("SELECT 1 FROM tqb_queues WHERE name = ?", (name,)).fetchone() is None
    ]


def require_queues(db: sqlite3.Connection, where: str, *names: str) -> None:
    missing = missing_queues(db, names)
    if missing:
        raise QueueNotFound(f"the {where} has no queue {missing[0]!r}")


def require_routable(db: sqlite3.Connection, where: str, names: Iterable[str], hint: str) -> None:
    """Refuse to publish to a queue that does not exist, as a mandatory publish is refused on RabbitMQ."""
    missing = missing_queues(db, names)
    if missing:
        raise Unroutable(f"the {where} has no queue named {', '.join(missing[:3])} ({hint})")


def claim(tx: Tx, queue: str, consumer: str, limit: int, lease_ms: int, *, admin: bool = False) -> list[Row]:
    """Take up to ``limit`` rows of ``queue`` for ``consumer`` until ``lease_ms`` from now, in queue order.

    A worker takes rows that are due (an expired lease makes a row due again) and counts a delivery; an
    ``admin`` session (move, export, purge with backup) takes delayed rows too and counts none."""
    taken = UNHELD if admin else "available_ms <= ?"
    rows: list[Row] = tx.db.execute(
        f"SELECT {COLUMNS} FROM tqb_messages WHERE queue = ? AND {taken} ORDER BY available_ms, id LIMIT ?",
        (queue, tx.now_ms, limit),
    ).fetchall()
    if rows:
        ids = ",".join(str(row[0]) for row in rows)
        tx.db.execute(
            f"UPDATE tqb_messages SET consumer = ?, available_ms = ?, deliveries = deliveries + ?"
            f" WHERE id IN ({ids})",
            (consumer, tx.now_ms + lease_ms, int(not admin)),
        )
        if not admin:
            tx.delivered[queue] += len(rows)
    return rows


FENCE = " WHERE id = ? AND deliveries = ? AND consumer = ?"


def _fenced(tx: Tx, statement: str, calls: Iterable[tuple[Token, tuple[object, ...]]]) -> list[Token]:
    """Run ``statement`` (ending in :data:`FENCE`) once per token with its values before the fence; returns
    the tokens whose delivery it found no more (no row changed)."""
    return [token for token, values in calls if tx.db.execute(statement, (*values, *token.key)).rowcount != 1]


def delete(tx: Tx, tokens: Sequence[Token]) -> list[Token]:
    """Remove settled deliveries for good; returns those no longer held by their token."""
    lost = _fenced(tx, "DELETE FROM tqb_messages" + FENCE, ((t, ()) for t in tokens))
    for token in tokens:
        if token not in lost:
            tx.acked[token.queue] += 1
    return lost


def put_back(tx: Tx, tokens: Sequence[Token]) -> list[Token]:
    """Release deliveries to where they stood in their queue."""
    statement = "UPDATE tqb_messages SET consumer = NULL, available_ms = ?" + FENCE
    return _fenced(tx, statement, ((t, (t.before_ms,)) for t in tokens))


def extend(tx: Tx, tokens: Sequence[Token], lease_ms: int) -> list[Token]:
    """Hold deliveries ``lease_ms`` more from now; returns those already given to someone else."""
    until = tx.now_ms + lease_ms
    return _fenced(tx, "UPDATE tqb_messages SET available_ms = ?" + FENCE, ((t, (until,)) for t in tokens))


def replace(tx: Tx, token: Token, target: str, copy: Message, due_ms: int) -> bool:
    """Settle a delivery by putting ``copy`` in ``target`` due at ``due_ms``, in the same transaction: the
    copy exists exactly when the original is gone. ``False`` (nothing written) when the delivery is lost."""
    if delete(tx, [token]):
        return False
    insert(tx, target, [copy], due_ms)
    return True
