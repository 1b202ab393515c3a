--[[
  Installs a rebuild's snapshot. KEYS = inbox, meta, followees[, the inboxes' clock: single
  server]; ARGV = token, version, floor, maxItems, ttlMs, followee count, followee ids, muted
  count, the ids of muted follows (followed but not followees), then score/member pairs.
  Replies 1 done, 0 lost (another build took over), -1 raced: a follow change newer than the
  snapshot came meanwhile, or Redis evicted the sorted set during the build (with it went the
  blogs delivered since the snapshot was read), and the inbox is dropped (its pending marks kept).
  Deliveries recorded during the build stay only if the snapshot has their reader follow the
  author; retracted blogs stay out.
]]
--- @include "includes/inbox"
local inbox, meta, followees = KEYS[1], KEYS[2], KEYS[3]
local ttl = tonumber(ARGV[5])
if redis.call('HGET', meta, 'building') ~= ARGV[1] then return 0 end
if tonumber(redis.call('HGET', meta, 'maxver')) > tonumber(ARGV[2]) or not redis.call('ZSCORE', inbox, SENTINEL) then
  dropKeepingMarks(inbox, meta, followees, ttl)
  return -1
end
local count = tonumber(ARGV[6])
local followed = {}
redis.call('DEL', followees)
redis.call('SADD', followees, SENTINEL)
for i = 7, 6 + count do
  followed[ARGV[i]] = true
  redis.call('SADD', followees, ARGV[i])
end
local mutedAt = 7 + count
local muted = tonumber(ARGV[mutedAt])
local firstPair = mutedAt + muted + 1
local retracted = {}
local fields = redis.call('HGETALL', meta)
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  local kind, rest = string.sub(field, 1, 2), string.sub(field, 3)
  if kind == 'd:' then
    if not followed[value] then redis.call('ZREM', inbox, rest) end
    redis.call('HDEL', meta, field)
  elseif kind == 'r:' then
    retracted[rest] = true
    redis.call('HDEL', meta, field)
  elseif kind == 'a:' then
    redis.call('HDEL', meta, field)
  end
end
-- After the loop above, which drops every a: field. A muted follow is recorded as the pair's
-- unfollow at the snapshot's version: MySQL lists its reader among the author's followers, and a
-- delivery that trusts that list (after a:at:<ep>, deliver.lua) must find the pair's own state
-- first.
installedNow(meta, redis.call('HGET', meta, 'ep'), KEYS[4])
for i = mutedAt + 1, mutedAt + muted do redis.call('HSET', meta, 'a:' .. ARGV[i], fmt(-tonumber(ARGV[2]))) end
local floor = tonumber(redis.call('HGET', meta, 'floor'))
for i = firstPair, #ARGV, 2 do
  if not retracted[ARGV[i + 1]] and tonumber(ARGV[i]) >= floor then redis.call('ZADD', inbox, ARGV[i], ARGV[i + 1]) end
end
redis.call('HSET', meta, 'base', ARGV[2])
redis.call('HDEL', meta, 'building', 'buildAt')
raiseFloor(inbox, meta, tonumber(ARGV[3]))
expireAll(inbox, meta, followees, ttl)
trim(inbox, meta, tonumber(ARGV[4]))
return 1
