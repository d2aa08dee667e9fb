"""Reading other frameworks' queues without taking anything: a peek, and a session that only reads.

Messages are handed over as stored: a kombu JSON envelope or a Sidekiq job as the body; an RQ job's hash
fields as headers (with its latest result's, where RQ keeps the error) and its ``data`` as the body; a
stream entry's fields as headers, and as a JSON object for the body.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tqadmin.connect.redis_client import text
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.sessions import CappedSession
from tqadmin.plugin.models import Message
from tqadmin_redis.connection import Connection
from tqadmin_redis.entries import entry_id_ms
from tqadmin_redis.foreign_kinds import RQ, Foreign


class ForeignSession(CappedSession):
    """A transfer session that only reads: export and dead-letter groups work on another framework's
    queue; a copy to it, an ack or a delete is refused with the queue's reason, before anything changed."""

    def __init__(self, conn: Connection, foreign: Foreign) -> None:
        super().__init__(depth(conn, foreign))
        self._conn = conn
        self._foreign = foreign

    def take(self, want: int) -> Sequence[Delivery]:
        messages = read(self._conn, self._foreign, self.fetched, want)
        if not messages:
            self.passed_over(want)  # a queue that shrank meanwhile ends the read
        return [Delivery(m, None) for m in messages]

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        raise self._foreign.refusal()

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        raise self._foreign.refusal()

    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Nothing was taken: nothing to give back."""

    def close(self) -> None:
        """Nothing is held."""


def depth(conn: Connection, f: Foreign) -> int:
    with conn.translated():
        if f.key_type == "stream":
            return int(conn.client.xlen(f.keys[0]))
        count = conn.client.zcard if f.key_type == "zset" else conn.client.llen
        return sum(int(count(key)) for key in f.keys)


def read(conn: Connection, f: Foreign, offset: int, count: int) -> tuple[Message, ...]:
    """Up to ``count`` jobs from the ``offset``-th oldest on, nothing taken (the framework's own
    consumers may move the others meanwhile: a read, not a snapshot)."""
    with conn.translated():
        if f.key_type == "stream":
            entries = conn.client.xrange(f.keys[0], count=offset + count)[offset:]
            return tuple(_stream_message(i, fields) for i, fields in entries)
        raw: list[bytes] = []
        for key in f.keys:
            size = int(conn.client.zcard(key) if f.key_type == "zset" else conn.client.llen(key))
            if offset >= size:
                offset -= size
                continue
            end = min(size, offset + count - len(raw)) - 1
            if f.key_type == "zset":
                raw += conn.client.zrange(key, offset, end)
            elif f.newest_left:
                raw += list(reversed(conn.client.lrange(key, -1 - end, -1 - offset)))
            else:
                raw += conn.client.lrange(key, offset, end)
            offset = 0
            if len(raw) >= count:
                break
        if f.kind == RQ:
            return _rq_jobs(conn, [text(r) for r in raw])
    return tuple(Message(body=bytes(r)) for r in raw)


def _rq_jobs(conn: Connection, job_ids: Sequence[str]) -> tuple[Message, ...]:
    pipe = conn.client.pipeline(transaction=False)
    for job_id in job_ids:
        pipe.hgetall(f"rq:job:{job_id}")
        pipe.xrevrange(f"rq:results:{job_id}", count=1)
    replies = pipe.execute(raise_on_error=False)
    messages = []
    for index, job_id in enumerate(job_ids):
        fields, results = replies[2 * index], replies[2 * index + 1]
        fields = fields if isinstance(fields, dict) else {}
        headers = {text(k): _header_value(v) for k, v in fields.items() if k != b"data"}
        if isinstance(results, list) and results:
            headers.update({text(k): _header_value(v) for k, v in results[0][1].items()})
        messages.append(Message(body=bytes(fields.get(b"data", b"")), headers=headers, id=job_id))
    return tuple(messages)


def _stream_message(entry_id: bytes, fields: dict[bytes, bytes]) -> Message:
    headers = {text(k): _header_value(v) for k, v in fields.items()}
    body = json.dumps({k: v if isinstance(v, str) else text(v) for k, v in headers.items()}).encode()
    return Message(
        body=body, headers=headers, id=text(entry_id), enqueued_at=entry_id_ms(text(entry_id)) / 1000
    )


def _header_value(value: bytes) -> str | bytes:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value
