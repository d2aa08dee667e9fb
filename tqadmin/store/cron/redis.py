"""The cron store on Redis: a ``SET NX PX`` lease, an ``INCR`` fencing counter, tick records, all in Lua.

Every key of a namespace carries the hash tag ``{tqcron:<namespace>}``, so each script's keys live in one slot
and the store works on Redis Cluster. Times (lease age, fire time) come from the server's ``TIME`` inside the
scripts: the instances' clocks may disagree, the store's is the one every reader shares.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import redis

from tqadmin.connect.prefixes import split_prefix
from tqadmin.store.cron.base import (
    CronStore,
    FiredTick,
    LeaderInfo,
    Lease,
    Registration,
    TickOutcome,
    TickRecord,
    TickState,
    check_namespace,
    tick_id,
)
from tqadmin.store.keys import check_prefix
from tqadmin.store.redis_errors import translated  # one translation of redis-py's errors

T = TypeVar("T")

# Server time in microseconds, as a string: Lua numbers are doubles and would print in exponent form.
_NOW_US = "local t = redis.call('TIME') local now_us = t[1] .. string.format('%06d', t[2])\n"

_ACQUIRE = (
    _NOW_US
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. '|' .. ARGV[1], 'NX', 'PX', ARGV[2])
redis.call('HSET', KEYS[3], 'instance', ARGV[1], 'token', token, 'acquired_us', now_us, 'renewed_us', now_us)
return token
"""
)

_RENEW = (
    _NOW_US
    + """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'renewed_us', now_us)
return 1
"""
)

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# The fire-tick check: only the current token's holder claims, and only a tick nobody recorded before.
_CURRENT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then return 'stale' end
"""

_CLAIM = (
    _CURRENT
    + """
if not redis.call('SET', KEYS[3], 'claimed|' .. ARGV[2] .. '|' .. ARGV[6], 'NX', 'PX', ARGV[5]) then
  return 'duplicate'
end
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[3])
return 'claimed'
"""
)

_RECLAIM = (
    _CURRENT
    + """
if not redis.call('ZSCORE', KEYS[4], ARGV[3]) then return 'duplicate' end
local v = redis.call('GET', KEYS[3])
if v and string.sub(v, 1, 6) == 'fired|' then
  redis.call('ZREM', KEYS[4], ARGV[3])
  return 'duplicate'
end
redis.call('SET', KEYS[3], 'claimed|' .. ARGV[2] .. '|' .. ARGV[6], 'PX', ARGV[5])
return 'claimed'
"""
)

_MARK_FIRED = (
    _NOW_US
    + """
local value = 'fired|' .. ARGV[4] .. '|' .. ARGV[5]
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], value, 'PX', ARGV[6])
elseif tonumber(string.match(current, '^%a+|(%d+)|')) <= tonumber(ARGV[4]) then
  redis.call('SET', KEYS[1], value, 'KEEPTTL')
end  -- a stale leader's late confirm does not overwrite the record of the leader that took the tick over
redis.call('ZREM', KEYS[2], ARGV[1])
local scheduled = tonumber(ARGV[3])
if scheduled > tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '-1') then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
end
local last = redis.call('HGET', KEYS[4], ARGV[2])
if (not last) or scheduled > tonumber(string.match(last, '^(%d+)')) then
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[3] .. '|' .. now_us .. '|' .. ARGV[4] .. '|' .. ARGV[5])
end
return 1
"""
)

_MARK_MISSED = (
    _CURRENT
    + """
redis.call('HINCRBY', KEYS[4], ARGV[3], ARGV[5])
if tonumber(ARGV[4]) > tonumber(redis.call('HGET', KEYS[3], ARGV[3]) or '-1') then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
end
return 'ok'
"""
)

_HEARTBEAT = (
    _NOW_US
    + """
redis.call('ZADD', KEYS[1], t[1] .. '.' .. string.format('%06d', t[2]), ARGV[1])
return 1
"""
)


class RedisCronStore(CronStore):
    """:class:`CronStore` on one Redis (or a Redis Cluster: every script's keys share a hash tag)."""

    def __init__(
        self, client: redis.Redis, namespace: str, url: str = "redis", prefix: str | None = None
    ) -> None:
        self.namespace = check_namespace(namespace)
        self._client = client
        self._url = url
        # The store URL's ``prefix`` (if any) goes inside the hash tag: one slot per script still.
        self._prefix = "{" + (f"{check_prefix(prefix)}:" if prefix else "") + "tqcron:" + namespace + "}"
        self._scripts = {
            name: client.register_script(source)
            for name, source in {
                "acquire": _ACQUIRE,
                "renew": _RENEW,
                "release": _RELEASE,
                "claim": _CLAIM,
                "reclaim": _RECLAIM,
                "fired": _MARK_FIRED,
                "missed": _MARK_MISSED,
                "heartbeat": _HEARTBEAT,
            }.items()
        }

    @classmethod
    def from_url(cls, url: str, namespace: str, timeout_s: float = 10.0) -> RedisCronStore:
        """``url`` may carry ``?prefix=`` like every store URL (see :func:`split_prefix`)."""
        url, prefix = split_prefix(url)
        client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, decode_responses=True
        )
        return cls(client, namespace, url, prefix)

    def key(self, suffix: str) -> str:
        return f"{self._prefix}:{suffix}"

    def _run(self, fn: Callable[[], T]) -> T:
        with translated(self._url):
            return fn()

    def _script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return self._run(lambda: self._scripts[name](keys=keys, args=args))

    @staticmethod
    def _value(lease: Lease) -> str:
        return f"{lease.token}|{lease.instance}"

    # lease

    def acquire(self, instance: str, ttl_s: float) -> Lease | None:
        keys = [self.key("lease"), self.key("fence"), self.key("leader")]
        token = self._script("acquire", keys, [instance, _ms(ttl_s)])
        return None if token is None else Lease(instance, int(token), ttl_s)

    def renew(self, lease: Lease) -> bool:
        keys = [self.key("lease"), self.key("leader")]
        return bool(self._script("renew", keys, [self._value(lease), _ms(lease.ttl_s)]))

    def release(self, lease: Lease) -> None:
        self._script("release", [self.key("lease")], [self._value(lease)])

    def leader(self) -> LeaderInfo | None:
        def read() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.get(self.key("lease"))
            pipe.pttl(self.key("lease"))
            pipe.hgetall(self.key("leader"))
            pipe.time()
            return pipe.execute()

        value, pttl, info, (sec, usec) = self._run(read)
        if value is None:
            return None
        token_text, _, instance = str(value).partition("|")
        token = int(token_text)
        now = sec + usec / 1e6
        same = info.get("token") == token_text
        acquired = int(info["acquired_us"]) / 1e6 if same else now
        renewed = int(info["renewed_us"]) / 1e6 if same else now
        return LeaderInfo(instance, token, acquired, renewed, max(0, int(pttl)) / 1000, now)

    def fencing_token(self) -> int:
        return int(self._run(lambda: self._client.get(self.key("fence"))) or 0)

    # ticks

    def _tick_keys(self, name: str, scheduled: int) -> list[str]:
        return [self.key("lease"), self.key("fence"), self.key(tick_id(name, scheduled)), self.key("pending")]

    def _tick_args(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> list[Any]:
        ident = tick_id(name, scheduled)
        return [self._value(lease), lease.token, ident, scheduled, _ms(keep_s), lease.instance]

    def claim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        args = self._tick_args(lease, name, scheduled, keep_s)
        return TickOutcome(self._script("claim", self._tick_keys(name, scheduled), args))

    def reclaim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        args = self._tick_args(lease, name, scheduled, keep_s)
        return TickOutcome(self._script("reclaim", self._tick_keys(name, scheduled), args))

    def mark_fired(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> None:
        ident = tick_id(name, scheduled)
        keys = [self.key(ident), self.key("pending"), self.key("cursor"), self.key("fired")]
        self._script("fired", keys, [ident, name, scheduled, lease.token, lease.instance, _ms(keep_s)])

    def mark_missed(self, lease: Lease, name: str, through: int, count: int) -> bool:
        keys = [self.key("lease"), self.key("fence"), self.key("cursor"), self.key("missed")]
        args = [self._value(lease), lease.token, name, through, count]
        return bool(self._script("missed", keys, args) == "ok")

    def arm(self, name: str, cursor: int) -> int:
        def run() -> Any:
            pipe = self._client.pipeline(transaction=False)
            pipe.hsetnx(self.key("cursor"), name, cursor)
            pipe.hget(self.key("cursor"), name)
            return pipe.execute()[1]

        return int(self._run(run))

    def cursors(self, names: Iterable[str]) -> dict[str, int]:
        wanted = list(names)
        if not wanted:
            return {}
        values = self._run(lambda: self._client.hmget(self.key("cursor"), wanted))
        return {n: int(v) for n, v in zip(wanted, values, strict=True) if v is not None}

    def pending(self) -> list[TickRecord]:
        entries = cast(
            list[tuple[str, float]],
            self._run(lambda: self._client.zrange(self.key("pending"), 0, -1, withscores=True)),
        )
        if not entries:
            return []
        values = self._run(lambda: self._client.mget([self.key(str(ident)) for ident, _ in entries]))
        records = []
        for (ident, _), value in zip(entries, values, strict=True):
            name, scheduled = str(ident).removeprefix("cron:").rsplit(":", 1)  # a trigger's name holds one :
            records.append(
                _record(name, int(scheduled), value)
                or TickRecord(name, int(scheduled), TickState.CLAIMED, 0, "")
            )
        return records

    def drop_pending(self, name: str, scheduled: int) -> None:
        self._run(lambda: self._client.zrem(self.key("pending"), tick_id(name, scheduled)))

    def tick(self, name: str, scheduled: int) -> TickRecord | None:
        value = self._run(lambda: self._client.get(self.key(tick_id(name, scheduled))))
        return _record(name, scheduled, value)

    def last_fired(self) -> dict[str, FiredTick]:
        raw = cast(dict[str, str], self._run(lambda: self._client.hgetall(self.key("fired"))))
        fired = {}
        for name, value in raw.items():
            scheduled, fired_us, token, instance = str(value).split("|", 3)
            fired[name] = FiredTick(name, int(scheduled), int(fired_us) / 1e6, int(token), instance)
        return fired

    def missed_counts(self) -> dict[str, int]:
        raw = cast(dict[str, str], self._run(lambda: self._client.hgetall(self.key("missed"))))
        return {name: int(count) for name, count in raw.items()}

    # registry

    def register(self, instance: str, schedules: Iterable[Mapping[str, Any]]) -> None:
        document = json.dumps({"schedules": list(schedules)}, separators=(",", ":"))
        self._run(lambda: self._client.hset(self.key("registry"), instance, document))
        self.heartbeat(instance)

    def heartbeat(self, instance: str) -> None:
        self._script("heartbeat", [self.key("instances")], [instance])

    def registrations(self) -> list[Registration]:
        def read() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.zrevrange(self.key("instances"), 0, -1, withscores=True)
            pipe.hgetall(self.key("registry"))
            return pipe.execute()

        seen, registry = self._run(read)
        result = []
        for instance, last_seen in seen:
            try:
                schedules = json.loads(registry.get(instance) or "{}").get("schedules", [])
            except ValueError:
                schedules = []
            result.append(Registration(str(instance), float(last_seen), tuple(schedules)))
        return result

    def forget_instances(self, seen_before: float) -> int:
        def run() -> int:
            stale = self._client.zrangebyscore(self.key("instances"), "-inf", f"({seen_before}")
            if stale:
                self._client.hdel(self.key("registry"), *stale)
                self._client.zrem(self.key("instances"), *stale)
            return len(stale)

        return self._run(run)

    def now(self) -> float:
        sec, usec = self._run(self._client.time)
        return float(sec + usec / 1e6)

    def close(self) -> None:
        self._client.close()


def _record(name: str, scheduled: int, value: Any) -> TickRecord | None:
    if value is None:
        return None
    state, token, instance = str(value).split("|", 2)
    return TickRecord(name, scheduled, TickState(state), int(token), instance)


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))
