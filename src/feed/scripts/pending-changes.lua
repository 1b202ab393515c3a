--[[
  The ids of the follow changes marked pending. KEYS = meta.
]]
local ids = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 2) == 'p:' then ids[#ids + 1] = string.sub(field, 3) end
end
return ids
