--[[
  Stores a user read from MySQL, if the reader's lease still holds. KEYS = user hash;
  ARGV = lease, d, ttlMs. Replies 1 when stored, 0 when the lease was lost. The entry is stamped
  with the lease's generation (includes/cache).
]]
--- @include "includes/cache"
local h = redis.call('HMGET', KEYS[1], 'lease', 'lock')
if h[1] ~= ARGV[1] or h[2] then return 0 end
redis.call('HDEL', KEYS[1], 'lease', 'g')
local g = generationOf(ARGV[1])
if g then redis.call('HSET', KEYS[1], 'g', g) end
redis.call('HSET', KEYS[1], 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
