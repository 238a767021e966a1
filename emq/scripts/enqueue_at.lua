-- enqueue_at (extension): admit one job into delayed, due later.
-- The gate and the duplicate rule are enqueue's; only the set differs.
-- KEYS[1]  row       emq:{q}:job:<id>
-- KEYS[2]  delayed   emq:{q}:delayed
-- ARGV[1]  id        branded id; must be JOB-namespaced
-- ARGV[2]  payload
-- ARGV[3]  delay_ms  integer >= 0; due at now+delay_ms on the server clock
-- Replies:
--   1   scheduled: row {state=delayed, attempts=0, payload}, id in delayed
--       at now+delay_ms
--   0   duplicate: the row already exists; nothing written
--   error "EMQKIND job id must be JOB-namespaced" or
--         "EMQARG delay_ms must be an integer >= 0"; nothing written
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
local delay = tonumber(ARGV[3])
if not delay or delay ~= math.floor(delay) or delay < 0 or delay > 9007199254740991 then
  return redis.error_reply('EMQARG delay_ms must be an integer >= 0')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'state', 'delayed', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], now + delay, ARGV[1])
return 1
