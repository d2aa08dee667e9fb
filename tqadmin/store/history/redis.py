"""The history on Redis: a sorted set per (series, tier) scored by bucket start, an index per profile and
kind, and the worker processes' figures.

Keys (``T`` is the profile's hash tag ``{<prefix>:hist:<profile, percent-encoded>}``, so that one record
script touches one slot and works on Redis Cluster):

- ``T:q:<resolution>:<queue>`` and ``T:a:<resolution>:<task type>``: a ZSET of ``"<bucket>:<json>"``
  scored by the bucket start; a write replaces the member of its bucket, removes the members more than
  :data:`~tqadmin.store.history.base.CLOCK_TOLERANCE_S` after the server's ``TIME``, keeps the tier's newest
  ``points`` buckets and expires the set after the tier's span (a queue deleted long ago leaves nothing);
- ``T:idx:q`` and ``T:idx:a``: a ZSET of the names recorded, scored by the last record (seconds), trimmed
  to the coarsest tier's span: the ``max_series`` guard;
- ``T:w:figures``, a HASH of each worker process's figures as last recorded, ``T:w:seen``, a ZSET of when
  each was last listed, and ``T:w:meta``, the version of the profile's task activity (one more at every
  task record): :mod:`tqadmin.store.history.increments`.

A queue record is one round trip: a pipeline of scripts (:data:`SCRIPT_CHUNK` names each) that refuse a
writer whose clock is ahead of the server's, admit, write every tier's point, trim and expire. A task record
reads (the server's ``TIME``, then one pipeline), plans, and sends one script that writes only if the
version is still the one read; else it reads again (:data:`TASK_ATTEMPTS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from tqadmin.connect.redis_client import (
    Script,
    ScriptCall,
    connect,
    run_scripts,
    server_time,
    text,
    translated,
)
from tqadmin.store.history.base import (
    CLOCK_TOLERANCE_S,
    DEFAULT_MAX_DEPARTED,
    TASKS,
    TIERS,
    HistoryStore,
    RawPoints,
    Recorded,
    Tier,
    admitted,
)
from tqadmin.store.history.increments import TaskPlan, TaskState, candidates, plan_tasks, worker_key
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.store.redis_errors import FLAG, where
from tqadmin.telemetry.ledger import WorkerFigures

if TYPE_CHECKING:
    import redis

SCRIPT_CHUNK = 200
"""Names per script: a script blocks Redis while it runs (about 15 ms for 200 queues), so a record call is
several scripts, in name order, sent in one pipeline: still one round trip."""
TASK_ATTEMPTS = 5
"""Reads and writes a task record tries while other writers' records come between (what it did not add,
the next record adds: the processes' figures were not moved on)."""

_COMMON = """
-- ARGV from 2: now, keep, tiers, the series' key base, the clock tolerance,
-- (bucket, points, resolution, ttl) per tier
local now = tonumber(ARGV[2])
local keep = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local base = ARGV[5]
local clock = redis.call('TIME')
local server_now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local latest = server_now + tonumber(ARGV[6])
local tiers = {}
for i = 1, n do
  local a = 6 + 4 * (i - 1)
  tiers[i] = {tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])}
end
local function forget(index)  -- the names nobody recorded for keep, with their points (keys of this slot)
  local stale = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. (now - keep))
  for _, name in ipairs(stale) do
    for i = 1, n do redis.call('DEL', base .. tiers[i][3] .. ':' .. name) end
  end
  redis.call('ZREMRANGEBYSCORE', index, '-inf', '(' .. (now - keep))
end
local function write(key, i, value)  -- one tier's point; returns how many points ahead were removed
  local bucket, points, ttl = tiers[i][1], tiers[i][2], tiers[i][4]
  redis.call('ZREMRANGEBYSCORE', key, bucket, bucket)
  local refused = redis.call('ZREMRANGEBYSCORE', key, '(' .. latest, '+inf')
  redis.call('ZADD', key, bucket, bucket .. ':' .. value)
  redis.call('ZREMRANGEBYRANK', key, 0, -(points + 1))
  redis.call('EXPIRE', key, ttl)
  return refused
end
local first = 7 + 4 * n
"""

RECORD = Script(
    _COMMON
    + """
-- KEYS[1] the index; then, per candidate in name order, one key per tier. ARGV[1]: max_series;
-- after the common ones: (name, one value per tier) per candidate
local max = tonumber(ARGV[1])
if now > latest then  -- this writer's clock is ahead of the server's: refused whole
  return {0, (#ARGV - first + 1) / (n + 1) * n, tostring(now - server_now)}
end
forget(KEYS[1])
local count = redis.call('ZCARD', KEYS[1])
local recorded, refused = 0, 0
for c = 0, (#ARGV - first + 1) / (n + 1) - 1 do
  local name = ARGV[first + (n + 1) * c]
  local known = redis.call('ZSCORE', KEYS[1], name)
  if known or count < max then
    if not known then count = count + 1 end
    redis.call('ZADD', KEYS[1], now, name)
    for i = 1, n do refused = refused + write(KEYS[1 + c * n + i], i, ARGV[first + (n + 1) * c + i]) end
    recorded = recorded + 1
  end
end
redis.call('EXPIRE', KEYS[1], keep)
return {recorded, refused, '0'}
"""
)

RECORD_TASKS = Script(
    _COMMON
    + """
-- KEYS: the meta hash, the seen zset, the figures hash, the index; then per name one key per tier.
-- ARGV[1]: the version read; after the common ones: forget the departed seen before, departed kept at
-- most, the keys' ttl, the number of figures, (worker key, figures) each, then (name, one value per tier)
-- per admitted name
if (redis.call('HGET', KEYS[1], 'v') or '0') ~= ARGV[1] then return -1 end
redis.call('HINCRBY', KEYS[1], 'v', 1)
local before, cap, ttl, m = ARGV[first], tonumber(ARGV[first + 1]), ARGV[first + 2], tonumber(ARGV[first + 3])
local at = first + 4
for j = 0, m - 1 do
  redis.call('HSET', KEYS[3], ARGV[at + 2 * j], ARGV[at + 2 * j + 1])
  redis.call('ZADD', KEYS[2], now, ARGV[at + 2 * j])
end
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. before)) do
  redis.call('HDEL', KEYS[3], gone)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. before)
local departed = redis.call('ZREVRANGEBYSCORE', KEYS[2], '(' .. ARGV[2], '-inf')
for j = cap + 1, #departed do
  redis.call('HDEL', KEYS[3], departed[j])
  redis.call('ZREM', KEYS[2], departed[j])
end
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[3]}) do redis.call('EXPIRE', key, ttl) end
forget(KEYS[4])
local names = at + 2 * m
local written = 0
for c = 0, (#ARGV - names + 1) / (n + 1) - 1 do
  redis.call('ZADD', KEYS[4], now, ARGV[names + (n + 1) * c])
  for i = 1, n do write(KEYS[4 + c * n + i], i, ARGV[names + (n + 1) * c + i]) end
  written = written + 1
end
redis.call('EXPIRE', KEYS[4], keep)
return written
"""
)


def redis_client(url: str, timeout_s: float) -> redis.Redis:
    """The state store's Redis (or Redis Cluster) client, with its errors named as the store's."""
    return connect(url, timeout_s, where(url), FLAG)


def profile_tag(prefix: str, profile: str) -> str:
    """The hash tag of a profile's history keys (percent-encoding leaves no brace nor colon in it)."""
    return "{" + f"{prefix}:hist:{quote(profile, safe='')}" + "}"


def series_key(prefix: str, profile: str, kind: str, tier: Tier, name: str) -> str:
    """The name comes last, whole: any text (colons, braces, newlines) gives a key of its own. (The record
    scripts build the same names for the series they forget.)"""
    return f"{profile_tag(prefix, profile)}:{kind}:{tier.resolution_s}:{name}"


def index_key(prefix: str, profile: str, kind: str) -> str:
    return f"{profile_tag(prefix, profile)}:idx:{kind}"


def worker_keys(prefix: str, profile: str) -> tuple[str, str, str]:
    """(meta hash, seen zset, figures hash) of a profile's worker processes."""
    tag = profile_tag(prefix, profile)
    return f"{tag}:w:meta", f"{tag}:w:seen", f"{tag}:w:figures"


class RedisHistory(HistoryStore):
    """:class:`HistoryStore` on the Redis of the state store, under its key prefix."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        url: str = "redis://",
        prefix: str = DEFAULT_PREFIX,
        max_series: int = 2000,
        max_departed: int = DEFAULT_MAX_DEPARTED,
        tiers: Sequence[Tier] = TIERS,
    ) -> None:
        self.url = url
        self.prefix = check_prefix(prefix)
        self.max_series = max_series
        self.max_departed = max_departed
        self.tiers = tuple(tiers)
        self._client = client

    def _common(self, profile: str, kind: str, now_s: float) -> list[Any]:
        """The arguments both scripts take after their first."""
        base = f"{profile_tag(self.prefix, profile)}:{kind}:"
        args: list[Any] = [repr(float(now_s)), self.keep_s, len(self.tiers), base, CLOCK_TOLERANCE_S]
        for tier in self.tiers:
            args += [tier.bucket(now_s), tier.points, tier.resolution_s, tier.span_s + tier.resolution_s]
        return args

    def _record(self, profile: str, kind: str, now_s: float, values: Mapping[str, Sequence[str]]) -> Recorded:
        # Every candidate goes to the script, which admits by the index it reads; a name too long is
        # dropped here (``admitted`` with every name known keeps the name order and the length rule).
        names = admitted(values, values, len(values))
        if not names:
            return Recorded(0)
        index = index_key(self.prefix, profile, kind)
        head = [self.max_series, *self._common(profile, kind, now_s)]
        calls: list[ScriptCall] = []
        for start in range(0, len(names), SCRIPT_CHUNK):
            keys, args = [index], list(head)
            for name in names[start : start + SCRIPT_CHUNK]:
                keys += [series_key(self.prefix, profile, kind, tier, name) for tier in self.tiers]
                args += [name, *values[name]]
            calls.append((RECORD, keys, args))
        replies = run_scripts(self._client, calls, where(self.url), FLAG)
        ahead = max(float(text(r[2])) for r in replies)
        return Recorded(sum(int(r[0]) for r in replies), sum(int(r[1]) for r in replies), ahead_s=ahead)

    def _record_tasks(self, profile: str, now_s: float, workers: Sequence[WorkerFigures]) -> Recorded:
        meta = worker_keys(self.prefix, profile)[0]
        with translated(where(self.url), FLAG):
            seconds, micros = server_time(self._client, meta)
        store_now = seconds + micros / 1e6
        refused = self.refused(now_s, store_now, len(candidates(workers, self.max_series)))
        if refused is not None:
            return refused
        for _ in range(TASK_ATTEMPTS):
            version, state = self._task_state(profile, now_s, workers, store_now + CLOCK_TOLERANCE_S)
            plan = plan_tasks(workers, state, self.tiers, self.max_series)
            call = (RECORD_TASKS, *self._task_write(profile, now_s, version, plan))
            [written] = run_scripts(self._client, [call], where(self.url), FLAG)
            if int(written) >= 0:
                return Recorded(int(written), plan.refused, plan.skipped)
        return Recorded(0)

    def _task_state(
        self, profile: str, now_s: float, workers: Sequence[WorkerFigures], latest: float
    ) -> tuple[str, TaskState]:
        meta, seen, figures = worker_keys(self.prefix, profile)
        keys = [worker_key(worker) for worker in workers]
        names = candidates(workers, self.max_series)
        with translated(where(self.url), FLAG):
            pipe = self._client.pipeline(transaction=False)
            pipe.hget(meta, "v")
            pipe.zrevrangebyscore(seen, latest, "-inf", start=0, num=1, withscores=True)
            pipe.hmget(figures, keys)
            pipe.zrangebyscore(index_key(self.prefix, profile, TASKS), now_s - self.keep_s, "+inf")
            for name in names:
                for tier in self.tiers:
                    key = series_key(self.prefix, profile, TASKS, tier, name)
                    pipe.zrangebyscore(key, tier.bucket(now_s), tier.bucket(now_s))
                    pipe.zrangebyscore(key, f"({latest!r}", "+inf")
            version, last_seen, lasts, known, *points = pipe.execute()
        current: dict[tuple[str, int], Any] = {}
        ahead: dict[tuple[str, int], list[Any]] = {}
        replies = iter(points)
        for name in names:
            for tier in self.tiers:
                here, later = next(replies), next(replies)
                if here:
                    current[(name, tier.resolution_s)] = _split(here[-1])[1]
                if later:
                    ahead[(name, tier.resolution_s)] = [_split(member)[1] for member in later]
        state = TaskState(
            recorded_at=float(last_seen[0][1]) if last_seen else None,
            lasts={key: text(value) for key, value in zip(keys, lasts, strict=True) if value is not None},
            known={text(name) for name in known},
            current=current,
            ahead=ahead,
        )
        return text(version) or "0", state

    def _task_write(
        self, profile: str, now_s: float, version: str, plan: TaskPlan
    ) -> tuple[list[str], list[Any]]:
        keys = [*worker_keys(self.prefix, profile), index_key(self.prefix, profile, TASKS)]
        args: list[Any] = [version, *self._common(profile, TASKS, now_s)]
        args += [repr(now_s - self.departed_keep_s), self.max_departed, self.keep_s, len(plan.lasts)]
        for key, figures in plan.lasts.items():
            args += [key, figures]
        for name in plan.names:
            keys += [series_key(self.prefix, profile, TASKS, tier, name) for tier in self.tiers]
            args += [name, *plan.values[name]]
        return keys, args

    def _points(self, profile: str, kind: str, names: Sequence[str], tier: Tier) -> tuple[RawPoints, int]:
        with translated(where(self.url), FLAG):
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.zrange(series_key(self.prefix, profile, kind, tier, name), 0, -1)
            replies = pipe.execute(raise_on_error=False)
        points: RawPoints = {}
        unreadable = 0
        for name, members in zip(names, replies, strict=True):
            if isinstance(members, Exception):  # not a sorted set: another program's key
                unreadable += 1
            elif members:
                points[name] = [_split(member) for member in members]
        return points, unreadable

    def _names(self, profile: str, kind: str) -> list[str]:
        with translated(where(self.url), FLAG):
            members = self._client.zrange(index_key(self.prefix, profile, kind), 0, -1)
        return [text(member) for member in members]

    def close(self) -> None:
        self._client.close()


def _split(member: bytes) -> tuple[str, str]:
    """A member's bucket and value, as stored (checked when decoded)."""
    bucket, _, value = text(member).partition(":")
    return bucket, value
