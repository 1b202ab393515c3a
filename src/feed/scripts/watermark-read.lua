--[[
  A page's watermark on a cluster, where the inbox lives in another slot: whether it is synced
  in this generation, the big-author generation, and the authors in flight with their lowest
  score, at most `cap` + 1 of them (more: the page reads the span of every followee instead).
  KEYS = authors, big-author generation; ARGV = epoch, cap.
]]
--- @include "includes/watermark"
local synced = redis.call('ZSCORE', KEYS[1], MARKER .. ARGV[1]) ~= false
local authors = {}
if synced then authors = redis.call('ZRANGE', KEYS[1], '(-inf', '+inf', 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]) + 1, 'WITHSCORES') end
return {synced and 1 or 0, authors, redis.call('GET', KEYS[2])}
