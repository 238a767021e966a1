-- claim_batch (extension): lease up to n pending jobs in one transition.
-- Each claimed job is exactly what claim would have done to it.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  base      emq:{q}:   declared root of meta and of job:<id>
-- ARGV[1]  lease_ms  integer >= 1
-- ARGV[2]  n         integer >= 1; at most this many jobs
-- Replies:
--   {id1, payload1, attempts1, id2, payload2, attempts2, ...}
--       up to n jobs, oldest first; each attempts (an integer) is that
--       job's fencing token, each id is in active at now+lease_ms. Ghosts
--       (popped ids with no row) are dropped and do not count against n.
--   {}  queue paused (meta paused = 1), or nothing claimable
--   error "EMQARG lease_ms must be an integer >= 1" or
--         "EMQARG n must be an integer >= 1"; nothing written
-- Cost: two calls per job (HMGET, HSET), and a ZRANGE, a ZREMRANGEBYRANK
-- (ZPOPMIN without formatting every score) and a ZADD per 1,000 jobs, where
-- claim makes five; the server's time per call is what bounds throughput.
local lease = tonumber(ARGV[1])
if not lease or lease ~= math.floor(lease) or lease < 1 or lease > 9007199254740991 then
  return redis.error_reply('EMQARG lease_ms must be an integer >= 1')
end
local n = tonumber(ARGV[2])
if not n or n ~= math.floor(n) or n < 1 or n > 9007199254740991 then
  return redis.error_reply('EMQARG n must be an integer >= 1')
end
if redis.call('HGET', KEYS[3] .. 'meta', 'paused') == '1' then
  return {}
end
local call = redis.call
local t = call('TIME')
local deadline = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + lease)
local jp = KEYS[3] .. 'job:' -- a row key is jp .. id
local out, leased, nl, no = {}, {}, 0, 0
while nl < n do
  local last = string.format('%d', n - nl - 1)
  local popped = call('ZRANGE', KEYS[1], 0, last)
  if #popped == 0 then
    break
  end
  call('ZREMRANGEBYRANK', KEYS[1], 0, last)
  for i = 1, #popped do
    local id = popped[i]
    local row = jp .. id
    local f = call('HMGET', row, 'payload', 'attempts')
    -- A row has a payload; only a row without one needs EXISTS to tell it
    -- from a ghost.
    if f[1] or call('EXISTS', row) == 1 then
      -- What HINCRBY attempts 1 does, folded into the one HSET.
      local attempts = (tonumber(f[2]) or 0) + 1
      call('HSET', row, 'attempts', string.format('%d', attempts), 'state', 'active')
      nl = nl + 1
      leased[nl] = id
      out[no + 1] = id
      out[no + 2] = f[1] or ''
      out[no + 3] = attempts
      no = no + 3
    end
  end
end
-- Every claimed id joins active at the one deadline, 1,000 to a ZADD,
-- newest first: in a small set (a listpack) each then joins at the head of
-- its deadline's ids instead of after them all.
local z = {}
local i = nl
while i >= 1 do
  local nz = 0
  while i >= 1 and nz < 2000 do
    z[nz + 1] = deadline
    z[nz + 2] = leased[i]
    nz = nz + 2
    i = i - 1
  end
  call('ZADD', KEYS[2], unpack(z, 1, nz))
end
return out
