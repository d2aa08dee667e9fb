"""The Lua scripts of the Redis store. Each touches only the keys it is given, all under one hash tag.

Times come from the server's clock (``TIME``), so leases and heartbeat ages do not depend on the workers'
clocks agreeing. A job record is a hash: ``state`` (claimed | released | done), ``owner``, ``token`` (the
fencing counter, only ever incremented), ``expires`` (lease end, ms), ``crashes``, ``done_at``. A claim is
*claimed* until the run of its job starts, then *running*: only a running claim that expires counts a crash.
"""

from tqadmin.connect.redis_client import NOW_MS, Script

CLAIM_FN = """
local function claim(key, owner, lease_ms, retention_s)
  local h = redis.call('HMGET', key, 'state', 'owner', 'token', 'expires', 'crashes')
  local crashes = tonumber(h[5] or '0')
  if h[1] == 'done' then
    return {'done', h[2] or '', tonumber(h[3] or '0'), crashes, 0}
  end
  if h[1] == 'claimed' or h[1] == 'running' then
    local expires = tonumber(h[4] or '0')
    if expires > now then
      return {'held', h[2] or '', tonumber(h[3] or '0'), crashes, expires - now}
    end
    if h[1] == 'running' then crashes = crashes + 1 end
  end
  local token = redis.call('HINCRBY', key, 'token', 1)
  redis.call('HSET', key, 'state', 'claimed', 'owner', owner, 'expires', now + tonumber(lease_ms),
    'crashes', crashes)
  redis.call('EXPIRE', key, retention_s)
  return {'claimed', owner, token, crashes, 0}
end
"""

COMPLETE_FN = """
local function complete(key, token, retention_s)
  local h = redis.call('HMGET', key, 'state', 'token')
  if (h[1] ~= 'claimed' and h[1] ~= 'running') or h[2] ~= token then return 0 end
  redis.call('HSET', key, 'state', 'done', 'done_at', now)
  redis.call('HDEL', key, 'expires')
  redis.call('EXPIRE', key, retention_s)
  return 1
end
"""

# KEYS[1] job ; ARGV owner, lease_ms, retention_s
# -> {state, owner, token, crashes, ms until the live lease ends}
CLAIM = Script(NOW_MS + CLAIM_FN + "return claim(KEYS[1], ARGV[1], ARGV[2], ARGV[3])\n")

# KEYS[1] job ; ARGV token, lease_ms, retention_s -> 1 renewed | 0 superseded
RENEW = Script(
    NOW_MS
    + """
local h = redis.call('HMGET', KEYS[1], 'state', 'token')
if (h[1] ~= 'claimed' and h[1] ~= 'running') or h[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[2]))
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""
)

# KEYS[1] job ; ARGV token, retention_s -> 1 done | 0 superseded
COMPLETE = Script(NOW_MS + COMPLETE_FN + "return complete(KEYS[1], ARGV[1], ARGV[2])\n")

# KEYS: the jobs to complete, then the jobs to claim ; ARGV: how many to complete, retention_s, owner,
# lease_ms, then the tokens of the jobs to complete -> {1|0 per completion..., {claim reply} per claim...}
# Both steps in order in one call, each job as COMPLETE and CLAIM would do it: one command for a worker's
# whole round trip, not one per job (on one server; a cluster spreads the jobs over slots).
COMPLETE_AND_CLAIM = Script(
    NOW_MS
    + CLAIM_FN
    + COMPLETE_FN
    + """
local n = tonumber(ARGV[1])
local out = {}
for i = 1, n do out[i] = complete(KEYS[i], ARGV[4 + i], ARGV[2]) end
for i = n + 1, #KEYS do out[i] = claim(KEYS[i], ARGV[3], ARGV[4], ARGV[2]) end
return out
"""
)

# KEYS[1] job ; ARGV token, forget_crashes (0|1) -> 1 released | 0 superseded
RELEASE = Script("""
local h = redis.call('HMGET', KEYS[1], 'state', 'token')
if (h[1] ~= 'claimed' and h[1] ~= 'running') or h[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'released')
redis.call('HDEL', KEYS[1], 'expires')
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'crashes', 0) end
return 1
""")

# KEYS[1] job ; ARGV token, started (0|1) -> 1 given up | 0 superseded
# The holder died: a started claim's lease ends now (the next claim counts the crash), another is released.
ABANDON = Script(
    NOW_MS
    + """
local h = redis.call('HMGET', KEYS[1], 'state', 'token')
if (h[1] ~= 'claimed' and h[1] ~= 'running') or h[2] ~= ARGV[1] then return 0 end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'running', 'expires', now)
else
  redis.call('HSET', KEYS[1], 'state', 'released')
  redis.call('HDEL', KEYS[1], 'expires')
end
return 1
"""
)

# KEYS[1] job ; ARGV token -> 1 running | 0 superseded
START = Script("""
local h = redis.call('HMGET', KEYS[1], 'state', 'token')
if (h[1] ~= 'claimed' and h[1] ~= 'running') or h[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'running')
return 1
""")

# KEYS latest, seen, ttl, history ; ARGV worker id, snapshot json, ttl_ms, history_step_ms, history_cap,
# history_keep_ms, dead_retention_ms
BEAT = Script(
    NOW_MS
    + """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
local last = redis.call('ZRANGE', KEYS[4], 0, 0, 'REV', 'WITHSCORES')
if #last == 0 or now - tonumber(last[2]) >= tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[4], now, ARGV[2])
  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -(tonumber(ARGV[5]) + 1))
end
redis.call('PEXPIRE', KEYS[4], ARGV[6])
local gone = redis.call('ZRANGE', KEYS[2], '-inf', now - tonumber(ARGV[7]), 'BYSCORE')
for _, id in ipairs(gone) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', KEYS[2], id)
end
return now
"""
)

ALL = (CLAIM, RENEW, COMPLETE, COMPLETE_AND_CLAIM, RELEASE, ABANDON, START, BEAT)
