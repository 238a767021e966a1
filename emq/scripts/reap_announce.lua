-- reap_announce (job system, J3): reap as the core reap does, and announce
-- each death on the job's done channel, for waiters.
-- KEYS[1]  active        emq:{q}:active
-- KEYS[2]  pending       emq:{q}:pending
-- KEYS[3]  dead          emq:{q}:dead
-- KEYS[4]  base          emq:{q}:   declared root of job:<id>
-- ARGV[1]  limit         integer >= 0; at most this many ids are reaped
-- ARGV[2]  max_attempts  integer >= 0
-- Replies:
--   n   the count reaped, exactly as reap (core transition 6): each id
--       whose lease deadline < now, earliest first, leaves active;
--       attempts >= max_attempts -> state=dead, id in dead at now, and
--       'dead' is published on emq:{q}:done:<id>; else state=pending, id
--       in pending at 0. A ghost (no row) goes to pending with no row
--       minted; claim drops it.
--   error "EMQARG limit must be an integer >= 0" or
--         "EMQARG max_attempts must be an integer >= 0"; nothing written
local limit = tonumber(ARGV[1])
if not limit or limit ~= math.floor(limit) or limit < 0 or limit > 9007199254740991 then
  return redis.error_reply('EMQARG limit must be an integer >= 0')
end
local max = tonumber(ARGV[2])
if not max or max ~= math.floor(max) or max < 0 or max > 9007199254740991 then
  return redis.error_reply('EMQARG max_attempts must be an integer >= 0')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- '(' makes the bound exclusive: a deadline equal to now has not passed.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', now),
  'LIMIT', 0, string.format('%d', limit))
for _, id in ipairs(ids) do
  local row = KEYS[4] .. 'job:' .. id
  redis.call('ZREM', KEYS[1], id)
  local attempts = tonumber(redis.call('HGET', row, 'attempts'))
  if attempts and attempts >= max then
    redis.call('HSET', row, 'state', 'dead')
    redis.call('ZADD', KEYS[3], now, id)
    redis.call('PUBLISH', KEYS[4] .. 'done:' .. id, 'dead')
  else
    if attempts then
      redis.call('HSET', row, 'state', 'pending')
    end
    redis.call('ZADD', KEYS[2], 0, id)
  end
end
return #ids
