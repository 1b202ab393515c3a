--[[
  The fan-out's hot path: one blog into many inboxes. ARGV = score, member, authorId, maxItems,
  ttlMs, the heads of the four key names (inbox, meta, followees, live mark: redis/keys.ts,
  deliveryKeyHeads), listedAt and listedEpoch (on the inboxes' clock, a time before MySQL listed
  these readers among the author's followers, and the generation then; 0 0 when unknown), then
  the readers' ids; KEYS = the first reader's inbox, which routes the call on a cluster (there
  each reader gets a call of its own). A reader's keys are a head, the
  id and "}": all in the reader's slot. The script names them itself because four key names per
  inbox, built and sent by the worker, cost the worker more CPU than Redis spends on the inbox.
  Replies one code per inbox:
  NOTHING, WRITTEN (its reader follows the author, by the inbox's own followees), UNSURE (written,
  but a follow change of the reader is pending: MySQL must say whether it stays), each plus LIVE
  when the reader has a live-feed subscription open (the live bus's mark, in the reader's slot).

  A reader without an inbox (inactive, or Redis lost it) gets no write, but is reported LIVE when
  their live mark is there: a subscriber still hears of the blog (the subscription checks the
  follow in MySQL), where the inbox is rebuilt at their next page.
  Only inboxes that exist get the blog (fan-out skips inactive readers), at or above their floor,
  and only when the inbox says its reader follows the author: a valid inbox's followees are its
  reader's (versions, inbox.ts), so an unfollower costs no write, and the executor asks MySQL
  about no one. The inbox says so without reading its followees where it can (follows()): the
  pair's own version a:<author>, when a change of the pair came after the inbox's install, is
  signed as the followees hold the author (the scripts change both together); else, when the
  followees were installed before MySQL listed these readers (a:at:<listedEpoch> < listedAt: in
  the same generation, as the inboxes' clock is kept in a key a lost Redis loses too) the list
  is as right as the followees: no change of the pair came between (it would be marked pending,
  or applied, with its a:<author>), and a muted follow, which MySQL lists, is installed as the
  pair's unfollow. Only then a SISMEMBER: reading the followees set is a key more an inbox, 13% of
  what the script cost Redis (perf of bench:fanout's delivery). Where the inbox cannot say (a
  follow change marked pending, a rebuild running) the blog is written as before: a pending
  change's reader is reported UNSURE (the executor asks MySQL, and takes the blog back from an
  unfollower); a build records the delivery (d:<member> = author) and its finish keeps it only if
  the snapshot has the reader follow the author. An UNSURE write whose author the followees do
  not hold is recorded too (u:<member> = author, counted in `unsure`): the follow change being
  applied may be this author's unfollow, applied already, and the executor's MySQL check and
  take-back come later.
  When the last pending mark is cleared (clear-pending.lua), which makes the inbox trusted again,
  such blogs whose author the followees still lack are taken out then, so that no page trusts an
  inbox that holds an unfollowed author's blog between that clear and the executor's take-back.
  Redis runs this once per inbox; what it costs is mostly the keys it touches (each a few cache
  misses, about 1.5 us): a new entry costs 3 calls (HMGET, ZADD, ZCARD) on two keys, 4 on three
  where the followees are read; the live marks of the whole batch are looked up together at the
  end (findLive).
  A set that holds only the new member lost its sentinel: Redis evicted it, and the inbox is gone
  (its pending marks stay); the next read rebuilds it.
]]
--- @include "includes/inbox"
local NOTHING, WRITTEN, UNSURE, LIVE = 0, 1, 2, 4
local scoreArg, member, author, max, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local score = tonumber(scoreArg)
local inboxHead, metaHead, followeesHead, liveHead = ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local listedAt, listedEpoch = tonumber(ARGV[10]), ARGV[11]
local FIRST_READER = 12
local pairField, installedField = 'a:' .. author, installedAtField(listedEpoch)
local delivered = 'd:' .. member
local codes = {}
-- The live marks to look up, and the positions of their readers' codes.
local marks, markedAt = {}, {}
local function askLive(position, reader)
  marks[#marks + 1] = liveHead .. reader .. '}'
  markedAt[#marks] = position
end
-- EXISTS counts the keys it is given: one call answers for every reader of a batch where nobody
-- is live (the usual case); a batch with live readers is halved until each part is all live or
-- none, about log2(batch) calls per live reader. A call per reader cost each written inbox about
-- a tenth of its time (bench:fanout).
local function findLive(lo, hi)
  local count = redis.call('EXISTS', unpack(marks, lo, hi))
  if count == 0 then return end
  if count == hi - lo + 1 then
    for j = lo, hi do codes[markedAt[j]] = codes[markedAt[j]] + LIVE end
    return
  end
  local mid = math.floor((lo + hi) / 2)
  findLive(lo, mid)
  findLive(mid + 1, hi)
end
local function followeesOf(reader)
  return followeesHead .. reader .. '}'
end
-- Whether a valid inbox's reader follows the author (see the top); m = its HMGET below.
local function follows(m, reader)
  if m[4] then return tonumber(m[4]) > 0 end
  if m[5] and tonumber(m[5]) < listedAt then return true end
  return redis.call('SISMEMBER', followeesOf(reader), author) == 1
end
for i = FIRST_READER, #ARGV do
  local reader = ARGV[i]
  local inbox, meta = inboxHead .. reader .. '}', metaHead .. reader .. '}'
  local code = NOTHING
  local m = redis.call('HMGET', meta, 'floor', 'building', 'pending', pairField, installedField)
  if m[1] and score >= tonumber(m[1]) then
    local pending = m[3] and tonumber(m[3]) > 0
    if m[2] or pending or follows(m, reader) then
      code = (pending and not m[2]) and UNSURE or WRITTEN
      local unheld = code == UNSURE and redis.call('SISMEMBER', followeesOf(reader), author) == 0
      -- The score as it came: a Lua number would be formatted for Redis ("%.17g"), a twentieth
      -- of what the whole script cost Redis (perf, bench:fanout).
      if redis.call('ZADD', inbox, scoreArg, member) == 1 then
        local card = redis.call('ZCARD', inbox)
        if card == 1 then
          dropKeepingMarks(inbox, meta, followeesOf(reader), ttl)
          code = NOTHING
        else
          trim(inbox, meta, max, card)
        end
      end
      if code ~= NOTHING then
        if m[2] then redis.call('HSET', meta, delivered, author) end
        if unheld and redis.call('HSETNX', meta, 'u:' .. member, author) == 1 then
          redis.call('HINCRBY', meta, 'unsure', 1)
        end
        askLive(#codes + 1, reader)
      end
    end
  elseif not m[1] then
    askLive(#codes + 1, reader)
  end
  codes[#codes + 1] = code
end
if #marks > 0 then findLive(1, #marks) end
return codes
