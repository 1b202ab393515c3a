--[[
  The reader is active: the inbox lives ttlMs from now. KEYS = inbox, meta, followees; ARGV = ttlMs.
]]
--- @include "includes/inbox"
if redis.call('HEXISTS', KEYS[2], 'floor') == 0 then return 0 end
expireAll(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]))
return 1
