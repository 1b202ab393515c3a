--[[
  A follow: replaces the followee's entries the inbox held (`stale`) with its newest blogs and
  records the followee. KEYS = inbox, meta, followees; ARGV = version, authorId, floor ('' =
  none), maxItems, ttlMs, count of stale members, the stale members, then score/member pairs.
  While building, only the change is recorded: the finish gives up on a snapshot older than it.
  Replies 1 applied, 2 when this very change was applied before (a retry), 0 stale or no inbox.
]]
--- @include "includes/inbox"
local inbox, meta, followees = KEYS[1], KEYS[2], KEYS[3]
if not present(inbox, meta, followees, tonumber(ARGV[5])) then return 0 end
if redis.call('HGET', meta, 'a:' .. ARGV[2]) == ARGV[1] then return 2 end
if not admit(meta, ARGV[2], tonumber(ARGV[1]), 1) then return 0 end
redis.call('SADD', followees, ARGV[2])
if redis.call('HEXISTS', meta, 'building') == 1 then return 1 end
local stale = tonumber(ARGV[6])
for i = 7, 6 + stale do redis.call('ZREM', inbox, ARGV[i]) end
local floor = tonumber(redis.call('HGET', meta, 'floor'))
for i = 7 + stale, #ARGV, 2 do
  if tonumber(ARGV[i]) >= floor then redis.call('ZADD', inbox, ARGV[i], ARGV[i + 1]) end
end
if ARGV[3] ~= '' then raiseFloor(inbox, meta, tonumber(ARGV[3])) end
trim(inbox, meta, tonumber(ARGV[4]))
return 1
