-- promote (echomq:6.0.0, core transition 5): move due delayed jobs to pending.
-- KEYS[1]  delayed   emq:{q}:delayed
-- KEYS[2]  pending   emq:{q}:pending
-- KEYS[3]  base      emq:{q}:   declared root of job:<id>
-- ARGV[1]  limit     integer >= 0; at most this many ids move
-- Replies:
--   n   the count moved: each id with due <= now, oldest due first, leaves
--       delayed, gets state=pending and joins pending at score 0. A ghost
--       (no row) moves too but no row is minted; claim drops it.
--   error "EMQARG limit must be an integer >= 0"; nothing written
local limit = tonumber(ARGV[1])
if not limit or limit ~= math.floor(limit) or limit < 0 or limit > 9007199254740991 then
  return redis.error_reply('EMQARG limit must be an integer >= 0')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now),
  'LIMIT', 0, string.format('%d', limit))
for _, id in ipairs(ids) do
  local row = KEYS[3] .. 'job:' .. id
  redis.call('ZREM', KEYS[1], id)
  if redis.call('EXISTS', row) == 1 then
    redis.call('HSET', row, 'state', 'pending')
  end
  redis.call('ZADD', KEYS[2], 0, id)
end
return #ids
