--[[
  A follow change of the reader is about to commit: until it is applied (clear-pending with the
  same id) no read trusts the inbox. The mark is kept in the hash even when there is no inbox (a
  hash of marks alone), so that a rebuild that starts meanwhile keeps it too.
  KEYS = inbox, meta; ARGV = change id, ttlMs.
]]
--- @include "includes/inbox"
if redis.call('HSETNX', KEYS[2], 'p:' .. ARGV[1], '1') == 0 then return 0 end
if redis.call('HINCRBY', KEYS[2], 'pending', 1) == 1 then redis.call('HSET', KEYS[2], 'pendingAt', fmt(nowMs())) end
if redis.call('PTTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return 1
