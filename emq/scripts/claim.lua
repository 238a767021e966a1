-- claim (echomq:6.0.0, core transition 2): lease the oldest pending job.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  base      emq:{q}:   declared root of meta and of job:<id>
-- ARGV[1]  lease_ms  integer >= 1
-- Replies:
--   {id, payload, attempts}   claimed: attempts (an integer) is the fencing
--                             token; the id is in active at now+lease_ms
--   {}   queue paused (meta paused = 1), pending empty, or the popped id
--        was a ghost (no row): the ghost is dropped, no row is minted
--   error "EMQARG lease_ms must be an integer >= 1"; nothing written
local lease = tonumber(ARGV[1])
if not lease or lease ~= math.floor(lease) or lease < 1 or lease > 9007199254740991 then
  return redis.error_reply('EMQARG lease_ms must be an integer >= 1')
end
-- The pause flag is read inside the transition: atomic with the pop.
if redis.call('HGET', KEYS[3] .. 'meta', 'paused') == '1' then
  return {}
end
local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then
  return {}
end
local id = popped[1]
-- Derived from the declared root: carries the queue's hashtag.
local row = KEYS[3] .. 'job:' .. id
if redis.call('EXISTS', row) == 0 then
  return {}
end
local attempts = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + lease, id)
return {id, redis.call('HGET', row, 'payload'), attempts}
