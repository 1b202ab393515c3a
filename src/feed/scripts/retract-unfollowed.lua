--[[
  A delivered blog leaves a reader who, MySQL said after the write, does not follow its author at
  `version` (their follow version read with that answer). Not when the inbox knows a newer state
  of the pair: a follow applied after it (a:<author> above version), or a rebuild from a later
  snapshot (base above version), which holds the blog if the reader follows again.
  KEYS = inbox, meta; ARGV = member, authorId, version.
]]
local m = redis.call('HMGET', KEYS[2], 'floor', 'base', 'a:' .. ARGV[2])
local version = tonumber(ARGV[3])
if not m[1] or tonumber(m[2]) > version then return 0 end
if m[3] and tonumber(m[3]) > version then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], 'd:' .. ARGV[1])
return 1
