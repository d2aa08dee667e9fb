"""Safe transfers on a Redis stream: the session is a consumer of the queue's group, like a worker.

At the start it takes over every entry left idle past its holder's lease (given back, or held by a worker or
session that died: a rerun after a killed replay finds the killed run's entries here), then reads the ready
entries in order. What it fetched is pending to it alone, so nobody else takes it; ``ack`` is the fenced
``XACK`` + ``XDEL``; ``release`` and ``close`` give entries back to ``tq:released``, from which the next
consumer's recovery pass takes them, oldest first (their ids, and so their order, never change).

The session renews what it holds while it runs (a long filtered scan keeps held messages for minutes); its
lease is :data:`ADMIN_LEASE_S`, so a session killed mid-run leaves its entries to others that long.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence

from tqadmin.connect.redis_client import text
from tqadmin.errors import QueueNotFound, Unroutable
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.sessions import HeldSession
from tqadmin.plugin.models import Message
from tqadmin_redis import scripts
from tqadmin_redis.connection import Connection
from tqadmin_redis.consuming import consumer_name
from tqadmin_redis.entries import flat_fields, to_message
from tqadmin_redis.naming import GROUP, RELEASED, QueueKeys

ADMIN_LEASE_S = 15.0
CHUNK = 1000

ForeignCheck = Callable[[str], None]
"""Raises QueueReadOnly when a queue name is another framework's (writes to it are refused)."""


class RedisTransferSession(HeldSession[str]):
    def __init__(self, conn: Connection, keys: QueueKeys, refuse_foreign: ForeignCheck) -> None:
        self._conn = conn
        self._keys = keys
        self._refuse_foreign = refuse_foreign
        self._name = "tqadmin:" + consumer_name()
        self._open()
        self._stale = deque(self._claim_stale())
        [takeable] = conn.run(
            [(scripts.TAKEABLE_COUNT, (keys.stream,), (GROUP, RELEASED))],
        )
        super().__init__(len(self._stale) + int(takeable), lease_s=ADMIN_LEASE_S)

    def _open(self) -> None:
        with self._conn.translated():
            if not self._conn.client.exists(self._keys.stream):
                raise QueueNotFound(f"{self._conn.where} has no queue {self._keys.name!r}")
        self._conn.ensure_group(self._keys.stream, create_stream=False)
        with self._conn.translated():
            pipe = self._conn.client.pipeline(transaction=False)
            pipe.hset(self._keys.consumers, self._name, int(ADMIN_LEASE_S * 1000))
            pipe.xgroup_createconsumer(self._keys.stream, GROUP, self._name)
            pipe.execute()

    def _claim_stale(self) -> list[str]:
        claimed: list[str] = []
        cursor = "-"
        while True:
            ids, cursor = self._conn.run_one(
                (
                    scripts.CLAIM_STALE,
                    (self._keys.stream, self._keys.consumers),
                    (GROUP, self._name, int(ADMIN_LEASE_S * 1000), CHUNK, cursor),
                )
            )
            claimed.extend(text(i) for i in ids)
            cursor = text(cursor)
            if cursor == "-":
                return claimed

    def take(self, want: int) -> Sequence[Delivery]:
        taken = self._stale_entries(want)
        if len(taken) < want:
            with self._conn.translated():
                read = self._conn.client.xreadgroup(
                    GROUP, self._name, {self._keys.stream: ">"}, count=want - len(taken)
                )
            for _stream, items in read or ():
                taken.extend(Delivery(to_message(i, f, 0), text(i)) for i, f in items if f)
        return taken

    def _stale_entries(self, want: int) -> list[Delivery]:
        """Entries taken over at the start, read now (one pipeline); those deleted meanwhile are dropped."""
        ids = [self._stale.popleft() for _ in range(min(want, len(self._stale)))]
        if not ids:
            return []
        with self._conn.translated():
            pipe = self._conn.client.pipeline(transaction=False)
            for entry_id in ids:
                pipe.xrange(self._keys.stream, entry_id, entry_id)
            found = pipe.execute()
        taken = [
            Delivery(to_message(entry_id, entries[0][1], 0), entry_id)
            for entry_id, entries in zip(ids, found, strict=True)
            if entries
        ]
        self.passed_over(len(ids) - len(taken))
        return taken

    def token(self, delivery: Delivery) -> str | None:
        return delivery.token if isinstance(delivery.token, str) else None

    def key(self, token: str) -> str:
        return token

    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        by_queue: dict[str, list[Message]] = defaultdict(list)
        for queue, message in items:
            by_queue[queue].append(message)
        for queue in by_queue:
            self._refuse_foreign(queue)
        calls = []
        for queue, messages in by_queue.items():
            stream = self._conn.layout.queue(queue).stream
            for start in range(0, len(messages), CHUNK):
                args: list[bytes | str | int] = []
                for message in messages[start : start + CHUNK]:
                    fields = flat_fields(message)
                    args += [len(fields), *fields]
                calls.append((scripts.PUBLISH_EXISTING, (stream,), args))
        for reply, (_, (stream,), _) in zip(self._conn.run(calls), calls, strict=True):
            if reply == -1:
                name = next(q for q in by_queue if self._conn.layout.queue(q).stream == stream)
                raise Unroutable(
                    f"{self._conn.where} has no queue {name!r} (create it, or pick another target);"
                    " the originals were left in place"
                )

    def remove(self, tokens: Sequence[str]) -> None:
        for start in range(0, len(tokens), CHUNK):
            self._conn.run_one(
                (scripts.ACK, (self._keys.stream,), (GROUP, self._name, *tokens[start : start + CHUNK]))
            )

    def give_back(self, tokens: Sequence[str]) -> None:
        for start in range(0, len(tokens), CHUNK):
            chunk = tokens[start : start + CHUNK]
            self._conn.run_one((scripts.RELEASE, (self._keys.stream,), (GROUP, self._name, RELEASED, *chunk)))

    def give_back_all(self, tokens: Sequence[str]) -> None:
        """What it holds, and the entries taken over at the start and never fetched."""
        left = [*tokens, *self._stale]
        self._stale.clear()
        self.give_back(left)

    def renew(self, tokens: Sequence[str]) -> None:
        for start in range(0, len(tokens), CHUNK):
            chunk = tokens[start : start + CHUNK]
            self._conn.run_one((scripts.EXTEND, (self._keys.stream,), (GROUP, self._name, *chunk)))

    def disconnect(self) -> None:
        self._conn.run_one(
            (scripts.FORGET_CONSUMER, (self._keys.stream, self._keys.consumers), (GROUP, self._name))
        )
