"""The transport face of the SQLite broker: declare, publish in confirmed batches, consume.

A publish is confirmed when its transaction commits: each batch of ``window`` messages is one transaction,
so a batch is stored whole or not at all (a failed batch is ``failed``, never ``unknown``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import ClassVar

from tqadmin.errors import TqadminError
from tqadmin.files.access import Access
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.transport import (
    BrokerTransport,
    Consumer,
    Outcome,
    Outgoing,
    PublishResult,
    publish_options,
)
from tqadmin_sqlite import SQLitePlugin, rows
from tqadmin_sqlite.capabilities import TRANSPORT_CAPABILITIES
from tqadmin_sqlite.consuming import SQLiteConsumer
from tqadmin_sqlite.database import BrokerFile, Clock

dlq_name = SQLitePlugin().dlq_name


class SQLiteTransport(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TRANSPORT_CAPABILITIES

    def __init__(self, config: BrokerConfig, clock: Clock = time.time) -> None:
        self.broker = BrokerFile(config, clock, access=Access.CREATE)

    def declare(self, queue: str) -> None:
        with self.broker.write() as tx:
            rows.register(tx, queue, dlq_name(queue))
            rows.register(tx, dlq_name(queue), None)

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        """One transaction per ``window`` messages."""
        publish_options(options, TRANSPORT_CAPABILITIES, "the SQLite broker")
        outcomes: list[Outcome] = []
        error: TqadminError | None = None
        step = max(1, window)
        for start in range(0, len(messages), step):
            batch = messages[start : start + step]
            try:
                self._publish_batch(batch)
                outcomes += [Outcome.CONFIRMED] * len(batch)
            except TqadminError as exc:
                error = error or exc
                outcomes += [Outcome.FAILED] * len(batch)
        return PublishResult(tuple(outcomes), error)

    def _publish_batch(self, batch: Sequence[Outgoing]) -> None:
        with self.broker.write() as tx:
            queues = (queue for queue, _ in batch)
            rows.require_routable(tx.db, self.broker.where, queues, "publish with --queue declares it")
            by_queue: dict[str, list[Outgoing]] = {}
            for outgoing in batch:
                by_queue.setdefault(outgoing[0], []).append(outgoing)
            for queue, items in by_queue.items():
                rows.insert(tx, queue, (message for _, message in items))

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        self.declare(queue)
        return SQLiteConsumer(self.broker, queue, dlq_name(queue), prefetch, lease_s)

    def close(self) -> None:
        self.broker.close()
