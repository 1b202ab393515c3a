--[[
  The like marked with this token committed ('1') or rolled back ('0'). A committed like clears
  its mark; the entry is dropped when the like rolled back (the set may hold it) or when its mark
  is gone (Redis lost it meanwhile: a fill may have stored the row from before the like).
  KEYS = blog hash, like set; ARGV = token, committed.
]]
if ARGV[2] ~= '1' or redis.call('HDEL', KEYS[1], 'p:' .. ARGV[1]) == 0 then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 0
end
redis.call('HDEL', KEYS[1], 'lease')
if redis.call('HINCRBY', KEYS[1], 'pend', -1) <= 0 then redis.call('HDEL', KEYS[1], 'pend', 'pendAt') end
return 1
