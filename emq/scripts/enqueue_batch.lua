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
-- Cost: one HSET per job, plus one EXISTS and one ZADD per 1,000 jobs
-- (an EXISTS per job when some row already exists), where one enqueue per
-- job costs a script call of its own.
if #ARGV % 2 ~= 0 then
  return redis.error_reply('EMQARG ids and payloads must come in pairs')
end
for i = 1, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
end
local rows = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  rows[#rows + 1] = KEYS[2] .. 'job:' .. id
end
-- One EXISTS per 1,000 rows: when none exists (freshly minted ids, the
-- usual case) no row needs a check of its own.
local existing = 0
for i = 1, #rows, 1000 do
  existing = existing + redis.call('EXISTS', unpack(rows, i, math.min(i + 999, #rows)))
end
local out = {}
local added = {}
local seen = {}
for j = 1, #rows do
  local id = ARGV[2 * j - 1]
  if seen[id] or (existing > 0 and redis.call('EXISTS', rows[j]) == 1) then
    out[j] = 0
  else
    seen[id] = true
    redis.call('HSET', rows[j], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2 * j])
    added[#added + 1] = '0'
    added[#added + 1] = id
    out[j] = 1
  end
end
for i = 1, #added, 2000 do
  redis.call('ZADD', KEYS[1], unpack(added, i, math.min(i + 1999, #added)))
end
return out
