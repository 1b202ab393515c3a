--[[
  A new user's inbox: valid and empty, in this generation. Nothing happens to a valid or building
  inbox of this generation. KEYS = inbox, meta, followees[, the inboxes' clock: single server];
  ARGV = version, epoch, ttlMs.
]]
--- @include "includes/inbox"
local m = redis.call('HMGET', KEYS[2], 'floor', 'ep', 'building')
if m[2] == ARGV[2] and (m[3] or (m[1] and intact(KEYS[1], KEYS[3]))) then return 0 end
install(KEYS[1], KEYS[2], KEYS[3], {'floor', '0', 'base', ARGV[1], 'maxver', ARGV[1], 'ep', ARGV[2]}, tonumber(ARGV[3]))
installedNow(KEYS[2], ARGV[2], KEYS[4])
return 1
