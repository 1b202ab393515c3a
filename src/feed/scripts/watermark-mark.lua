--[[
  A deliver task is about to commit. KEYS = tasks, authors, the author's tasks;
  ARGV = task id, author id, score.
]]
--- @include "includes/watermark"
markInFlight(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
return 1
