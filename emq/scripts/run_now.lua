-- run_now (extension, operations): move delayed jobs to pending now, by
-- id, before their due time.
-- KEYS[1]  delayed   emq:{q}:delayed
-- KEYS[2]  pending   emq:{q}:pending
-- KEYS[3]  base      emq:{q}:   declared root of job:<id>
-- ARGV[1], ARGV[2], ...  id1, id2, ... (none: nothing to do)
-- Replies:
--   {r1, r2, ...}  one integer per id, in order: 1 moved (the id left
--                  delayed; row state=pending, its attempts and error
--                  kept; the id joined pending at score 0), as promote
--                  moves a due job; 0 not delayed (the id is in no
--                  delayed set: in another state, or no such job; nothing
--                  written). An id given twice moves once, the second
--                  answering 0. A ghost (an id in delayed with no row)
--                  moves too but no row is minted; claim drops it.
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
