--[[
  The fan-out's hot path: one blog into many inboxes. KEYS = inbox, meta, followees triples;
  ARGV = score, member, authorId, maxItems, ttlMs.

  Redis runs this once per inbox, and each redis.call costs about 0.5 us beyond the command, so
  it makes only the calls an inbox needs: an existing inbox costs 3 (HMGET, ZADD, ZCARD), a blog
  it held already 2. Only inboxes that exist get it (fan-out skips inactive readers), at or above
  their floor. While an inbox is being built the delivery is recorded (d:<member> = author), so
  the build's finish can drop it if the snapshot does not have its reader follow the author.
  A set that holds only the new member lost its sentinel: Redis evicted it, and the inbox is gone
  (its pending marks stay); the next read rebuilds it.
]]
--- @include "includes/inbox"
local score, member, author, max, ttl = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local delivered = 'd:' .. member
for i = 1, #KEYS, 3 do
  local inbox, meta = KEYS[i], KEYS[i + 1]
  local m = redis.call('HMGET', meta, 'floor', 'building')
  if m[1] and score >= tonumber(m[1]) then
    local added = redis.call('ZADD', inbox, score, member)
    if m[2] then redis.call('HSET', meta, delivered, author) end
    if added == 1 then
      local card = redis.call('ZCARD', inbox)
      if card == 1 then
        dropKeepingMarks(inbox, meta, KEYS[i + 2], ttl)
      else
        trim(inbox, meta, max, card)
      end
    end
  end
end
return #KEYS / 3
