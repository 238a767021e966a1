-- enqueue_batch (extension): admit several jobs into pending in one
-- transition. Each job is exactly what enqueue would have done to it, in
-- order: an id given twice is enqueued once, the second answering 0.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  base      emq:{q}:   declared root of job:<id>
-- ARGV[1], ARGV[2]   id1, payload1 (each id a branded id, JOB-namespaced)
-- ARGV[3], ARGV[4]   id2, payload2, ... (pairs)
-- Replies:
--   {r1, r2, ...}  one integer per pair, in order: 1 enqueued (row
--                  {state=pending, attempts=0, payload}, id in pending at
--                  score 0), 0 duplicate (the row exists; nothing written)
--   error "EMQKIND job id must be JOB-namespaced" (any of the ids) or
--         "EMQARG ids and payloads must come in pairs"; nothing written
-- Cost: two calls per job (EXISTS, HSET) and one ZADD per 1,000 jobs,
-- where one enqueue per job costs a script call of its own.
if #ARGV % 2 ~= 0 then
  return redis.error_reply('EMQARG ids and payloads must come in pairs')
end
for i = 1, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
end
local out = {}
local added = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local row = KEYS[2] .. 'job:' .. id
  if redis.call('EXISTS', row) == 1 then
    out[#out + 1] = 0
  else
    redis.call('HSET', row, 'state', 'pending', 'attempts', '0', 'payload', ARGV[i + 1])
    added[#added + 1] = '0'
    added[#added + 1] = id
    out[#out + 1] = 1
  end
end
for i = 1, #added, 2000 do
  redis.call('ZADD', KEYS[1], unpack(added, i, math.min(i + 1999, #added)))
end
return out
