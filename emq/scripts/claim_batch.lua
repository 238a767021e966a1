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
-- Cost: two calls per job (HMGET, HSET) and one ZADD per 1,000 jobs, where
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
local t = redis.call('TIME')
local deadline = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + lease)
local out = {}
local leased = {}
local got = 0
while got < n do
  local popped = redis.call('ZPOPMIN', KEYS[1], string.format('%d', n - got))
  if #popped == 0 then
    break
  end
  -- popped is {id1, score1, id2, score2, ...}
  for i = 1, #popped, 2 do
    local id = popped[i]
    local row = KEYS[3] .. 'job:' .. id
    local f = redis.call('HMGET', row, 'payload', 'attempts')
    -- A row has a payload; only a row without one needs EXISTS to tell it
    -- from a ghost.
    if f[1] or redis.call('EXISTS', row) == 1 then
      -- What HINCRBY attempts 1 does, folded into the one HSET.
      local attempts = (tonumber(f[2]) or 0) + 1
      redis.call('HSET', row, 'attempts', string.format('%d', attempts), 'state', 'active')
      leased[#leased + 1] = deadline
      leased[#leased + 1] = id
      out[#out + 1] = id
      out[#out + 1] = f[1] or ''
      out[#out + 1] = attempts
      got = got + 1
    end
  end
end
-- Every claimed id joins active at the one deadline, 1,000 to a ZADD.
for i = 1, #leased, 2000 do
  redis.call('ZADD', KEYS[2], unpack(leased, i, math.min(i + 1999, #leased)))
end
return out
