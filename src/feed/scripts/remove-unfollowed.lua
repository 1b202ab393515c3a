--[[
  An unfollow's second step: removes the followee's blogs, unless a newer change of the pair came
  in between. KEYS = inbox, meta; ARGV = version, authorId, then members.
]]
if redis.call('HGET', KEYS[2], 'a:' .. ARGV[2]) ~= string.format('%d', -tonumber(ARGV[1])) then return 0 end
for i = 3, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('HDEL', KEYS[2], 'd:' .. ARGV[i])
end
return 1
