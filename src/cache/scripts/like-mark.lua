--[[
  A like or unlike is about to commit, under the blog row's lock (likes of one blog are marked in
  their commit order). Takes any fill's lease away, applies the change to a filled like set, and
  marks it in flight: readers go to MySQL until like-done clears the mark.
  KEYS = blog hash, like set; ARGV = token, member (the user), score (the like's ms), '1' like /
  '0' unlike, staleMs. The hash lives at least staleMs from here.
]]
--- @include "includes/cache"
redis.call('HDEL', KEYS[1], 'lease')
if redis.call('HGET', KEYS[1], 'f') then
  if ARGV[4] == '1' then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2]) else redis.call('ZREM', KEYS[2], ARGV[2]) end
end
local now = nowMs()
redis.call('HINCRBY', KEYS[1], 'pend', 1)
redis.call('HSET', KEYS[1], 'pendAt', now, 'p:' .. ARGV[1], now)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[5]) then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
