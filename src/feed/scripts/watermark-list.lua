--[[
  The whole watermark, for its upkeep: {synced 0|1, task id -> '<author id>:<score>' pairs}. KEYS = tasks, authors; ARGV = epoch.
]]
--- @include "includes/watermark"
local synced = redis.call('ZSCORE', KEYS[2], MARKER .. ARGV[1]) ~= false
return {synced and 1 or 0, redis.call('HGETALL', KEYS[1])}
