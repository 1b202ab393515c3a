--[[
  Forgets an inbox whose state is unknown (a failed write): the next read rebuilds it. Marks of
  pending follow changes stay. KEYS = inbox, meta, followees; ARGV = ttlMs.
]]
--- @include "includes/inbox"
dropKeepingMarks(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]))
return 1
