"""The pause set on Redis: a hash of records and a sorted set of their ends, under one hash tag.

Keys (``{<prefix>:pause}`` is the tag, so every script touches one slot and works on Redis Cluster):
``T:records``, a HASH from the target's key (:attr:`~tqadmin.store.pauses.base.Target.key`) to the record's
JSON, and ``T:until``, a ZSET of the same keys scored by the end in milliseconds (``+inf``: until resumed). A
pause and a resume are one script each, timed by the server's ``TIME``; a reap is one script that takes the
expired members out and returns them, so two reapers never both get the same expiry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tqadmin.connect.redis_client import NOW_MS, Script, connect, run_scripts, server_time, text, translated
from tqadmin.store.keys import DEFAULT_PREFIX, check_prefix
from tqadmin.store.pauses.base import Pause, PauseStore, Target, readable
from tqadmin.store.redis_errors import FLAG, where

if TYPE_CHECKING:
    import redis

_PAUSE = Script(
    NOW_MS
    + """
-- KEYS: records, until; ARGV: key, reason, who, for_ms (-1: until resumed), then the keys whose standing
-- pause stops this one from being written (false returned, nothing written)
for i = 5, #ARGV do
  local ends = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if ends and (ends == 'inf' or tonumber(ends) > now) then
    return false
  end
end
local for_ms = tonumber(ARGV[4])
local ends = 'null'
local score = '+inf'
if for_ms >= 0 then
  ends = string.format('%.3f', (now + for_ms) / 1000)
  score = now + for_ms
end
local record = '{"reason":' .. cjson.encode(ARGV[2]) .. ',"who":' .. cjson.encode(ARGV[3])
  .. ',"since":' .. string.format('%.3f', now / 1000) .. ',"until":' .. ends .. '}'
redis.call('HSET', KEYS[1], ARGV[1], record)
redis.call('ZADD', KEYS[2], score, ARGV[1])
return record
"""
)
_RESUME = Script(
    """
-- KEYS: records, until; ARGV: key. The record deleted, false when there was none.
local record = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return record
"""
)
_REAP = Script(
    NOW_MS
    + """
-- KEYS: records, until. Key and record of each pause whose end has passed, deleted here.
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
local out = {}
for _, key in ipairs(gone) do
  local record = redis.call('HGET', KEYS[1], key)
  redis.call('HDEL', KEYS[1], key)
  redis.call('ZREM', KEYS[2], key)
  if record then
    table.insert(out, key)
    table.insert(out, record)
  end
end
return out
"""
)


def pause_keys(prefix: str) -> tuple[str, str]:
    """(records hash, ends zset)."""
    tag = "{" + prefix + ":pause}"
    return f"{tag}:records", f"{tag}:until"


class RedisPauses(PauseStore):
    """:class:`PauseStore` on the state store's Redis, under its key prefix."""

    def __init__(self, client: redis.Redis, *, url: str = "redis://", prefix: str = DEFAULT_PREFIX) -> None:
        self.url = url
        self.prefix = check_prefix(prefix)
        self._client = client
        self._keys = pause_keys(self.prefix)

    @classmethod
    def from_url(cls, url: str, *, timeout_s: float = 10.0, prefix: str = DEFAULT_PREFIX) -> RedisPauses:
        return cls(connect(url, timeout_s, where(url), FLAG), url=url, prefix=prefix)

    def _eval(self, script: Script, *args: Any) -> Any:
        [reply] = run_scripts(self._client, [(script, self._keys, args)], where(self.url), FLAG)
        return reply

    def pause(self, target: Target, *, reason: str, who: str, for_s: float | None) -> Pause:
        for_ms = -1 if for_s is None else max(int(for_s * 1000), 0)
        record = self._eval(_PAUSE, target.key, reason, who, for_ms)
        return Pause.decode(target.key, text(record))

    def pause_unless_paused(
        self, target: Target, *, reason: str, who: str, for_s: float | None
    ) -> Pause | None:
        for_ms = -1 if for_s is None else max(int(for_s * 1000), 0)
        blockers = [t.key for t in target.covered_by()]
        record = self._eval(_PAUSE, target.key, reason, who, for_ms, *blockers)
        return None if not record else Pause.decode(target.key, text(record))

    def resume(self, target: Target) -> Pause | None:
        record = self._eval(_RESUME, target.key)
        return None if not record else Pause.decode(target.key, text(record))

    def now(self) -> float:
        with translated(where(self.url), FLAG):
            seconds, micros = server_time(self._client, self._keys[0])
        return seconds + micros / 1e6

    def standing(self) -> tuple[float, list[Pause]]:
        with translated(where(self.url), FLAG):
            records = self._client.hgetall(self._keys[0])
        now = self.now()
        pauses = readable(lambda item: Pause.decode(text(item[0]), text(item[1])), records.items())
        return now, sorted((p for p in pauses if not p.expired(now)), key=_oldest_first)

    def reap(self) -> list[Pause]:
        flat = self._eval(_REAP)
        pairs = [(text(flat[i]), text(flat[i + 1])) for i in range(0, len(flat), 2)]
        return readable(lambda pair: Pause.decode(*pair), pairs)

    def delete_prefix(self) -> int:
        """Delete this prefix's pauses (tests and clean-up); returns how many keys went."""
        with translated(where(self.url), FLAG):
            return int(self._client.delete(*self._keys))

    def close(self) -> None:
        self._client.close()


def _oldest_first(pause: Pause) -> tuple[float, str]:
    return pause.since, pause.target.key
