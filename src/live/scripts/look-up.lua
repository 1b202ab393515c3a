-- Which readers of a batch are live.
-- KEYS = the marks of one batch of readers (live:{reader}); no ARGV.
-- Returns the (1-based) positions of the keys that exist.
local live = {}
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then live[#live + 1] = i end
end
return live
