--[[
  Tasks whose every chunk is written leave the watermark; their author's lowest score in flight
  is recomputed (or the author leaves). KEYS = tasks, authors, then each task's author's tasks;
  ARGV = task id, author id pairs (in the order of those keys).
]]
for i = 1, #ARGV, 2 do
  local task, author, authorKey = ARGV[i], ARGV[i + 1], KEYS[2 + (i + 1) / 2]
  local held = redis.call('HGET', KEYS[1], task)
  if held and string.match(held, '^(%d+):') == author then
    redis.call('HDEL', KEYS[1], task)
    redis.call('ZREM', authorKey, task)
    local lowest = redis.call('ZRANGE', authorKey, 0, 0, 'WITHSCORES')
    if #lowest == 0 then redis.call('ZREM', KEYS[2], author) else redis.call('ZADD', KEYS[2], lowest[2], author) end
  end
end
return 1
