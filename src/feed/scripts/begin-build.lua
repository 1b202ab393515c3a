--[[
  Starts a rebuild: unless a valid inbox of this generation exists, or a build of this
  generation started less than staleMs ago (by Redis's clock): a build left by a dead process is
  taken over after that. Pending marks stay: the rebuild does not apply their changes.
  KEYS = inbox, meta, followees; ARGV = token, epoch, staleMs, ttlMs.
]]
--- @include "includes/inbox"
local m = redis.call('HMGET', KEYS[2], 'floor', 'ep', 'building', 'buildAt')
local now = nowMs()
if m[2] == ARGV[2] then
  if m[3] then
    if now - tonumber(m[4]) < tonumber(ARGV[3]) then return 0 end
  elseif m[1] and intact(KEYS[1], KEYS[3]) then
    return 0
  end
end
install(KEYS[1], KEYS[2], KEYS[3], {'floor', '0', 'base', '0', 'maxver', '0', 'ep', ARGV[2], 'building', ARGV[1], 'buildAt', fmt(now)}, tonumber(ARGV[4]))
return 1
