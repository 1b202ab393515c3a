--[[
  A page's read of its authors (nickName and icon). KEYS = a user hash per author (one per call
  on a cluster); ARGV = a lease token (its generation first: includes/cache), staleMs, leaseMs.
  Replies, per user: {'hit', d} | {'busy'} (a profile change in flight) | {'miss', lease}.
]]
--- @include "includes/cache"
local function readUser(hash, token, staleMs, leaseMs)
  local h = redis.call('HMGET', hash, 'd', 'lock', 'lease', 'g')
  if h[2] then
    if writeInFlight({hash}, h[2], nil, nil, staleMs) then return {'busy'} end
    return {'miss', leaseOf(hash, false, token, leaseMs)}
  end
  if ofAnotherGeneration({hash}, h[1], h[4], token) then return {'miss', leaseOf(hash, false, token, leaseMs)} end
  if h[1] then return {'hit', h[1]} end
  return {'miss', leaseOf(hash, h[3], token, leaseMs)}
end

local replies = {}
for k = 1, #KEYS do
  replies[#replies + 1] = readUser(KEYS[k], ARGV[1], tonumber(ARGV[2]), ARGV[3])
end
return replies
