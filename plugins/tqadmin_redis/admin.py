"""The admin face of Redis: figures from one pipeline of ``XINFO`` calls, messages through the streams.

tqadmin's own queues come from the registry set; queues of other frameworks (:mod:`.foreign`) are listed
beside them, read-only. A write addressed to one of those raises :class:`QueueReadOnly` with the reason
and the framework's own tool to use instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from tqadmin.connect.redis_client import text
from tqadmin.errors import QueueNotFound, QueueReadOnly
from tqadmin.plugin.base import BrokerAdmin, BrokerConfig, TransferSession
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import ActionReport, Alarm, PeekResult, QueueListing, QueueStats, dlq_name
from tqadmin.plugin.workers import WorkerReading
from tqadmin_redis import scripts
from tqadmin_redis.alarms import alarms_of
from tqadmin_redis.capabilities import CAPABILITIES, FOREIGN_PEEK_COST, PEEK_COST
from tqadmin_redis.connection import Connection
from tqadmin_redis.entries import to_message
from tqadmin_redis.foreign import ForeignQueues
from tqadmin_redis.foreign_reading import ForeignSession
from tqadmin_redis.foreign_workers import ForeignWorkers
from tqadmin_redis.listing import Rates, StreamInfo, first_entry_age, queue_stats
from tqadmin_redis.naming import FOREIGN_PREFIXES, GROUP, RELEASED, QueueKeys, same_slot
from tqadmin_redis.transfer import RedisTransferSession

DEFAULT_LEASE_MS = 30_000  # the worker's default --lease: for consumers that registered none
MOVE_CHUNK = 1000


class RedisAdmin(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(self, config: BrokerConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._conn: Connection | None = None
        self._clock = clock
        self._rates = Rates()
        self._foreign: ForeignQueues | None = None
        self._foreign_workers: ForeignWorkers | None = None

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            self._conn = Connection.open(self.config)
        return self._conn

    @property
    def foreign(self) -> ForeignQueues:
        if self._foreign is None:
            self._foreign = ForeignQueues(self.conn, self.conn.layout.stream_pattern(), self._clock)
        return self._foreign

    def framework_workers(self) -> WorkerReading:
        """RQ's, Sidekiq's and Dramatiq's workers from their registries here (:mod:`.foreign_workers`)."""
        if self._foreign_workers is None:
            self._foreign_workers = ForeignWorkers(
                self.conn, self._clock, events=self.config if self.config.celery_events else None
            )
        return self._foreign_workers.read()

    # -- listing -----------------------------------------------------------------------------------------

    def list_queues(self) -> QueueListing:
        """tqadmin's queues and their DLQs in one pipeline, the foreign ones (found by a cached SCAN) in
        another, and the alarms from each master's INFO."""
        conn = self.conn
        with conn.translated():
            sec, usec = conn.client.time()
            now_s = sec + usec / 1_000_000
            names = sorted(text(n) for n in conn.client.smembers(conn.layout.registry))
        own: list[QueueStats] = []
        infos = self._stream_infos([q for name in names for q in (name, dlq_name(name))])
        for name in names:
            dlq = infos[dlq_name(name)]
            dlq_depth = int(dlq.stream.get("length", 0)) if dlq.stream is not None else None
            dlq_age = first_entry_age(dlq.stream, now_s)
            for shown, info, depth in ((name, infos[name], dlq_depth), (dlq_name(name), dlq, None)):
                stat = queue_stats(
                    shown,
                    info,
                    dlq_depth=depth,
                    now_s=now_s,
                    default_lease_ms=DEFAULT_LEASE_MS,
                    rates=self._rates,
                    dlq_oldest_age_s=dlq_age if depth is not None else None,
                )
                if stat is not None:
                    own.append(stat)
        foreign = self.foreign.stats(now_s)
        return QueueListing(
            tuple(own + foreign), tuple(self._alarms()), broker=conn.where.removeprefix("Redis broker ")
        )

    def _stream_infos(self, names: list[str]) -> dict[str, StreamInfo]:
        if not names:
            return {}
        layout = self.conn.layout
        with self.conn.translated():
            pipe = self.conn.client.pipeline(transaction=False)
            for name in names:
                keys = layout.queue(name)
                pipe.xinfo_stream(keys.stream)
                pipe.xinfo_groups(keys.stream)
                pipe.xinfo_consumers(keys.stream, GROUP)
                pipe.zcard(keys.delay)
                pipe.hgetall(keys.consumers)
            replies = pipe.execute(raise_on_error=False)
        ages = self.conn.run(
            [
                (scripts.OLDEST_TAKEABLE, (keys.stream, keys.delay), (GROUP, RELEASED))
                for keys in map(layout.queue, names)
            ]
        )
        infos = {}
        for index, name in enumerate(names):
            stream, groups, consumers, delayed, leases = replies[5 * index : 5 * index + 5]
            infos[name] = StreamInfo(
                takeable_ms=int(ages[index]),
                stream=None if isinstance(stream, Exception) else stream,
                groups=[] if isinstance(groups, Exception) else groups,
                consumers=[] if isinstance(consumers, Exception) else consumers,
                delayed=0 if isinstance(delayed, Exception) else int(delayed),
                leases_ms={} if isinstance(leases, Exception) else leases,
            )
        return infos

    def _alarms(self) -> list[Alarm]:
        import redis

        found = []
        with self.conn.translated():
            for master in self.conn.masters():
                kwargs = master.connection_pool.connection_kwargs
                node = f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
                info = master.info()
                try:
                    save: str | None = text(master.config_get("save").get("save", ""))
                except redis.ResponseError:  # CONFIG is often disabled on managed Redis
                    save = None
                found += alarms_of(node, info, save)
        return found

    def queue_exists(self, queue: str) -> bool:
        if self.foreign.find(queue) is not None:
            return True
        with self.conn.translated():
            return bool(self.conn.client.exists(self.conn.layout.queue(queue).stream))

    # -- messages ----------------------------------------------------------------------------------------

    def peek(self, queue: str, count: int) -> PeekResult:
        foreign = self.foreign.find(queue)
        if foreign is not None:
            messages = self.foreign.peek(foreign, count)
            return PeekResult(queue, messages, f"{FOREIGN_PEEK_COST}; read-only: {foreign.read_only}")
        keys = self._own(queue)
        with self.conn.translated():
            if not self.conn.client.exists(keys.stream):
                raise QueueNotFound(f"{self.conn.where} has no queue {queue!r}")
            entries = self.conn.client.xrange(keys.stream, count=count)
            counts = self._delivery_counts(keys, [text(entry_id) for entry_id, _ in entries])
        messages = tuple(to_message(text(i), fields, counts.get(text(i), 0)) for i, fields in entries)
        return PeekResult(queue, messages, PEEK_COST)

    def _delivery_counts(self, keys: QueueKeys, ids: list[str]) -> dict[str, int]:
        """Delivery counts of the entries among ``ids`` that are pending (in flight or given back)."""
        if not ids:
            return {}
        pending = self.conn.client.xpending_range(keys.stream, GROUP, ids[0], ids[-1], len(ids))
        return {text(p["message_id"]): int(p["times_delivered"]) for p in pending}

    def open_transfer(self, queue: str) -> TransferSession:
        """A session on one of tqadmin's queues; on another framework's, one that only reads (export,
        dead-letter groups) and refuses every write with the reason."""
        foreign = self.foreign.find(queue)
        if foreign is not None:
            return ForeignSession(self.conn, foreign)
        return RedisTransferSession(self.conn, self._own(queue), self._refuse_foreign)

    def purge(self, queue: str) -> int:
        keys = self._own(queue)
        conn = self.conn
        left = int(conn.run_one((scripts.TAKEABLE_COUNT, (keys.stream,), (GROUP, RELEASED))))
        purged = 0
        while left > 0:
            dropped = int(
                conn.run_one((scripts.PURGE, (keys.stream,), (GROUP, RELEASED, min(MOVE_CHUNK, left))))
            )
            if not dropped:
                break
            purged += dropped
            left -= dropped
        return purged

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        """One script per chunk of entries: on one Redis between any two queues, on a cluster between two
        queues of one hash tag (a queue and its DLQ); other pairs on a cluster take the client path (copy
        confirmed, then ack)."""
        src = self._own(source)
        self._refuse_foreign(target)
        if self.conn.cluster and not same_slot(source, target):
            return None
        dst = self.conn.layout.queue(target)
        conn = self.conn
        with conn.translated():
            if not conn.client.exists(dst.stream):
                raise QueueNotFound(f"{conn.where} has no queue {target!r}")
        count = int(conn.run_one((scripts.TAKEABLE_COUNT, (src.stream,), (GROUP, RELEASED))))
        if limit is not None:
            count = min(count, limit)
        moved = 0
        while moved < count:
            step = int(
                conn.run_one(
                    (
                        scripts.MOVE,
                        (src.stream, dst.stream),
                        (GROUP, RELEASED, min(MOVE_CHUNK, count - moved)),
                    )
                )
            )
            if step == -1:
                raise QueueNotFound(f"{conn.where} has no queue {target!r}")
            if step == 0:
                break
            moved += step
        not_done = (
            (f"{count - moved} message(s) were taken by consumers of {source} meanwhile",)
            if moved < count
            else ()
        )
        return ActionReport(
            action="move",
            source=source,
            target=target,
            matched=count,
            moved=moved,
            not_done=not_done,
            detail=f"server-side: a Lua script per {MOVE_CHUNK} entries",
        )

    def _own(self, queue: str) -> QueueKeys:
        """The keys of a queue tqadmin may write; another framework's queue is refused with its reason."""
        self._refuse_foreign(queue)
        return self.conn.layout.queue(queue)

    def read_only_reason(self, queue: str) -> str | None:
        """Another framework's queue is never written; nor is a name of that form not found (yet)."""
        if not queue.startswith(FOREIGN_PREFIXES):
            return None
        foreign = self.foreign.find(queue)
        if foreign is None:
            return "the name of another framework's queue on Redis, and tqadmin never writes those"
        return f"{foreign.read_only}; {foreign.instead}"

    def _refuse_foreign(self, queue: str) -> None:
        reason = self.read_only_reason(queue)
        if reason is not None:
            raise QueueReadOnly(queue, reason)

    def close(self) -> None:
        if self._foreign_workers is not None:
            self._foreign_workers.close()
            self._foreign_workers = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
