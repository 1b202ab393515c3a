--[[
  Stores a blog read from MySQL, if the reader's lease still holds (no write came since it was
  given). KEYS = blog hash, like set; ARGV = lease, d ('' deleted), ttlMs, big ('1': too many
  likes to keep, d is not kept either), then score, member pairs of its likers. The entry is
  stamped with the lease's generation (includes/cache).
  Replies 1 when stored, 0 when the lease was lost.
]]
--- @include "includes/cache"
local h = redis.call('HMGET', KEYS[1], 'lease', 'lock', 'pend')
if h[1] ~= ARGV[1] or h[2] or (h[3] and tonumber(h[3]) > 0) then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], 'lease', 'g')
local g = generationOf(ARGV[1])
if g then redis.call('HSET', KEYS[1], 'g', g) end
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[1], 'big', '1')
else
  for i = 5, #ARGV, 1000 do
    redis.call('ZADD', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  redis.call('HSET', KEYS[1], 'd', ARGV[2], 'f', '1')
  if #ARGV >= 5 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
