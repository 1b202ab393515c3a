--[[
  The fan-out watermark (KEYS in the {wm} slot): tasks (hash task id -> '<author id>:<score>'), authors
  (sorted set author id -> the lowest score in flight, and the marker '~synced:<generation>' at
  -inf: the set holds every task in flight of that generation) and one sorted set per author of
  its tasks (task id -> score).
]]
local MARKER = '~synced:'

local function markInFlight(tasks, authors, authorKey, task, author, score)
  redis.call('HSET', tasks, task, author .. ':' .. score)
  redis.call('ZADD', authorKey, score, task)
  local lowest = redis.call('ZSCORE', authors, author)
  if not lowest or tonumber(lowest) > tonumber(score) then redis.call('ZADD', authors, score, author) end
end
