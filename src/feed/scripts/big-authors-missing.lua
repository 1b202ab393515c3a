--[[
  Sets a generation token (the big-author generation, or an author's pulled-blog token) when
  there is none of this epoch (a first reader after a loss or a new epoch); an unsettled one of
  this epoch stays. KEYS = the token's key; ARGV = epoch, token.
]]
local current = redis.call('GET', KEYS[1])
if current then
  local epoch = string.match(current, '^~?(%d+):')
  if epoch == ARGV[1] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ARGV[2])
return 1
