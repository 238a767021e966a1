-- claim_limited (extension, job system): claim_batch under the queue's
-- limits, read from emq:{q}:meta in the same step: at most limit_active
-- jobs in active (counting every worker's, and the leases not yet
-- reaped), and at most rate_n claims in any rate_ms (a sliding window
-- over the claim times kept in emq:{q}:rate, server clock). Each claimed
-- job is exactly what claim would have done to it. A field absent or 0 is
-- no limit of that kind.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  base      emq:{q}:   declared root of meta, rate, limit_log
--                    and job:<id>
-- ARGV[1]  lease_ms  integer >= 1
-- ARGV[2]  n         integer >= 1; at most this many jobs
-- meta fields read: paused, limit_active, rate_n, rate_ms (integers >= 0),
-- limit_log ('1': each call that claims appends "<now_ms> <claimed>
-- <active after>" to emq:{q}:limit_log, the newest 100,000 kept: an audit
-- of the limits from the server's own clock)
-- Replies:
--   {wait_ms, {id1, payload1, attempts1, ...}}
--       the jobs as claim_batch answers them (fewer than n, or none, when
--       a limit binds); wait_ms is 0 unless the rate bound the claim, then
--       the ms until the window admits another claim
--   {0, {}}  paused (meta paused = 1), nothing claimable, or the active
--            limit reached
--   error "EMQARG lease_ms must be an integer >= 1",
--         "EMQARG n must be an integer >= 1" or
--         "EMQARG meta <field> must be an integer >= 0"; nothing written
local call = redis.call
local function int(v, min)
  local x = tonumber(v)
  if x and x == math.floor(x) and x >= min and x <= 9007199254740991 then
    return x
  end
end
local lease = int(ARGV[1], 1)
if not lease then
  return redis.error_reply('EMQARG lease_ms must be an integer >= 1')
end
local want = int(ARGV[2], 1)
if not want then
  return redis.error_reply('EMQARG n must be an integer >= 1')
end
local base = KEYS[3]
local meta = call('HMGET', base .. 'meta', 'paused', 'limit_active', 'rate_n', 'rate_ms', 'limit_log')
local lim = {}
local names = {'limit_active', 'rate_n', 'rate_ms'}
for k = 1, 3 do
  local v = meta[k + 1]
  lim[k] = 0
  if v then
    lim[k] = int(v, 0)
    if not lim[k] then
      return redis.error_reply('EMQARG meta ' .. names[k] .. ' must be an integer >= 0')
    end
  end
end
if meta[1] == '1' then
  return {0, {}}
end
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap, wait = want, 0
if lim[1] > 0 then
  cap = math.min(cap, lim[1] - call('ZCARD', KEYS[2]))
end
local rk = base .. 'rate'
local rated = lim[2] > 0 and lim[3] > 0
if rated then
  -- The window is (now - rate_ms, now]: a claim at s counts until now >= s + rate_ms.
  call('ZREMRANGEBYSCORE', rk, '-inf', string.format('%d', now - lim[3]))
  local used = call('ZCARD', rk)
  if lim[2] - used <= cap then
    cap = lim[2] - used
    -- Once this call has claimed cap, the next place frees when the claim
    -- at rank used - rate_n (0-based, oldest first) leaves the window.
    local r = math.max(used - lim[2], 0)
    local first = call('ZRANGE', rk, r, r, 'WITHSCORES')
    wait = lim[3] -- none in the window: the claims of this call free it
    if first[2] then
      wait = math.max(tonumber(first[2]) + lim[3] - now, 1)
    end
  end
end
if cap <= 0 then
  return {wait, {}}
end
local deadline = string.format('%d', now + lease)
local jp = base .. 'job:'
local out, no, got = {}, 0, 0
while got < cap do
  local popped = call('ZPOPMIN', KEYS[1], cap - got)
  if #popped == 0 then
    break
  end
  for i = 1, #popped, 2 do
    local id = popped[i]
    local key = jp .. id
    local f = call('HMGET', key, 'payload', 'attempts')
    if f[1] or call('EXISTS', key) == 1 then
      local attempts = (tonumber(f[2]) or 0) + 1
      local tok = string.format('%d', attempts)
      call('HSET', key, 'attempts', tok, 'state', 'active')
      call('ZADD', KEYS[2], deadline, id)
      if rated then
        call('ZADD', rk, now, id .. ':' .. tok)
      end
      got = got + 1
      out[no + 1], out[no + 2], out[no + 3] = id, f[1] or '', attempts
      no = no + 3
    end
  end
end
if rated and got > 0 then
  call('PEXPIRE', rk, string.format('%d', lim[3]))
end
if got > 0 and meta[5] == '1' then
  local lk = base .. 'limit_log'
  call('RPUSH', lk, string.format('%d %d %d', now, got, call('ZCARD', KEYS[2])))
  call('LTRIM', lk, -100000, -1)
end
if got < cap then
  wait = 0 -- pending ran out before the limit
end
return {wait, out}
