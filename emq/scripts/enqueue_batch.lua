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
-- job costs a script call of its own. The ZADD takes the ids newest first:
-- in a small pending set (a listpack) each then joins at the head instead
-- of after every other.
local call = redis.call
local n = #ARGV
if n % 2 ~= 0 then
  return redis.error_reply('EMQARG ids and payloads must come in pairs')
end
for i = 1, n, 2 do
  if string.sub(ARGV[i], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
end
local jp = KEYS[2] .. 'job:' -- a row key is jp .. id
local rows, m = {}, 0
for i = 1, n, 2 do
  local id = ARGV[i]
  m = m + 1
  rows[m] = jp .. id
end
-- One EXISTS per 1,000 rows: when none exists (freshly minted ids, the
-- usual case) no row needs a check of its own.
local existing = 0
for i = 1, m, 1000 do
  existing = existing + call('EXISTS', unpack(rows, i, math.min(i + 999, m)))
end
local out, added, na, seen = {}, {}, 0, {}
for j = 1, m do
  local id = ARGV[2 * j - 1]
  if seen[id] or (existing > 0 and call('EXISTS', rows[j]) == 1) then
    out[j] = 0
  else
    seen[id] = true
    call('HSET', rows[j], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2 * j])
    na = na + 1
    added[na] = id
    out[j] = 1
  end
end
-- Score 0 for every member: byte order of the ids is mint order.
local z = {}
local i = na
while i >= 1 do
  local nz = 0
  while i >= 1 and nz < 2000 do
    z[nz + 1] = '0'
    z[nz + 2] = added[i]
    nz = nz + 2
    i = i - 1
  end
  call('ZADD', KEYS[1], unpack(z, 1, nz))
end
return out
