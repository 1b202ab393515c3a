--[[
  An unfollow's first step: records it and forgets the followee; replies the inbox's blogs (the
  caller asks MySQL which are the followee's), also when this very change was recorded before (a
  retry: the removal may not have happened), or {0} when the change is stale or there is no inbox.
  KEYS = inbox, meta, followees; ARGV = version, authorId, ttlMs.
]]
--- @include "includes/inbox"
if not present(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[3])) then return {0} end
if redis.call('HGET', KEYS[2], 'a:' .. ARGV[2]) ~= fmt(-tonumber(ARGV[1])) and not admit(KEYS[2], ARGV[2], tonumber(ARGV[1]), -1) then return {0} end
redis.call('SREM', KEYS[3], ARGV[2])
return {1, allEntries(KEYS[1])}
