-- delete (extension, operations): remove jobs in any state, out of
-- whichever set holds them, with their rows.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  delayed   emq:{q}:delayed
-- KEYS[4]  dead      emq:{q}:dead
-- KEYS[5]  base      emq:{q}:   declared root of job:<id>
-- ARGV[1], ARGV[2], ...  id1, id2, ... (none: nothing to do)
-- Replies:
--   {s1, s2, ...}  one string per id, in order: the state the job was in,
--                  the set that held it ('pending', 'active', 'delayed',
--                  'dead'), else the state of its row when no set held it
--                  ('completed': a row kept after complete), else '' (no
--                  such job; nothing written). The id leaves every set and
--                  its row is deleted. An id given twice answers '' the
--                  second time.
-- A worker holding a deleted active job finds its lease lost: complete,
-- retry and extend answer 0 (stale).
local sets = {'pending', 'active', 'delayed', 'dead'}
local out = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  local was = ''
  for k = 1, 4 do
    if redis.call('ZREM', KEYS[k], id) == 1 and was == '' then
      was = sets[k]
    end
  end
  local row = KEYS[5] .. 'job:' .. id
  if was == '' then
    was = redis.call('HGET', row, 'state') or ''
    if was == '' and redis.call('EXISTS', row) == 1 then
      was = 'unknown'
    end
  end
  redis.call('DEL', row)
  out[i] = was
end
return out
