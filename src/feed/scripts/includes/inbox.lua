--[[
  What every inbox script shares. An inbox is three keys in the reader's slot:
  KEYS inbox (sorted set: entries, plus the sentinel SENTINEL at +inf), meta (hash: floor, ep,
  base, maxver, building, buildAt, a:<author>, a:at:<ep>, d:<member>, r:<member>, u:<member> and
  unsure (deliver.lua), and the marks of pending follow changes: pending, pendingAt, p:<change
  id>), followees (set: the reader's followees, plus SENTINEL). The sentinels make a key that Redis evicted (an evicting maxmemory-policy)
  visible: an inbox is intact only while both are there.
  Numbers are written with fmt: Lua's tostring would write a 16-digit score in exponent notation.
]]
local SENTINEL = '~'
-- The replies of a read (named the same in inbox.redis.ts).
local MISSING, VALID, BUILDING, PENDING = 0, 1, 2, 3

local function fmt(n) return string.format('%d', n) end

-- When the followees were last installed (create, a rebuild's finish), by the inboxes' clock,
-- under a name that holds the inbox's generation (a:at:<ep>): a delivery whose followers MySQL
-- listed after it, in that generation, may trust that list for every author the inbox has no
-- a:<author> of (deliver.lua), and asks for the field of its own generation only. An "a:" field,
-- so that whatever drops the pair versions drops it too, a finish of an older version of these
-- scripts included.
local function installedAtField(epoch) return 'a:at:' .. epoch end

-- Redis's own clock in ms: ages of builds and pending marks are measured on one clock, whatever
-- the clocks of the processes that write them.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The inboxes' clock: Redis's TIME, but never going back (a clock stepped back would make an
-- install look older than a listing it came after), kept in the clock key. Only on a single
-- server: on a cluster the key is in no inbox's slot, and no inbox gets an a:at:<ep>. Two readings
-- in one millisecond are equal: an install and a listing that close are not ordered (deliver.lua
-- then reads the followees).
local function clockMs(clock)
  local now = nowMs()
  local last = tonumber(redis.call('GET', clock) or '0')
  if now > last then
    redis.call('SET', clock, fmt(now))
    return now
  end
  return last
end

-- Records the install of the followees in generation `epoch`, when the script was given the clock key.
local function installedNow(meta, epoch, clock)
  if clock then redis.call('HSET', meta, installedAtField(epoch), fmt(clockMs(clock))) end
end

local function intact(inbox, followees)
  return redis.call('ZSCORE', inbox, SENTINEL) ~= false and redis.call('SISMEMBER', followees, SENTINEL) == 1
end

local function expireAll(inbox, meta, followees, ttlMs)
  local at = nowMs() + ttlMs
  redis.call('PEXPIREAT', meta, at)
  redis.call('PEXPIREAT', inbox, at)
  redis.call('PEXPIREAT', followees, at)
end

-- The marks of follow changes not yet applied (pending, pendingAt, p:<id>), as field/value pairs:
-- they outlive a drop or a rebuild of the inbox, which must not make it trusted before they are applied.
local function pendingMarks(meta)
  local fields = redis.call('HGETALL', meta)
  local kept = {}
  for i = 1, #fields, 2 do
    local field = fields[i]
    if field == 'pending' or field == 'pendingAt' or string.sub(field, 1, 2) == 'p:' then
      kept[#kept + 1] = field
      kept[#kept + 1] = fields[i + 1]
    end
  end
  return kept
end

-- Empties the inbox's keys, keeping the pending marks (a hash of marks alone is not an inbox).
local function dropKeepingMarks(inbox, meta, followees, ttlMs)
  local marks = pendingMarks(meta)
  redis.call('DEL', inbox, meta, followees)
  if #marks > 0 then
    redis.call('HSET', meta, unpack(marks))
    redis.call('PEXPIRE', meta, ttlMs)
  end
end

-- A fresh inbox with these hash fields (pending marks kept), both sentinels and the expiry.
local function install(inbox, meta, followees, fields, ttlMs)
  local marks = pendingMarks(meta)
  redis.call('DEL', inbox, meta, followees)
  redis.call('HSET', meta, unpack(fields))
  if #marks > 0 then redis.call('HSET', meta, unpack(marks)) end
  redis.call('ZADD', inbox, '+inf', SENTINEL)
  redis.call('SADD', followees, SENTINEL)
  expireAll(inbox, meta, followees, ttlMs)
end

local function raiseFloor(inbox, meta, to)
  if to > tonumber(redis.call('HGET', meta, 'floor')) then
    redis.call('HSET', meta, 'floor', fmt(to))
    redis.call('ZREMRANGEBYSCORE', inbox, '-inf', '(' .. fmt(to))
  end
end

-- After adding to an inbox: past maxItems entries (the sentinel is not one) the oldest are cut
-- and the floor rises above them.
local function trim(inbox, meta, max, card)
  local extra = (card or redis.call('ZCARD', inbox)) - 1 - max
  if extra > 0 then
    local cut = redis.call('ZRANGE', inbox, extra - 1, extra - 1, 'WITHSCORES')
    raiseFloor(inbox, meta, tonumber(cut[2]) + 1)
  end
end

-- Records a follow change (sign 1) or an unfollow (-1) of `author` at `version` if it is newer
-- than what the inbox has seen of the pair (its rebuild's base, the pair's last change).
local function admit(meta, author, version, sign)
  local m = redis.call('HMGET', meta, 'floor', 'base', 'a:' .. author, 'maxver')
  if not m[1] then return false end
  if version <= tonumber(m[2]) then return false end
  if m[3] and math.abs(tonumber(m[3])) >= version then return false end
  redis.call('HSET', meta, 'a:' .. author, fmt(sign * version))
  if version > tonumber(m[4]) then redis.call('HSET', meta, 'maxver', fmt(version)) end
  return true
end

-- Whether the inbox exists and is intact; an inbox whose set or followees Redis evicted is
-- dropped (its pending marks kept) and is not.
local function present(inbox, meta, followees, ttlMs)
  if redis.call('HEXISTS', meta, 'floor') == 0 then return false end
  if intact(inbox, followees) then return true end
  dropKeepingMarks(inbox, meta, followees, ttlMs)
  return false
end

-- Every entry, sentinel left out.
local function allEntries(inbox)
  return redis.call('ZRANGE', inbox, '-inf', '(+inf', 'BYSCORE')
end
