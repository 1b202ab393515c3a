--[[
  The follow change with this id is applied (or came to nothing): its mark goes, and only its own.
  KEYS = inbox, meta; ARGV = change id.
]]
if redis.call('HDEL', KEYS[2], 'p:' .. ARGV[1]) == 0 then return 0 end
if redis.call('HINCRBY', KEYS[2], 'pending', -1) <= 0 then redis.call('HDEL', KEYS[2], 'pending', 'pendingAt') end
return 1
