--[[
  A page's read of one cached blog. KEYS = blog hash, like set; ARGV = the viewer as a like-set
  member ('' anonymous), a lease token, staleMs, leaseMs.
  Replies {'hit', d, like count, 1 if the viewer likes it} | {'gone'} (deleted) | {'busy'} (a write
  in flight, or a blog with too many likes to keep: read MySQL, fill nothing) | {'miss', lease}.
]]
--- @include "includes/cache"
local h = redis.call('HMGET', KEYS[1], 'd', 'f', 'lock', 'pend', 'pendAt', 'lease', 'big')
if writeInFlight(KEYS, h[3], h[4], h[5], tonumber(ARGV[3])) then return {'busy'} end
if not h[3] and not (h[4] and tonumber(h[4]) > 0) then
  if h[7] then return {'busy'} end
  if h[1] and h[2] then
    if h[1] == '' then return {'gone'} end
    local liked = 0
    if ARGV[1] ~= '' and redis.call('ZSCORE', KEYS[2], ARGV[1]) then liked = 1 end
    return {'hit', h[1], redis.call('ZCARD', KEYS[2]), liked}
  end
  return {'miss', leaseOf(KEYS[1], h[6], ARGV[2], ARGV[4])}
end
-- The entry was dropped (a stale mark): start again.
return {'miss', leaseOf(KEYS[1], false, ARGV[2], ARGV[4])}
