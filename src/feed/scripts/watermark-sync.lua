--[[
  Adds tasks (read from the outbox) to the watermark and, when `complete`, says it holds every
  task in flight of this generation (markers of other generations go). KEYS = tasks, authors,
  then each task's author's tasks; ARGV = complete ('1' | '0'), epoch, then task id, author id,
  score triples (in the order of those keys).
]]
--- @include "includes/watermark"
for i = 3, #ARGV, 3 do
  markInFlight(KEYS[1], KEYS[2], KEYS[2 + i / 3], ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
if ARGV[1] == '1' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '-inf')
  redis.call('ZADD', KEYS[2], '-inf', MARKER .. ARGV[2])
end
return 1
