--[[
  A page's read of its cached blogs. KEYS = blog hash, like set, for each blog (one blog per call
  on a cluster, whose scripts keep to one slot); ARGV = the viewer as a like-set member (''
  anonymous), a lease token (its generation first: includes/cache), staleMs, leaseMs.
  Replies, per blog: {'hit', d, like count, 1 if the viewer likes it} | {'gone'} (deleted) |
  {'busy'} (a write in flight, or too many likes to keep: read MySQL, fill nothing) |
  {'miss', lease}.
]]
--- @include "includes/cache"
local function readBlog(hash, likes, viewer, token, staleMs, leaseMs)
  local h = redis.call('HMGET', hash, 'd', 'f', 'lock', 'pend', 'pendAt', 'lease', 'big', 'g')
  local inFlight = h[3] or (h[4] and tonumber(h[4]) > 0)
  if inFlight then
    if writeInFlight({hash, likes}, h[3], h[4], h[5], staleMs) then return {'busy'} end
    -- The mark was stale and the entry dropped: start again.
    return {'miss', leaseOf(hash, false, token, leaseMs)}
  end
  if ofAnotherGeneration({hash, likes}, h[2] or h[7], h[8], token) then
    return {'miss', leaseOf(hash, false, token, leaseMs)}
  end
  if h[7] then return {'busy'} end
  if h[1] and h[2] then
    if h[1] == '' then return {'gone'} end
    local liked = 0
    if viewer ~= '' and redis.call('ZSCORE', likes, viewer) then liked = 1 end
    return {'hit', h[1], redis.call('ZCARD', likes), liked}
  end
  return {'miss', leaseOf(hash, h[6], token, leaseMs)}
end

local replies = {}
for k = 1, #KEYS, 2 do
  replies[#replies + 1] = readBlog(KEYS[k], KEYS[k + 1], ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4])
end
return replies
