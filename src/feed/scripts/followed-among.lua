--[[
  Which of some authors the reader follows, from the inbox's followees, if the inbox is valid
  for this generation (the conditions of a read: it exists, is intact, was built in `epoch`, is
  not being built and has no follow change pending). KEYS = inbox, meta, followees;
  ARGV = epoch, authorId... Replies 0 (not valid: ask MySQL) or one 0/1 per author.
]]
--- @include "includes/inbox"
local m = redis.call('HMGET', KEYS[2], 'floor', 'ep', 'building', 'pending')
if not m[1] or m[2] ~= ARGV[1] or m[3] then return 0 end
if m[4] and tonumber(m[4]) > 0 then return 0 end
if not intact(KEYS[1], KEYS[3]) then return 0 end
local flags = {}
for i = 2, #ARGV do flags[#flags + 1] = redis.call('SISMEMBER', KEYS[3], ARGV[i]) end
return flags
