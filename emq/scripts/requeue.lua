-- requeue (extension, operations): move dead jobs back to pending, by id.
-- KEYS[1]  dead      emq:{q}:dead
-- KEYS[2]  pending   emq:{q}:pending
-- KEYS[3]  base      emq:{q}:   declared root of job:<id>
-- ARGV[1], ARGV[2], ...  id1, id2, ... (none: nothing to do)
-- Replies:
--   {r1, r2, ...}  one integer per id, in order: 1 requeued (the id left
--                  dead; row state=pending, its attempts and error kept;
--                  the id joined pending at score 0), 0 not dead (the id
--                  is in no dead set: in another state, or no such job;
--                  nothing written). An id given twice is requeued once,
--                  the second answering 0. A ghost (an id in dead with no
--                  row) moves too but no row is minted; claim drops it.
-- attempts is the fencing token and never goes back: a requeued job that
-- fails again with attempts >= max_attempts goes straight back to dead.
local out = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  if redis.call('ZREM', KEYS[1], id) == 1 then
    local row = KEYS[3] .. 'job:' .. id
    if redis.call('EXISTS', row) == 1 then
      redis.call('HSET', row, 'state', 'pending')
    end
    redis.call('ZADD', KEYS[2], 0, id)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
