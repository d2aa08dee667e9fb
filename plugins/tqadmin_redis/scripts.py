"""The Lua scripts of the Redis broker. Each touches only the keys it is given, all under one queue's tag.

Fencing: any client may XACK any pending entry (BROKERS.md, trap 1), so every script that settles, extends
or gives back an entry first checks that the caller's consumer still owns it (``XPENDING`` for that id and
consumer) and does nothing otherwise. A settlement writes its successor (the retry in the delay set, the
dead letter in the DLQ stream) and removes the original (``XACK`` + ``XDEL``) in the same script: atomic,
so neither a crash nor a concurrent consumer can see one without the other.

Times come from the server's clock (``TIME``): due times of retries and idle times of entries are both
measured there, never on a worker's clock. A delayed retry is a member of the delay set packed with
``cmsgpack`` (a nonce, then the entry's fields): the nonce keeps two identical retries two members
(BROKERS.md, trap 3).
"""

from __future__ import annotations

from tqadmin.connect.redis_client import NOW_MS, Script

# owned(id): the pending-entry record of ``id`` when ARGV[2]'s consumer holds it (ARGV[1] is the group).
_OWNED = """
local function owned(id)
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, ARGV[2])
  return p[1]
end
"""

# each_owned(action): ``action(id)`` for every id from ARGV[3] on that the caller holds -> {1 | 0 not ours...}
_EACH_OWNED = (
    _OWNED
    + """
local function each_owned(action)
  local out = {}
  for i = 3, #ARGV do
    if owned(ARGV[i]) then action(ARGV[i]); out[#out + 1] = 1 else out[#out + 1] = 0 end
  end
  return out
end
"""
)

# with_headers(fields, json): the entry's field list with its ``headers`` field set to ``json``.
_WITH_HEADERS = """
local function with_headers(fields, json)
  local out, seen = {}, false
  for i = 1, #fields, 2 do
    out[#out + 1] = fields[i]
    if fields[i] == 'headers' then out[#out + 1] = json; seen = true else out[#out + 1] = fields[i + 1] end
  end
  if not seen then out[#out + 1] = 'headers'; out[#out + 1] = json end
  return out
end
"""

# last_delivered(): the group's last-delivered id. tqadmin never leaves an acked entry in its streams, so
# every entry after it is ready and every entry up to it is pending.
_LAST_DELIVERED = """
local function last_delivered()
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local info = {}
    for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
    if info['name'] == ARGV[1] then return info['last-delivered-id'] end
  end
  return nil
end
"""

# KEYS stream, delay ; ARGV group, consumer, count, promote_max
# -> {entries taken ([id, fields]...), ms until the next retry is due or -1}
TAKE = Script(
    NOW_MS
    + """
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
for _, member in ipairs(due) do
  local packed = cmsgpack.unpack(member)
  redis.call('XADD', KEYS[1], '*', unpack(packed, 2))
  redis.call('ZREM', KEYS[2], member)
end
local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', tonumber(ARGV[3]),
  'STREAMS', KEYS[1], '>')
local entries = {}
if read then entries = read[1][2] end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local wait = -1
if #first > 0 then wait = math.max(tonumber(first[2]) - now, 0) end
return {entries, wait}
"""
)

# stale(p): whether the pending entry ``p`` ({id, holder, idle, deliveries}) sits idle past its holder's
# lease: the holder's entry in the consumers hash (KEYS[2]), or the caller's own lease (ARGV[3]) for a holder
# that registered none (RELEASED among them: its entries are idle since long ago). XAUTOCLAIM has one
# threshold for every holder, so a worker with a short lease would take entries from a live worker with a
# long one: recovery scans XPENDING from a cursor instead and claims entry by entry. The caller's own
# entries count as abandoned after three of its leases: it renews what it holds every third of one, so
# those are entries it lost track of (a reply lost with a dropped connection).
_STALE = """
local leases = {}
local function stale(p)
  if p[2] == ARGV[2] then return p[3] >= 3 * tonumber(ARGV[3]) end
  if leases[p[2]] == nil then leases[p[2]] = tonumber(redis.call('HGET', KEYS[2], p[2]) or ARGV[3]) end
  return p[3] >= leases[p[2]]
end
"""

# KEYS stream, consumers ; ARGV group, consumer, default_lease_ms, scan, claim_max, cursor
# -> {claimed ([id, fields, deliveries]...), next cursor ('-' once the scan reached the end)}
RECOVER = Script(
    _STALE
    + """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[6], '+', tonumber(ARGV[4]))
local claimed, cursor = {}, '-'
for _, p in ipairs(pending) do
  if #claimed >= tonumber(ARGV[5]) then break end
  cursor = '(' .. p[1]
  if stale(p) then
    local got = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, p[1])
    if #got > 0 and got[1] then claimed[#claimed + 1] = {got[1][1], got[1][2], p[4] + 1} end
  end
end
if #pending < tonumber(ARGV[4]) and #claimed < tonumber(ARGV[5]) then cursor = '-' end
return {claimed, cursor}
"""
)

# KEYS stream, consumers ; ARGV group, consumer, default_lease_ms, scan, cursor
# -> {ids claimed, next cursor ('-' at the end)}: the same claim without reading the entries (an admin
# session takes over everything left idle at its start, then reads the entries batch by batch).
CLAIM_STALE = Script(
    _STALE
    + """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[5], '+', tonumber(ARGV[4]))
local claimed = {}
for _, p in ipairs(pending) do
  if stale(p) then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, p[1], 'RETRYCOUNT', p[4] + 1, 'JUSTID')
    claimed[#claimed + 1] = p[1]
  end
end
if #pending < tonumber(ARGV[4]) then return {claimed, '-'} end
return {claimed, '(' .. pending[#pending][1]}
"""
)

# KEYS stream ; ARGV group, consumer, id... -> {1 acked | 0 not ours, ...}
ACK = Script(
    _EACH_OWNED
    + """
return each_owned(function(id)
  redis.call('XACK', KEYS[1], ARGV[1], id)
  redis.call('XDEL', KEYS[1], id)
end)
"""
)

# KEYS stream ; ARGV group, consumer, id... -> {1 renewed | 0 not ours, ...}
# XCLAIM by the holder itself resets the idle time; JUSTID leaves the delivery count alone.
EXTEND = Script(
    _EACH_OWNED
    + """
return each_owned(function(id) redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID') end)
"""
)

# KEYS stream ; ARGV group, consumer, released consumer, id... -> number given back
# Hands each entry to RELEASED, idle since long ago (so the next recovery pass takes it) and with its
# delivery count one lower, so that the claim that hands it out again does not count as a crash.
RELEASE = Script(
    _OWNED
    + """
local n = 0
for i = 4, #ARGV do
  local p = owned(ARGV[i])
  if p then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[i], 'IDLE', 1000000000000,
      'RETRYCOUNT', math.max(p[4] - 1, 0), 'JUSTID')
    n = n + 1
  end
end
return n
"""
)

# KEYS stream, delay ; ARGV group, consumer, id, headers json, delay ms, nonce -> 1 | 0 not ours
# A delay of 0 goes straight back to the stream's tail.
RETRY = Script(
    NOW_MS
    + _OWNED
    + _WITH_HEADERS
    + """
if not owned(ARGV[3]) then return 0 end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])
if #entry == 0 then redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]); return 0 end
local fields = with_headers(entry[1][2], ARGV[4])
local delay = tonumber(ARGV[5])
if delay <= 0 then
  redis.call('XADD', KEYS[1], '*', unpack(fields))
else
  table.insert(fields, 1, ARGV[6])
  redis.call('ZADD', KEYS[2], now + delay, cmsgpack.pack(fields))
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('XDEL', KEYS[1], ARGV[3])
return 1
"""
)

# KEYS stream, dlq stream ; ARGV group, consumer, id, headers json -> 1 | 0 not ours
DEAD_LETTER = Script(
    _OWNED
    + _WITH_HEADERS
    + """
if not owned(ARGV[3]) then return 0 end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])
if #entry == 0 then redis.call('XACK', KEYS[1], ARGV[1], ARGV[3]); return 0 end
redis.call('XADD', KEYS[2], '*', unpack(with_headers(entry[1][2], ARGV[4])))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('XDEL', KEYS[1], ARGV[3])
return 1
"""
)

# KEYS stream ; ARGV n1, field, value, ... (n1 = number of field and value items), n2, ... -> added | -1
# Only into a stream that exists: a typo must not create a queue nobody reads.
PUBLISH_EXISTING = Script("""
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local i, added = 1, 0
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + n))
  added = added + 1
  i = i + n + 1
end
return added
""")

# The entries a session may take or drop: those given back (held by RELEASED), then the ready ones (after
# the group's last-delivered id), oldest first. Defines takeable(max) -> {released ids, ready entries}.
_TAKEABLE = (
    _LAST_DELIVERED
    + """
local function takeable(max)
  local released = {}
  for _, p in ipairs(redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', max, ARGV[2])) do
    released[#released + 1] = p[1]
  end
  local ready = {}
  if #released < max then
    local last = last_delivered()
    if last then ready = redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', max - #released) end
  end
  return released, ready
end
"""
)

# KEYS source, target ; ARGV group, released consumer, max -> moved, or -1 when the target does not exist
# (the server-side move between two queues of one tag)
MOVE = Script(
    _TAKEABLE
    + """
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local released, ready = takeable(tonumber(ARGV[3]))
local moved = 0
for _, id in ipairs(released) do
  local entry = redis.call('XRANGE', KEYS[1], id, id)
  if #entry > 0 then redis.call('XADD', KEYS[2], '*', unpack(entry[1][2])); moved = moved + 1 end
  redis.call('XACK', KEYS[1], ARGV[1], id)
  redis.call('XDEL', KEYS[1], id)
end
for _, entry in ipairs(ready) do
  redis.call('XADD', KEYS[2], '*', unpack(entry[2]))
  redis.call('XDEL', KEYS[1], entry[1])
  moved = moved + 1
end
return moved
"""
)

# KEYS stream ; ARGV group, released consumer, max -> dropped
PURGE = Script(
    _TAKEABLE
    + """
local released, ready = takeable(tonumber(ARGV[3]))
for _, id in ipairs(released) do
  redis.call('XACK', KEYS[1], ARGV[1], id)
  redis.call('XDEL', KEYS[1], id)
end
for _, entry in ipairs(ready) do redis.call('XDEL', KEYS[1], entry[1]) end
return #released + #ready
"""
)

# KEYS stream ; ARGV group, released consumer -> how many entries a session could take now
TAKEABLE_COUNT = Script(
    _LAST_DELIVERED
    + """
local ready = 0
local last = last_delivered()
local summary = redis.call('XPENDING', KEYS[1], ARGV[1])
local held = summary[1]
for _, c in ipairs(summary[4] or {}) do
  if c[1] == ARGV[2] then ready = ready + tonumber(c[2]) end
end
return redis.call('XLEN', KEYS[1]) - held + ready
"""
)

# KEYS stream, delay ; ARGV group, released consumer -> ms since the oldest takeable message became takeable,
# or -1 when none is. Takeable now: a retry whose due time has passed (still in the delay set: aged from its
# due time, so a retry waiting out its delay never ages a queue), an entry never delivered (from its id), or
# one given back (held by the released consumer). What a live consumer holds is not takeable.
OLDEST_TAKEABLE = Script(
    NOW_MS
    + _LAST_DELIVERED
    + """
local oldest = nil
local function seen(ms) if oldest == nil or ms < oldest then oldest = ms end end
local function id_ms(id) return tonumber(string.match(id, '^%d+')) end
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1)
if #due > 0 then seen(tonumber(due[2])) end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local last = last_delivered()
  local start = '-'
  if last then
    start = '(' .. last
    local given = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
    if #given > 0 then seen(id_ms(given[1][1])) end
  end
  local fresh = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', 1)
  if #fresh > 0 then seen(id_ms(fresh[1][1])) end
end
if oldest == nil then return -1 end
return math.max(now - oldest, 0)
"""
)

# KEYS stream, consumers ; ARGV group, consumer -> 1 removed | 0 still holds entries
# XGROUP DELCONSUMER drops the consumer's pending entries silently (BROKERS.md, trap 2): only a consumer
# that holds nothing is removed.
FORGET_CONSUMER = Script("""
local held = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #held > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[2])
return 1
""")

ALL = (
    TAKE,
    RECOVER,
    CLAIM_STALE,
    ACK,
    EXTEND,
    RELEASE,
    RETRY,
    DEAD_LETTER,
    PUBLISH_EXISTING,
    MOVE,
    PURGE,
    TAKEABLE_COUNT,
    OLDEST_TAKEABLE,
    FORGET_CONSUMER,
)
