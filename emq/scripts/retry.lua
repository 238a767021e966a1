-- retry (echomq:6.0.0, core transition 4): give back a failed job.
-- KEYS[1]  active        emq:{q}:active
-- KEYS[2]  row           emq:{q}:job:<id>
-- KEYS[3]  pending       emq:{q}:pending
-- KEYS[4]  delayed       emq:{q}:delayed
-- KEYS[5]  dead          emq:{q}:dead
-- ARGV[1]  id
-- ARGV[2]  token         the attempts value claim returned
-- ARGV[3]  delay_ms      integer >= 0
-- ARGV[4]  max_attempts  integer >= 0
-- ARGV[5]  error         the failure text, stored in the row's error field
-- Replies:
--   2   dead: attempts >= max_attempts; state=dead, id in dead at now
--   1   retried: state=pending, id in pending at 0 (delay_ms = 0), or
--       state=delayed, id in delayed at now+delay_ms
--   0   stale: row state is not active, or token is not exactly the decimal
--       text of attempts; nothing written
--   error "EMQARG delay_ms must be an integer >= 0" or
--         "EMQARG max_attempts must be an integer >= 0"; nothing written
-- The token holds only as exact decimal text: byte for byte the canonical
-- decimal rendering of the stored attempts ("1", never "01", "1.0", " 1"
-- or "1e0").
local function holds(attempts, token)
  local a = tonumber(attempts)
  return a ~= nil and a == math.floor(a) and math.abs(a) <= 9007199254740991
    and string.format('%d', a) == token
end
local delay = tonumber(ARGV[3])
if not delay or delay ~= math.floor(delay) or delay < 0 or delay > 9007199254740991 then
  return redis.error_reply('EMQARG delay_ms must be an integer >= 0')
end
local max = tonumber(ARGV[4])
if not max or max ~= math.floor(max) or max < 0 or max > 9007199254740991 then
  return redis.error_reply('EMQARG max_attempts must be an integer >= 0')
end
local row = redis.call('HMGET', KEYS[2], 'state', 'attempts')
if row[1] ~= 'active' or not holds(row[2], ARGV[2]) then
  return 0
end
local id = ARGV[1]
local attempts = tonumber(row[2])
redis.call('ZREM', KEYS[1], id)
redis.call('HSET', KEYS[2], 'error', ARGV[5] or '')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if attempts >= max then
  redis.call('HSET', KEYS[2], 'state', 'dead')
  redis.call('ZADD', KEYS[5], now, id)
  return 2
end
if delay == 0 then
  redis.call('HSET', KEYS[2], 'state', 'pending')
  redis.call('ZADD', KEYS[3], 0, id)
else
  redis.call('HSET', KEYS[2], 'state', 'delayed')
  redis.call('ZADD', KEYS[4], now + delay, id)
end
return 1
