"""The transport face of Redis: declare a queue's streams and group, publish with XADD, consume.

A publish is confirmed when the primary answered the ``XADD``: as durable as that server's persistence
(``appendonly yes`` with ``appendfsync everysec`` loses at most a second of writes on a power cut; a
replica takes over without the writes it had not received). Work streams are never trimmed: ``MAXLEN``
would drop entries nobody has run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from tqadmin.connect.backoff import Backoff
from tqadmin.connect.redis_client import detail
from tqadmin.errors import ConnectError, Nacked, TqadminError
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.plugin.transport import (
    BrokerTransport,
    Consumer,
    Outcome,
    Outgoing,
    PublishResult,
    publish_options,
)
from tqadmin_redis.capabilities import TRANSPORT_CAPABILITIES
from tqadmin_redis.connection import Connection
from tqadmin_redis.entries import fields_of
from tqadmin_redis.naming import check_own_name

PUBLISH_ATTEMPTS = 4
PUBLISH_BACKOFF = Backoff(0.2, 1.6)  # between the attempts at one chunk: 0.1-0.2, 0.2-0.4, 0.4-0.8 s


class RedisTransport(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TRANSPORT_CAPABILITIES

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._conn: Connection | None = None
        self.retrying: Callable[[], Retrying] = lambda: Retrying(PUBLISH_BACKOFF)  # one per chunk sent

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            self._conn = Connection.open(self.config)
        return self._conn

    def declare(self, queue: str) -> None:
        """The queue's stream and its DLQ's, each with the group ``tq`` reading from the start, and the
        queue in the registry. Existing streams and groups are used as they are."""
        check_own_name(queue)
        layout = self.conn.layout
        for keys in (layout.queue(queue), layout.dlq(queue)):
            self.conn.ensure_group(keys.stream)
        with self.conn.translated():
            self.conn.client.sadd(layout.registry, queue)

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        """One pipeline per ``window`` messages."""
        publish_options(options, TRANSPORT_CAPABILITIES, "Redis")
        outcomes = [Outcome.FAILED] * len(messages)
        size = max(1, window)
        error: TqadminError | None = None
        for start in range(0, len(messages), size):
            chunk = messages[start : start + size]
            try:
                results = self._publish_chunk(chunk)
            except ConnectError as exc:
                for i in range(start, start + len(chunk)):
                    outcomes[i] = Outcome.UNKNOWN
                return PublishResult(tuple(outcomes), exc)
            for offset, result in enumerate(results):
                if isinstance(result, Exception):
                    error = error or Nacked(f"{self.conn.where} refused a message: {detail(result)}")
                else:
                    outcomes[start + offset] = Outcome.CONFIRMED
        return PublishResult(tuple(outcomes), error)

    def _publish_chunk(self, chunk: Sequence[Outgoing]) -> list[object]:
        """XADD every message in one pipeline; after a dropped connection the chunk is sent again (an
        entry added before the drop then arrives twice, which dedup absorbs: never a loss)."""
        layout = self.conn.layout
        retrying = self.retrying()
        while True:
            try:
                with self.conn.translated():
                    pipe = self.conn.client.pipeline(transaction=False)
                    for queue, message in chunk:
                        pipe.xadd(layout.queue(queue).stream, fields_of(message))
                    return list(pipe.execute(raise_on_error=False))
            except ConnectError:
                if retrying.failures + 1 == PUBLISH_ATTEMPTS:
                    raise
                retrying.failed_and_wait()

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        from tqadmin_redis.consuming import RedisConsumer

        layout = self.conn.layout
        return RedisConsumer(self.conn, layout.queue(queue), layout.dlq(queue), prefetch, lease_s)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
