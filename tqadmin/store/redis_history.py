"""The history on Redis: a sorted set per (series, tier) scored by bucket start, and an index per profile.

Keys (``T`` is the profile's hash tag ``{<prefix>:hist:<profile, percent-encoded>}``, so that one record
script touches one slot and works on Redis Cluster):

- ``T:q:<resolution>:<queue>`` and ``T:t:<resolution>:<task type>``: a ZSET of ``"<bucket>:<json>"``
  scored by the bucket start; a write replaces the member of its bucket, so a point is written once
  whoever writes it, then the set is trimmed to the tier's ``points`` buckets below the newest one and
  expires after the tier's span (a queue deleted long ago leaves nothing);
- ``T:idx:q`` and ``T:idx:t``: a ZSET of the names recorded, scored by the last record (seconds), trimmed
  to the coarsest tier's span: the ``max_series`` guard.

One record call is one round trip: a pipeline of scripts (:data:`SCRIPT_CHUNK` names each) that admit,
write every tier's point, trim and expire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from tqadmin.redis_client import Script, ScriptCall, connect, run_scripts, text, translated
from tqadmin.store.history import TIERS, HistoryStore, Tier, admitted
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.store.redis_store import FLAG, _where

if TYPE_CHECKING:
    import redis

SCRIPT_CHUNK = 200
"""Names per script: a script blocks Redis while it runs (about 15 ms for 200 queues), so a record call is
several scripts, in name order, sent in one pipeline: still one round trip."""

RECORD = Script(
    """
-- KEYS[1] the index; then, per candidate in name order, one key per tier.
-- ARGV: now, max_series, keep, tiers, the series' key base, (bucket, points, resolution, ttl) per tier,
-- (name, value) per candidate
local now = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local keep = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local tiers = {}
for i = 1, n do
  local a = 5 + 4 * (i - 1)
  tiers[i] = {tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])}
end
local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - keep))
for _, name in ipairs(stale) do  -- forgotten with their points (keys of this slot, named by ARGV[5])
  for i = 1, n do redis.call('DEL', ARGV[5] .. tiers[i][3] .. ':' .. name) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - keep))
local count = redis.call('ZCARD', KEYS[1])
local first = 6 + 4 * n
local recorded = 0
for c = 0, (#ARGV - first + 1) / 2 - 1 do
  local name = ARGV[first + 2 * c]
  local value = ARGV[first + 2 * c + 1]
  local known = redis.call('ZSCORE', KEYS[1], name)
  if known or count < max then
    if not known then count = count + 1 end
    redis.call('ZADD', KEYS[1], now, name)
    for i = 1, n do
      local key = KEYS[1 + c * n + i]
      local bucket, points, resolution, ttl = tiers[i][1], tiers[i][2], tiers[i][3], tiers[i][4]
      redis.call('ZREMRANGEBYSCORE', key, bucket, bucket)
      redis.call('ZADD', key, bucket, bucket .. ':' .. value)
      local newest = tonumber(redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')[2])
      redis.call('ZREMRANGEBYSCORE', key, '-inf', newest - points * resolution)
      redis.call('EXPIRE', key, ttl)
    end
    recorded = recorded + 1
  end
end
redis.call('EXPIRE', KEYS[1], keep)
return recorded
"""
)


def redis_client(url: str, timeout_s: float) -> redis.Redis[bytes]:
    """The state store's Redis (or Redis Cluster) client, with its errors named as the store's."""
    return connect(url, timeout_s, _where(url), FLAG)


def profile_tag(prefix: str, profile: str) -> str:
    """The hash tag of a profile's history keys (percent-encoding leaves no brace nor colon in it)."""
    return "{" + f"{prefix}:hist:{quote(profile, safe='')}" + "}"


def series_key(prefix: str, profile: str, kind: str, tier: Tier, name: str) -> str:
    """The name comes last, whole: any text (colons, braces, newlines) gives a key of its own. (The record
    script builds the same names for the series it forgets.)"""
    return f"{profile_tag(prefix, profile)}:{kind}:{tier.resolution_s}:{name}"


def index_key(prefix: str, profile: str, kind: str) -> str:
    return f"{profile_tag(prefix, profile)}:idx:{kind}"


class RedisHistory(HistoryStore):
    """:class:`HistoryStore` on the Redis of the state store, under its key prefix."""

    def __init__(
        self,
        client: redis.Redis[bytes],
        *,
        url: str = "redis://",
        prefix: str = DEFAULT_PREFIX,
        max_series: int = 2000,
        tiers: Sequence[Tier] = TIERS,
    ) -> None:
        self.url = url
        self.prefix = check_prefix(prefix)
        self.max_series = max_series
        self.tiers = tuple(tiers)
        self._client = client

    def _record(self, profile: str, kind: str, now_s: float, values: Mapping[str, str]) -> int:
        # Every candidate goes to the script, which admits by the index it reads; a name too long is
        # dropped here (``admitted`` with every name known keeps the name order and the length rule).
        names = admitted(values, values, len(values))
        if not names:
            return 0
        index = index_key(self.prefix, profile, kind)
        base = f"{profile_tag(self.prefix, profile)}:{kind}:"
        head: list[Any] = [repr(float(now_s)), self.max_series, self.keep_s, len(self.tiers), base]
        for tier in self.tiers:
            head += [tier.bucket(now_s), tier.points, tier.resolution_s, tier.span_s + tier.resolution_s]
        calls: list[ScriptCall] = []
        for start in range(0, len(names), SCRIPT_CHUNK):
            keys, args = [index], list(head)
            for name in names[start : start + SCRIPT_CHUNK]:
                keys += [series_key(self.prefix, profile, kind, tier, name) for tier in self.tiers]
                args += [name, values[name]]
            calls.append((RECORD, keys, args))
        return sum(int(n) for n in run_scripts(self._client, calls, _where(self.url), FLAG))

    def _points(
        self, profile: str, kind: str, names: Sequence[str], tier: Tier
    ) -> dict[str, list[tuple[int, str]]]:
        with translated(_where(self.url), FLAG):
            pipe = self._client.pipeline(transaction=False)
            for name in names:
                pipe.zrange(series_key(self.prefix, profile, kind, tier, name), 0, -1)
            replies = pipe.execute()
        points: dict[str, list[tuple[int, str]]] = {}
        for name, members in zip(names, replies, strict=True):
            if members:
                points[name] = [_split(member) for member in members]
        return points

    def _names(self, profile: str, kind: str) -> list[str]:
        with translated(_where(self.url), FLAG):
            members = self._client.zrange(index_key(self.prefix, profile, kind), 0, -1)
        return [text(member) for member in members]

    def close(self) -> None:
        self._client.close()


def _split(member: bytes) -> tuple[int, str]:
    bucket, _, value = text(member).partition(":")
    return int(bucket), value
