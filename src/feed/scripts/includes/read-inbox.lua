--[[
  The read of a page: the first `limit` entries after a position, at or above the floor, if the
  inbox is valid for this generation (`epoch`): it exists and is intact, was built in this
  generation, is not being built and has no follow change pending.
  Replies {MISSING} | {BUILDING, age ms} | {PENDING, age ms} | {VALID, floor, entries, base, maxver}.
  `maxScore` '+inf' is the first page; `after` '' a position without a blog id (counts `offset`).
]]
local function readInbox(inbox, meta, followees, epoch, maxScore, offset, after, limit)
  local m = redis.call('HMGET', meta, 'floor', 'ep', 'building', 'buildAt', 'pending', 'pendingAt', 'base', 'maxver')
  if not m[1] or m[2] ~= epoch then return {MISSING} end
  if m[3] then return {BUILDING, nowMs() - tonumber(m[4])} end
  if m[5] and tonumber(m[5]) > 0 then return {PENDING, nowMs() - tonumber(m[6])} end
  if not intact(inbox, followees) then return {MISSING} end
  local floor = m[1]
  if maxScore == '+inf' then maxScore = '(+inf' end
  local start = offset
  if after ~= '' then
    -- Fast path: the offset still points at the cursor's own blog. Else the tie group changed
    -- (a removal, a late arrival): count the members at or before the cursor's blog.
    start = math.max(offset - 1, 0)
    local at = redis.call('ZRANGE', inbox, maxScore, floor, 'BYSCORE', 'REV', 'LIMIT', start, 1, 'WITHSCORES')
    if at[1] == after and tonumber(at[2]) == tonumber(maxScore) then
      start = start + 1
    else
      start = 0
      for _, member in ipairs(redis.call('ZRANGE', inbox, maxScore, maxScore, 'BYSCORE', 'REV')) do
        if member >= after then start = start + 1 else break end
      end
    end
  end
  return {VALID, floor, redis.call('ZRANGE', inbox, maxScore, floor, 'BYSCORE', 'REV', 'LIMIT', start, limit, 'WITHSCORES'), m[7], m[8]}
end
