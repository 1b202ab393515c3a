--[[
  A write of the entry's row is about to commit (an edit, a delete, a profile change): the cached
  copy is dropped, any fill's lease with it, and readers go to MySQL until unlock (a DEL of the
  keys after the commit or the rollback) or, if that never comes, until the lock is staleMs old.
  KEYS = the entry's hash (and a blog's like set); ARGV = staleMs.
]]
--- @include "includes/cache"
redis.call('DEL', unpack(KEYS))
redis.call('HSET', KEYS[1], 'lock', nowMs())
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
