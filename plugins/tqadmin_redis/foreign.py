"""Queues tqadmin did not create, shown read-only: Celery (kombu), RQ, Sidekiq, and streams with groups.

Each is a :class:`~tqadmin_redis.foreign_kinds.Foreign`: where its jobs are and why every write to it is
refused. tqadmin lists them with their figures (:mod:`tqadmin_redis.foreign_figures`) and lets you peek and
export (``LRANGE``/``ZRANGE``/``XRANGE``, free: :mod:`tqadmin_redis.foreign_reading`); nothing is ever
unpickled, an RQ job's pickled ``data`` is handed over as bytes.

They are found here, by ``SCAN`` (O(keyspace), BROKERS.md trap 5): on demand, on every master of a cluster,
and the result kept for :data:`DISCOVERY_TTL_S`; a poll reads the figures of the queues already found.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tqadmin.connect.redis_client import text
from tqadmin.plugin.models import Message, QueueStats
from tqadmin_redis import foreign_figures, foreign_reading
from tqadmin_redis.connection import Connection
from tqadmin_redis.foreign_kinds import CELERY, RQ, SIDEKIQ, STREAM, Foreign
from tqadmin_redis.naming import FOREIGN_PREFIXES

DISCOVERY_TTL_S = 120.0
REDISCOVER_AFTER_S = 5.0  # a name asked for and not known is looked for again after this long
SCAN_COUNT = 1000
KOMBU_BINDINGS = "_kombu.binding."
KOMBU_SEP = "\x06\x16"
KOMBU_PRIORITIES = (3, 6, 9)  # kombu's priority steps beyond 0: each has a list of its own
SIDEKIQ_SETS = (("retry", "retry"), ("scheduled", "schedule"), ("dead", "dead"))


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

    # -- figures and jobs --------------------------------------------------------------------------------

    def stats(self, now_s: float) -> list[QueueStats]:
        """Every known foreign queue's figures."""
        return foreign_figures.stats(self._conn, self.known(), now_s)

    def peek(self, f: Foreign, count: int) -> tuple[Message, ...]:
        return foreign_reading.read(self._conn, f, 0, count)
