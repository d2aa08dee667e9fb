"""Other frameworks' workers on this Redis, read from the registries they keep and never written.

Reads only: SMEMBERS, HGETALL, PTTL, ZRANGE, HMGET, GET (Sidekiq's global counters, where a Sidekiq
process is registered), and a SCAN for Dramatiq's namespaces (kept for
:data:`~tqadmin_redis.foreign.DISCOVERY_TTL_S`, as the foreign queues are). None of the frameworks' own
registry APIs is called: RQ's and Sidekiq's clean up as they read (RQ removes stale members, Sidekiq SREMs
the processes whose hash is gone, behind a ``SET NX`` of its own). A registry that answers with an error
(its key of another type) is named in the reading and the other frameworks still listed; one worker whose
keys cannot be read (a key of another type, a field its framework would not write) is skipped and named
(``sidekiq process web-1:12:ab: info.queues is not a list``) and the other workers still listed.

Celery's task events (the profile's ``celery_events``) are heard by a listener with a connection of its
own, kept by :data:`~tqadmin.plugin.kit.listening.KEPT` beyond the admin that started it: an admin dropped
after a read error and opened again finds the same figures.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.connect.redis_client import text
from tqadmin.frameworks import dramatiq_workers, rq_workers, sidekiq_workers
from tqadmin.frameworks.celery_events import CeleryWatch, celery_node
from tqadmin.frameworks.summary import CELERY, DRAMATIQ, RQ, SIDEKIQ
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.kit.listening import KEPT, Deliver, Listener
from tqadmin.plugin.workers import ForeignWorker, Skipped, WorkerReading
from tqadmin_redis.connection import Connection
from tqadmin_redis.foreign import DISCOVERY_TTL_S, KOMBU_SEP, SCAN_COUNT

RQ_WORKERS = "rq:workers"
CELERY_PIDBOX = "_kombu.binding.celery.pidbox"
PIDBOX_SUFFIX = ".celery.pidbox"
RQ_JOB_FIELDS = ("description", "origin", "started_at")


class EventStream:
    """Celery's events on one Redis: the watch its kept listener feeds through a connection of its own."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self.watch = CeleryWatch()
        self.listener = Listener("Celery events on Redis", self._subscribe, self.watch.feed_envelope)

    def close(self) -> None:
        self.listener.close()

    def _subscribe(self, stop: threading.Event, deliver: Deliver) -> None:
        """Celery publishes its events on Redis as fanout messages: ``/<db>.celeryev/<routing key>``."""
        conn = Connection.open(self._config)
        try:
            with conn.translated():
                client = conn.client
                db = 0 if conn.cluster else client.connection_pool.connection_kwargs.get("db", 0)
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                try:
                    pubsub.psubscribe(f"/{db}.celeryev/*")
                    while not stop.is_set():
                        message = pubsub.get_message(timeout=0.5)
                        if message is not None and message.get("type") == "pmessage":
                            deliver(message["data"])
                finally:
                    pubsub.close()
        finally:
            conn.close()


class ForeignWorkers:
    def __init__(
        self,
        conn: Connection,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        *,
        events: BrokerConfig | None = None,
    ) -> None:
        """``events``: the broker's config where the profile listens to Celery's task events."""
        self._conn = conn
        self._clock = clock
        self._wall = wall
        self._key = ("celery events on Redis", events.url if events is not None else "")
        self._events = KEPT.take(self._key, lambda: EventStream(events)) if events is not None else None
        self._layout: dict[str, tuple[str, ...]] = {}
        self._found_at: float | None = None

    def read(self) -> WorkerReading:
        import redis

        workers: list[ForeignWorker] = []
        unreadable: list[str] = []
        skipped = Skipped()
        readers: Sequence[tuple[str, Callable[[float, Skipped], list[ForeignWorker]]]] = (
            (RQ, self._rq),
            (SIDEKIQ, self._sidekiq),
            (DRAMATIQ, self._dramatiq),
            (CELERY, self._celery),
        )
        with self._conn.translated():
            for framework, reader in readers:
                try:
                    workers += reader(self._wall(), skipped)
                except redis.ResponseError as exc:
                    unreadable.append(f"{framework} workers: {exc}")
            totals = self._totals(workers, skipped)
        unreadable += skipped.lines()
        if self._events is None:
            return WorkerReading(tuple(workers), tuple(unreadable), totals=totals)
        watch = self._events.watch
        return WorkerReading(
            tuple(workers),
            tuple(unreadable),
            {CELERY: watch.task_stats()},
            {CELERY: watch.wait_from},
            {CELERY: watch.folded},
            totals=totals,
        )

    def close(self) -> None:
        """Let the listener go: :data:`~tqadmin.plugin.kit.listening.KEPT` keeps it for the next admin."""
        if self._events is not None:
            self._events = None
            KEPT.release(self._key)

    def _totals(self, workers: Sequence[ForeignWorker], skipped: Skipped) -> dict[str, int]:
        """Sidekiq's global counters (one pipeline of GETs, a read: two keys in two slots on a cluster)
        where a Sidekiq process is registered: the jobs every one of its processes ran
        (:func:`~tqadmin.frameworks.sidekiq_workers.finished`); a key of another type is named."""
        if not any(w.framework == SIDEKIQ for w in workers):
            return {}
        pipe = self._conn.client.pipeline(transaction=False)
        for key in sidekiq_workers.COUNTERS:
            pipe.get(key)
        values = pipe.execute(raise_on_error=False)
        total = skipped.decoded("sidekiq", "counters", sidekiq_workers.finished, *values)
        return {} if total is None else {SIDEKIQ: total}

    def _celery(self, now_s: float, _skipped: Skipped) -> list[ForeignWorker]:
        """Celery's workers by their control queues' bindings, and with task events on, from the events."""
        members = (text(m).split(KOMBU_SEP)[-1] for m in self._conn.client.smembers(CELERY_PIDBOX))
        nodes = sorted(m.removesuffix(PIDBOX_SUFFIX) for m in members if m.endswith(PIDBOX_SUFFIX))
        if self._events is None:
            return [celery_node(node) for node in nodes]
        self._events.listener.listening()
        return list(self._events.watch.workers(self._wall(), nodes))

    def _rq(self, now_s: float, skipped: Skipped) -> list[ForeignWorker]:
        client = self._conn.client
        keys = sorted(text(k) for k in client.smembers(RQ_WORKERS))
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(key)
            pipe.pttl(key)
            pipe.smembers(rq_workers.executions_key(key))
        replies = pipe.execute(raise_on_error=False)
        entries = [replies[i : i + 3] for i in range(0, len(replies), 3)]
        job_ids = [
            () if _failed(fields, executions) else rq_workers.current_job_ids(_text_keys(fields), executions)
            for fields, _ttl, executions in entries
        ]
        pipe = client.pipeline(transaction=False)
        for ids in job_ids:
            for job_id in ids:
                pipe.hmget(rq_workers.job_key(job_id), *RQ_JOB_FIELDS)
        answers = iter(pipe.execute(raise_on_error=False))
        job_replies = [{job_id: next(answers) for job_id in ids} for ids in job_ids]
        found = (
            skipped.decoded(
                "rq worker", key.removeprefix(rq_workers.WORKER_PREFIX), _rq_worker, key, entry, jobs, now_s
            )
            for key, entry, jobs in zip(keys, entries, job_replies, strict=True)
        )
        return [w for w in found if w is not None]

    def _sidekiq(self, now_s: float, skipped: Skipped) -> list[ForeignWorker]:
        client = self._conn.client
        identities = sorted(text(i) for i in client.smembers(sidekiq_workers.PROCESSES))
        pipe = client.pipeline(transaction=False)
        for identity in identities:
            pipe.hgetall(identity)
            pipe.hgetall(sidekiq_workers.work_key(identity))
        replies = pipe.execute(raise_on_error=False)
        found = (
            skipped.decoded("sidekiq process", identity, _sidekiq_process, identity, fields, work, now_s)
            for identity, fields, work in zip(identities, replies[::2], replies[1::2], strict=True)
        )
        return [w for w in found if w is not None]

    def _dramatiq(self, now_s: float, skipped: Skipped) -> list[ForeignWorker]:
        client = self._conn.client
        found: list[ForeignWorker | None] = []
        for namespace, queues in self._dramatiq_layout().items():
            beats = client.zrange(dramatiq_workers.heartbeats_key(namespace), 0, -1, withscores=True)
            ids = [text(member) for member, _score in beats]
            pipe = client.pipeline(transaction=False)
            for worker_id in ids:
                prefix = dramatiq_workers.acks_prefix(namespace, worker_id)
                for queue in queues:
                    pipe.smembers(prefix + queue)
            held_ids = iter(pipe.execute(raise_on_error=False))
            held = [{queue: next(held_ids) for queue in queues} for _worker_id in ids]
            pipe = client.pipeline(transaction=False)
            for by_queue in held:
                for queue, message_ids in by_queue.items():
                    if _holds(message_ids):
                        pipe.hmget(dramatiq_workers.messages_key(namespace, queue), sorted(message_ids))
            bodies = iter(pipe.execute(raise_on_error=False))
            held_bodies = [
                {q: (ids, next(bodies) if _holds(ids) else None) for q, ids in by_queue.items()}
                for by_queue in held
            ]
            found += [
                skipped.decoded(
                    "dramatiq worker",
                    worker_id if namespace == "dramatiq" else f"{namespace}:{worker_id}",
                    _dramatiq_worker,
                    namespace,
                    worker_id,
                    score,
                    by_queue,
                    now_s,
                )
                for worker_id, (_member, score), by_queue in zip(ids, beats, held_bodies, strict=True)
            ]
        return [w for w in found if w is not None]

    def _dramatiq_layout(self) -> dict[str, tuple[str, ...]]:
        """Each Dramatiq namespace on this Redis (found by its heartbeat set) with the queues it keeps
        messages of, from one SCAN kept for the discovery period."""
        if self._found_at is None or self._clock() - self._found_at > DISCOVERY_TTL_S:
            beats: set[str] = set()
            messages: set[str] = set()
            for master in self._conn.masters():
                beats.update(
                    text(k)
                    for k in master.scan_iter(
                        match=f"*:{dramatiq_workers.HEARTBEATS}", count=SCAN_COUNT, _type="zset"
                    )
                )
                messages.update(
                    text(k) for k in master.scan_iter(match="*.msgs", count=SCAN_COUNT, _type="hash")
                )
            layout = {}
            for key in sorted(beats):
                namespace = key.removesuffix(f":{dramatiq_workers.HEARTBEATS}")
                layout[namespace] = tuple(
                    sorted(
                        m.removeprefix(f"{namespace}:").removesuffix(".msgs")
                        for m in messages
                        if m.startswith(f"{namespace}:")
                    )
                )
            self._layout = layout
            self._found_at = self._clock()
        return self._layout


def _text_keys(fields: dict[Any, Any] | None) -> dict[str, Any] | None:
    return {text(k): v for k, v in fields.items()} if fields else None


def _rq_worker(key: str, entry: Sequence[Any], jobs: Mapping[str, Any], now_s: float) -> ForeignWorker:
    """One RQ worker from its replies: its hash, PTTL and executions, and its current jobs' fields."""
    fields, ttl, _executions = map(_answer, entry)
    current = {
        job_id: dict(zip(RQ_JOB_FIELDS, _answer(reply), strict=True)) for job_id, reply in jobs.items()
    }
    return rq_workers.worker(key, _text_keys(fields), _seconds(ttl), current, now_s)


def _sidekiq_process(identity: str, fields: Any, work: Any, now_s: float) -> ForeignWorker:
    return sidekiq_workers.process(identity, _text_keys(_answer(fields)), _answer(work), now_s)


def _dramatiq_worker(
    namespace: str, worker_id: str, score: float, held: Mapping[str, tuple[Any, Any]], now_s: float
) -> ForeignWorker:
    """One Dramatiq worker from its beat and, per queue, the ids it holds and their bodies."""
    messages = {
        queue: dict(zip(map(text, sorted(_answer(ids))), _answer(bodies), strict=True))
        for queue, (ids, bodies) in held.items()
        if _answer(ids)
    }
    return dramatiq_workers.worker(namespace, worker_id, score, messages, now_s)


def _holds(message_ids: Any) -> bool:
    return bool(message_ids) and not isinstance(message_ids, Exception)


def _answer(reply: Any) -> Any:
    """A pipeline's reply, raised when it is an error (a key of another type): one entry skipped."""
    if isinstance(reply, Exception):
        raise reply
    return reply


def _failed(*replies: Any) -> bool:
    return any(isinstance(reply, Exception) for reply in replies)


def _seconds(pttl: Any) -> float | None:
    """PTTL's answer as seconds; ``None`` for a key without an expiry (-1) or gone (-2)."""
    return pttl / 1000 if isinstance(pttl, int) and pttl >= 0 else None
