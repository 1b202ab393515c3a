--[[
  A page's read of one cached user (nickName and icon). KEYS = user hash; ARGV = a lease token,
  staleMs, leaseMs. Replies {'hit', d} | {'busy'} (a profile change in flight) | {'miss', lease}.
]]
--- @include "includes/cache"
local h = redis.call('HMGET', KEYS[1], 'd', 'lock', 'lease')
if writeInFlight(KEYS, h[2], nil, nil, tonumber(ARGV[2])) then return {'busy'} end
if h[2] then return {'miss', leaseOf(KEYS[1], false, ARGV[1], ARGV[3])} end
if h[1] then return {'hit', h[1]} end
return {'miss', leaseOf(KEYS[1], h[3], ARGV[1], ARGV[3])}
