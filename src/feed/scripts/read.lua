--[[
  KEYS = inbox, meta, followees; ARGV = epoch, maxScore, offset, after, limit.
]]
--- @include "includes/inbox"
--- @include "includes/read-inbox"
return readInbox(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]))
