--[[
  What the hydration cache's scripts share (cache/cache.service.ts). An entry is a hash:
  d (the row as JSON), f ("1": a blog's d and like set are complete), g (the Redis generation
  it was filled in), lease (the token of the fill a reader was given), lock (a write in flight
  since, Redis ms), and for likes in flight pend (how many), pendAt (the newest's mark, Redis ms)
  and p:<token> (one per like in flight).
  A fill is written only under its lease, and only while no write is in flight: a write takes
  the lease away, so a reader that read the row before the write never stores it after.
  A lease token starts with the generation its reader read in ("<generation>.<unique>"): the fill
  stamps the entry with it, and a read trusts an entry of its own generation only. A Redis
  restored from an older dump holds entries of an older generation, consistent with the dump and
  older than MySQL (feed/generation.ts); they are dropped when read.
]]

-- Redis's own clock in ms: ages of locks and pending likes are measured on one clock.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Whether a write (lock) or a like (pend) is in flight; a mark older than staleMs belonged to a
-- process that died before it cleared it: the entry is dropped and the reader may fill it.
local function writeInFlight(keys, lock, pend, pendAt, staleMs)
  local at = lock
  if not at and pend and tonumber(pend) > 0 then at = pendAt end
  if not at then return false end
  if nowMs() - tonumber(at) < staleMs then return true end
  redis.call('DEL', unpack(keys))
  return false
end

-- The generation a lease token was given in (nil: a token without one).
local function generationOf(token)
  return string.match(token, '^(%d+)%.')
end

-- Whether an entry holding data (d, f or big) was filled in another generation than the reader's
-- (its token's); such an entry is dropped, the reader then misses.
local function ofAnotherGeneration(keys, filled, g, token)
  if not filled or g == generationOf(token) then return false end
  redis.call('DEL', unpack(keys))
  return true
end

-- A reader's miss: the entry's lease, given to this reader too, or a new one (the hash then
-- expires after leaseMs, so that an abandoned lease does not last).
local function leaseOf(hash, current, token, leaseMs)
  if current then return current end
  redis.call('HSET', hash, 'lease', token)
  redis.call('PEXPIRE', hash, leaseMs)
  return token
end
