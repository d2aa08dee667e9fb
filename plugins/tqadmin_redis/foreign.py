"""Queues tqadmin did not create, shown read-only: Celery (kombu), RQ, Sidekiq, and streams with groups.

Each framework keeps its own bookkeeping beside its lists (kombu's global ``unacked`` hash, RQ's job hashes
and registries, Sidekiq's retry and dead sets), which a write from outside would corrupt: so tqadmin lists
these queues with their figures and lets you peek (``LRANGE``/``ZRANGE``/``XRANGE``, free), and refuses
every write with the reason (:data:`READ_ONLY`). Nothing is ever unpickled: an RQ job's pickled ``data`` is
handed over as bytes.

They are found by ``SCAN`` (O(keyspace), BROKERS.md trap 5): on demand, on every master of a cluster, and
the result kept for :data:`DISCOVERY_TTL_S`; a poll reads the figures of the queues already found.

Messages are handed over as stored: a kombu JSON envelope or a Sidekiq job as the body; an RQ job's hash
fields as headers (with its latest result's, where RQ keeps the error) and its ``data`` as the body; a
stream entry's fields as headers, and as a JSON object for the body.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tqadmin.errors import QueueReadOnly
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.bodies import load_json
from tqadmin.plugin.models import Message, QueueStats
from tqadmin.redis_client import text
from tqadmin_redis.connection import Connection
from tqadmin_redis.entries import entry_id_ms
from tqadmin_redis.naming import FOREIGN_PREFIXES

DISCOVERY_TTL_S = 120.0
REDISCOVER_AFTER_S = 5.0  # a name asked for and not known is looked for again after this long
SCAN_COUNT = 1000
KOMBU_BINDINGS = "_kombu.binding."
KOMBU_SEP = "\x06\x16"
KOMBU_PRIORITIES = (3, 6, 9)  # kombu's priority steps beyond 0: each has a list of its own
KOMBU_UNACKED_LIMIT = 1000  # above this many unacked Celery messages, they are not attributed to queues
SIDEKIQ_SETS = (("retry", "retry"), ("scheduled", "schedule"), ("dead", "dead"))
MILLISECONDS_FROM = 1e11  # a Sidekiq time past this is milliseconds (Sidekiq 8)

CELERY, RQ, SIDEKIQ, STREAM = "celery", "rq", "sidekiq", "stream"
READ_ONLY = {
    CELERY: "a Celery (kombu) queue: Celery's workers keep its unacked messages in kombu's own hash, so"
    " tqadmin only shows and peeks it",
    RQ: "an RQ queue: RQ keeps each job in a hash with registries beside it, so tqadmin only shows and"
    " peeks it",
    SIDEKIQ: "a Sidekiq queue: Sidekiq keeps its retries and dead jobs in its own sets, so tqadmin only shows"
    " and peeks it",
    STREAM: "a stream another application reads with its own consumer groups: tqadmin only shows and"
    " peeks it",
}
SIDEKIQ_SET_API = {  # shown name -> (Sidekiq's API class, its Web UI tab, what sends a job back)
    "sidekiq:retry": ("RetrySet", "Retries", "retry"),
    "sidekiq:scheduled": ("ScheduledSet", "Scheduled", "add_to_queue"),
    "sidekiq:dead": ("DeadSet", "Dead", "retry"),
}


@dataclass(frozen=True, slots=True)
class Foreign:
    """One queue of another framework: the keys holding its jobs, oldest first (``newest_left``: lists the
    framework pushes on the left and pops on the right, so the oldest job is the last element)."""

    name: str
    kind: str
    keys: tuple[str, ...]
    key_type: str  # list | zset | stream
    newest_left: bool = False
    started: str | None = None
    scheduled: str | None = None
    workers: str | None = None
    dlq: str | None = None

    @property
    def read_only(self) -> str:
        return READ_ONLY[self.kind]

    def refusal(self) -> QueueReadOnly:
        return QueueReadOnly(self.name, f"{self.read_only}; {self.instead}")

    @property
    def instead(self) -> str:
        """The framework's own tool for what tqadmin refuses to write here, named for this queue."""
        if self.kind == CELERY:
            queue = self.keys[0].removeprefix((self.started or "").removesuffix("unacked"))
            return (
                f"use Celery's own tools: `celery -A APP purge -Q {queue}` empties it, `celery -A APP control"
                " revoke TASK_ID` drops one task, `app.send_task(NAME, args, queue=...)` sends one again"
            )
        if self.kind == RQ:
            queue = self.keys[0].removeprefix("rq:failed:").removeprefix("rq:queue:")
            resend = (
                f"`rq requeue --queue {queue} JOB_ID` (or `--all`) sends failed jobs back to {queue}"
                if self.key_type == "zset"
                else f"`rq empty {queue}` empties it"
            )
            return f"use RQ's own tools: {resend}, `Job.fetch(JOB_ID, connection=redis).delete()` deletes one"
        if self.kind == SIDEKIQ and self.name in SIDEKIQ_SET_API:
            api, tab, resend = SIDEKIQ_SET_API[self.name]
            return (
                f"use Sidekiq's Web UI ({tab} tab) or its API: `Sidekiq::{api}.new.find_job(JID).{resend}`"
                " (or `.delete`)"
            )
        if self.kind == SIDEKIQ:
            queue = self.keys[0].removeprefix("queue:")
            return (
                f"use Sidekiq's Web UI (Queues tab) or its API: `Sidekiq::Queue.new({json.dumps(queue)})"
                ".find_job(JID).delete` (`.clear` empties it)"
            )
        return "write through the application that owns its consumer groups (its own XACK and XDEL)"


class ForeignSession(TransferSession):
    """A transfer session that only reads: export and dead-letter groups work on another framework's
    queue; a copy to it, an ack or a delete is refused with the queue's reason, before anything changed."""

    def __init__(self, queues: ForeignQueues, foreign: Foreign) -> None:
        self._queues = queues
        self._foreign = foreign
        self._count = queues.depth(foreign)
        self._read = 0

    def count_at_start(self) -> int:
        return self._count

    def fetch(self, limit: int) -> Sequence[Delivery]:
        want = min(limit, self._count - self._read)
        if want <= 0:
            return []
        messages = self._queues.read(self._foreign, self._read, want)
        self._read += len(messages) or want  # a queue that shrank meanwhile ends the read
        return [Delivery(m, None) for m in messages]

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        raise self._foreign.refusal()

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        raise self._foreign.refusal()

    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Nothing was taken: nothing to give back."""

    def close(self) -> None:
        """Nothing is held."""


class ForeignQueues:
    def __init__(
        self, conn: Connection, own_pattern: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._conn = conn
        self._own = own_pattern.rstrip("*")
        self._clock = clock
        self._found: dict[str, Foreign] = {}
        self._found_at: float | None = None

    # -- discovery ---------------------------------------------------------------------------------------

    def known(self) -> list[Foreign]:
        if self._found_at is None or self._clock() - self._found_at > DISCOVERY_TTL_S:
            self._discover()
        return list(self._found.values())

    def find(self, name: str) -> Foreign | None:
        """The foreign queue shown as ``name``, looked for again when unknown and not just looked for."""
        if not name.startswith(FOREIGN_PREFIXES):
            return None
        found = {f.name: f for f in self.known()}.get(name)
        if (
            found is None
            and self._found_at is not None
            and self._clock() - self._found_at > REDISCOVER_AFTER_S
        ):
            self._discover()
            found = self._found.get(name)
        return found

    def _discover(self) -> None:
        found: list[Foreign] = []
        with self._conn.translated():
            bindings: list[str] = []
            streams: list[str] = []
            for master in self._conn.masters():
                bindings += [text(k) for k in master.scan_iter(match=f"*{KOMBU_BINDINGS}*", count=SCAN_COUNT)]
                streams += [text(k) for k in master.scan_iter(count=SCAN_COUNT, _type="stream")]
            found += self._celery(bindings)
            found += self._rq()
            found += self._sidekiq()
            found += [
                Foreign(f"stream:{key}", STREAM, (key,), "stream")
                for key in sorted(streams)
                if not key.startswith(self._own) and not key.startswith("rq:")
            ]
        self._found = {f.name: f for f in found}
        self._found_at = self._clock()

    def _celery(self, binding_keys: Sequence[str]) -> list[Foreign]:
        """Queues named in kombu's binding sets; a ``global_keyprefix`` (kombu's transport option) is the
        text before ``_kombu.binding.``, and is part of every key of that app, and of the name shown."""
        queues: set[tuple[str, str]] = set()
        for key in binding_keys:
            prefix = key.partition(KOMBU_BINDINGS)[0]
            for member in self._conn.client.smembers(key):
                queues.add((prefix, text(member).split(KOMBU_SEP)[-1]))
        return [
            Foreign(
                f"celery:{prefix}{q}",
                CELERY,
                tuple(
                    f"{prefix}{q}{suffix}" for suffix in ("", *(f"{KOMBU_SEP}{p}" for p in KOMBU_PRIORITIES))
                ),
                "list",
                newest_left=True,
                started=f"{prefix}unacked",
            )
            for prefix, q in sorted(queues)
            if q
        ]

    def _rq(self) -> list[Foreign]:
        found = []
        for key in sorted(text(k) for k in self._conn.client.smembers("rq:queues")):
            name = key.removeprefix("rq:queue:")
            failed = f"rq:{name}:failed"
            found.append(
                Foreign(
                    f"rq:{name}",
                    RQ,
                    (key,),
                    "list",
                    started=f"rq:wip:{name}",
                    scheduled=f"rq:scheduled:{name}",
                    workers=f"rq:workers:{name}",
                    dlq=failed,
                )
            )
            found.append(Foreign(failed, RQ, (f"rq:failed:{name}",), "zset"))
        return found

    def _sidekiq(self) -> list[Foreign]:
        names = sorted(text(n) for n in self._conn.client.smembers("queues"))
        if not names:
            return []
        found = [
            Foreign(f"sidekiq:{n}", SIDEKIQ, (f"queue:{n}",), "list", newest_left=True, dlq="sidekiq:dead")
            for n in names
        ]
        found += [Foreign(f"sidekiq:{shown}", SIDEKIQ, (key,), "zset") for shown, key in SIDEKIQ_SETS]
        return found

    # -- figures -----------------------------------------------------------------------------------------

    def stats(self, now_s: float) -> list[QueueStats]:
        """Every known foreign queue's figures: one pipeline of counts, one of oldest jobs."""
        queues = self.known()
        if not queues:
            return []
        with self._conn.translated():
            pipe = self._conn.client.pipeline(transaction=False)
            for f in queues:
                _queue_counts(pipe, f)
            replies = pipe.execute(raise_on_error=False)
            unacked = self._celery_unacked(queues)
            ages = self._ages(queues, now_s)
        rows = []
        at = 0
        for f in queues:
            width = _count_width(f)
            rows.append((f, [r if not isinstance(r, Exception) else None for r in replies[at : at + width]]))
            at += width
        depth_of = {f.name: counts[0] or 0 for f, counts in rows}
        found = (
            _to_stats(f, counts, unacked.get(f.name, 0), ages.get(f.name), depth_of) for f, counts in rows
        )
        return [stat for stat in found if stat is not None]

    def _celery_unacked(self, queues: Sequence[Foreign]) -> dict[str, int]:
        """kombu keeps every unacked message of every queue in one hash, ``[payload, exchange, routing
        key]``: counted per queue by routing key when there are few (the usual case: prefetched tasks)."""
        counted: dict[str, int] = {}
        by_hash: dict[str, dict[str, str]] = {}
        for f in queues:
            if f.kind == CELERY and f.started:
                prefix = f.started.removesuffix("unacked")
                by_hash.setdefault(f.started, {})[f.keys[0].removeprefix(prefix)] = f.name
        for unacked, names in by_hash.items():
            if self._conn.client.hlen(unacked) > KOMBU_UNACKED_LIMIT:
                continue
            for raw in self._conn.client.hvals(unacked):
                try:
                    routing_key = load_json(raw)[2]
                except (ValueError, IndexError, TypeError, KeyError):
                    continue
                name = names.get(str(routing_key))
                if name is not None:
                    counted[name] = counted.get(name, 0) + 1
        return counted

    def _ages(self, queues: Sequence[Foreign], now_s: float) -> dict[str, float]:
        """How long the oldest job of each RQ and Sidekiq queue has waited (Celery's envelopes say not)."""
        ages: dict[str, float] = {}
        lists = [f for f in queues if f.kind in (RQ, SIDEKIQ) and f.key_type == "list"]
        if not lists:
            return ages
        pipe = self._conn.client.pipeline(transaction=False)
        for f in lists:
            pipe.lindex(f.keys[0], -1 if f.newest_left else 0)
        heads = pipe.execute()
        rq_heads = [(f, text(h)) for f, h in zip(lists, heads, strict=True) if h is not None and f.kind == RQ]
        for f, head in zip(lists, heads, strict=True):
            if head is not None and f.kind == SIDEKIQ:
                at = _sidekiq_time(head)
                if at is not None:
                    ages[f.name] = max(0.0, round(now_s - at, 3))
        if rq_heads:
            pipe = self._conn.client.pipeline(transaction=False)
            for _, job_id in rq_heads:
                pipe.hget(f"rq:job:{job_id}", "enqueued_at")
            for (f, _), stamp in zip(rq_heads, pipe.execute(), strict=True):
                at = _iso_time(stamp)
                if at is not None:
                    ages[f.name] = max(0.0, round(now_s - at, 3))
        return ages

    # -- reading -----------------------------------------------------------------------------------------

    def peek(self, f: Foreign, count: int) -> tuple[Message, ...]:
        return self.read(f, 0, count)

    def depth(self, f: Foreign) -> int:
        with self._conn.translated():
            if f.key_type == "stream":
                return int(self._conn.client.xlen(f.keys[0]))
            count = self._conn.client.zcard if f.key_type == "zset" else self._conn.client.llen
            return sum(int(count(key)) for key in f.keys)

    def read(self, f: Foreign, offset: int, count: int) -> tuple[Message, ...]:
        """Up to ``count`` jobs from the ``offset``-th oldest on, nothing taken (the framework's own
        consumers may move the others meanwhile: a read, not a snapshot)."""
        with self._conn.translated():
            if f.key_type == "stream":
                entries = self._conn.client.xrange(f.keys[0], count=offset + count)[offset:]
                return tuple(_stream_message(i, fields) for i, fields in entries)
            raw: list[bytes] = []
            for key in f.keys:
                size = int(
                    self._conn.client.zcard(key) if f.key_type == "zset" else self._conn.client.llen(key)
                )
                if offset >= size:
                    offset -= size
                    continue
                end = min(size, offset + count - len(raw)) - 1
                if f.key_type == "zset":
                    raw += self._conn.client.zrange(key, offset, end)
                elif f.newest_left:
                    raw += list(reversed(self._conn.client.lrange(key, -1 - end, -1 - offset)))
                else:
                    raw += self._conn.client.lrange(key, offset, end)
                offset = 0
                if len(raw) >= count:
                    break
            if f.kind == RQ:
                return self._rq_jobs([text(r) for r in raw])
        return tuple(Message(body=bytes(r)) for r in raw)

    def _rq_jobs(self, job_ids: Sequence[str]) -> tuple[Message, ...]:
        pipe = self._conn.client.pipeline(transaction=False)
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


def _count_width(f: Foreign) -> int:
    if f.kind == STREAM:
        return 2
    if f.kind == RQ and f.key_type == "list":
        return 5
    return len(f.keys)


def _queue_counts(pipe: Any, f: Foreign) -> None:
    """Queue the count commands of ``f`` (as many as :func:`_count_width` says)."""
    if f.kind == STREAM:
        pipe.xlen(f.keys[0])
        pipe.xinfo_groups(f.keys[0])
        return
    for key in f.keys:
        if f.key_type == "zset":
            pipe.zcard(key)
        else:
            pipe.llen(key)
    if f.kind == RQ and f.key_type == "list":
        pipe.zcard(f.started)
        pipe.zcard(f.scheduled)
        pipe.scard(f.workers)
        pipe.zcard(f"rq:failed:{f.name.removeprefix('rq:')}")


def _to_stats(
    f: Foreign, counts: list[Any], unacked: int, age: float | None, depth_of: dict[str, int]
) -> QueueStats | None:
    """One row; ``None`` for a stream without consumer groups (a log, not a queue)."""
    common: dict[str, Any] = {"name": f.name, "kind": f.kind, "read_only": f.read_only, "oldest_age_s": age}
    if f.kind == STREAM:
        length, groups = counts[0] or 0, counts[1] or []
        if not groups:
            return None
        pending = sum(int(g.get("pending") or 0) for g in groups)
        lags = [g.get("lag") for g in groups]
        # lag is unknown after an XDEL (BROKERS.md trap 4): then what the group has not settled at most
        ready = max(int(lag) if isinstance(lag, int) else length - pending for lag in lags)
        consumers = sum(int(g.get("consumers") or 0) for g in groups)
        return QueueStats(
            messages=length, ready=max(ready, 0), unacked=pending, consumers=consumers, **common
        )
    if f.kind == RQ and f.key_type == "list":
        waiting, started, scheduled, workers, failed = (c or 0 for c in counts)
        return QueueStats(
            messages=waiting + started,
            ready=waiting,
            unacked=started,
            consumers=workers,
            delayed=scheduled,
            dlq=f.dlq,
            dlq_messages=failed,
            **common,
        )
    depth = sum(c or 0 for c in counts)
    dlq_messages = depth_of.get(f.dlq) if f.dlq else None
    waiting = f.name in ("sidekiq:retry", "sidekiq:scheduled")  # each job waits for its time: none is ready
    return QueueStats(
        messages=depth + unacked,
        ready=0 if waiting else depth,
        unacked=unacked,
        consumers=None,
        delayed=depth if waiting else None,
        dlq=f.dlq if dlq_messages is not None else None,
        dlq_messages=dlq_messages,
        **common,
    )


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


def _sidekiq_time(raw: bytes) -> float | None:
    try:
        value = load_json(raw).get("enqueued_at")
    except (ValueError, AttributeError):
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return value / 1000 if value > MILLISECONDS_FROM else float(value)


def _iso_time(raw: bytes | None) -> float | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(text(raw).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
