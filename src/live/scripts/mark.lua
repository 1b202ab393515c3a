-- Marks or unmarks this process as holding a subscription of the reader.
-- KEYS = [live:{reader}]; ARGV = process, time to live (ms), 'mark' | 'unmark'.
-- Drops the fields of other processes that have not refreshed for a time to live (they died),
-- then sets this process's field, with the time by Redis's clock (no skew between hosts), and
-- the key's time to live; or deletes the field (a hash left empty is deleted with it).
-- Returns 1.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local at = tonumber(fields[i + 1])
  if fields[i] ~= ARGV[1] and (not at or at < now - ttl) then redis.call('HDEL', KEYS[1], fields[i]) end
end
if ARGV[3] == 'mark' then
  redis.call('HSET', KEYS[1], ARGV[1], string.format('%d', now))
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
