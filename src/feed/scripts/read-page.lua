--[[
  A page's whole Redis work on a single server, in one command: the inbox read, whether the
  watermark is synced in this generation, the reader's followees among the authors in flight
  (with the lowest score each has in flight), the big-author generation, and the pulled-blog
  tokens of the big followees the caller expects (read at the same instant as the rest).
  KEYS = inbox, meta, followees, watermark authors, big-author generation, pulled-blog tokens...;
  ARGV = epoch, maxScore, offset, after, limit.
  Replies {read, synced 0|1, {author, score, ...}, generation, {token|false, ...}}.
]]
--- @include "includes/inbox"
--- @include "includes/read-inbox"
--- @include "includes/watermark"
local view = readInbox(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]))
local synced = redis.call('ZSCORE', KEYS[4], MARKER .. ARGV[1]) ~= false
local inFlight = {}
-- The marker is one member: more means tasks in flight. ZINTER walks the smaller set.
if view[1] == VALID and synced and redis.call('ZCARD', KEYS[4]) > 1 then
  inFlight = redis.call('ZINTER', 2, KEYS[3], KEYS[4], 'WEIGHTS', 0, 1, 'WITHSCORES')
end
-- One GET each, not MGET(unpack(...)): Lua's unpack fails past a few thousand values, and a
-- reader may follow that many big authors.
local tokens = {}
for i = 6, #KEYS do tokens[i - 5] = redis.call('GET', KEYS[i]) end
return {view, synced and 1 or 0, inFlight, redis.call('GET', KEYS[5]), tokens}
