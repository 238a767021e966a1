-- stats (extension, operations; reads only): the queue's counts in one
-- atomic snapshot, on the server's clock.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  delayed   emq:{q}:delayed
-- KEYS[4]  dead      emq:{q}:dead
-- KEYS[5]  base      emq:{q}:   declared root of meta
-- Replies:
--   {now_ms, pending, active, delayed, dead, due, expired, paused, oldest}
--     now_ms   the server's clock (TIME), ms
--     pending, active, delayed, dead   ZCARD of each set
--     due      delayed ids whose due time <= now_ms (promote would move them)
--     expired  active ids whose lease deadline < now_ms (reap would take them)
--     paused   1 while meta paused = 1, else 0
--     oldest   the first pending id (the next claimed), or '' when none
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
local paused = 0
if redis.call('HGET', KEYS[5] .. 'meta', 'paused') == '1' then
  paused = 1
end
return {
  now,
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
  redis.call('ZCARD', KEYS[4]),
  redis.call('ZCOUNT', KEYS[3], '-inf', string.format('%d', now)),
  redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. string.format('%d', now)),
  paused,
  head[1] or '',
}
