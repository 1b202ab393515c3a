--[[
  A deleted blog leaves many inboxes. KEYS = inbox, meta pairs; ARGV = member.
  While an inbox is being built the retraction is recorded (r:<member>): the snapshot may have
  been read before the delete.
]]
for i = 1, #KEYS, 2 do
  redis.call('ZREM', KEYS[i], ARGV[1])
  if redis.call('HEXISTS', KEYS[i + 1], 'building') == 1 then
    redis.call('HSET', KEYS[i + 1], 'r:' .. ARGV[1], '1')
    redis.call('HDEL', KEYS[i + 1], 'd:' .. ARGV[1])
  end
end
return #KEYS / 2
