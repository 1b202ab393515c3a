--[[
  The first likers of a cached blog, earliest like first (ties: smaller user id first, as the
  zero-padded members sort), if its like set is filled and no write or like is in flight.
  KEYS = blog hash, like set; ARGV = limit, the reader's generation (an entry of another one is
  not trusted: includes/cache). Replies member, score pairs, or 0 (read MySQL).
]]
local h = redis.call('HMGET', KEYS[1], 'f', 'lock', 'pend', 'big', 'g')
if not h[1] or h[2] or h[4] or (h[3] and tonumber(h[3]) > 0) or h[5] ~= ARGV[2] then return 0 end
return redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
