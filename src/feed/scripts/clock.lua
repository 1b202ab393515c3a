--[[
  The inboxes' clock (includes/inbox.lua, clockMs): Redis's TIME in ms, never going back.
  KEYS = the clock key. A delivery's listedAt is read on it (deliver.lua).
]]
--- @include "includes/inbox"
return clockMs(KEYS[1])
