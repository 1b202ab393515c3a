--[[
  Every blog an inbox holds. KEYS = inbox, meta. Replies {0} when there is no inbox.
]]
--- @include "includes/inbox"
if redis.call('HEXISTS', KEYS[2], 'floor') == 0 then return {0} end
return {1, allEntries(KEYS[1])}
