--[[
  The follow change with this id is applied (or came to nothing): its mark goes, and only its own.
  When it was the last one, the inbox is trusted again from here on, so the blogs that deliveries
  wrote meanwhile for authors the followees did not hold (u:<member>, deliver.lua) are taken out
  now if the followees still lack their author (an unfollow applied: the executor's own take-back
  would come after this clear), and kept if a follow added the author since.
  KEYS = inbox, meta, followees; ARGV = change id.
]]
if redis.call('HDEL', KEYS[2], 'p:' .. ARGV[1]) == 0 then return 0 end
if redis.call('HINCRBY', KEYS[2], 'pending', -1) > 0 then return 1 end
redis.call('HDEL', KEYS[2], 'pending', 'pendingAt')
if tonumber(redis.call('HGET', KEYS[2], 'unsure') or '0') > 0 then
  local fields = redis.call('HGETALL', KEYS[2])
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'u:' then
      if redis.call('SISMEMBER', KEYS[3], fields[i + 1]) == 0 then redis.call('ZREM', KEYS[1], string.sub(fields[i], 3)) end
      redis.call('HDEL', KEYS[2], fields[i])
    end
  end
  redis.call('HDEL', KEYS[2], 'unsure')
end
return 1
