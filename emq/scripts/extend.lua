-- extend (extension): push a held lease's deadline to now+lease_ms.
-- KEYS[1]  active    emq:{q}:active
-- KEYS[2]  row       emq:{q}:job:<id>
-- ARGV[1]  id
-- ARGV[2]  token     the attempts value claim returned
-- ARGV[3]  lease_ms  integer >= 1
-- Replies:
--   1   extended: row state is active, token is exactly the decimal text of
--       attempts, and the id is in active; its score is now now+lease_ms
--       (ZADD XX)
--   0   stale: any of those fails (the lease was lost); nothing written
--   error "EMQARG lease_ms must be an integer >= 1"; nothing written
-- The token holds only as exact decimal text: byte for byte the canonical
-- decimal rendering of the stored attempts ("1", never "01", "1.0", " 1"
-- or "1e0").
local function holds(attempts, token)
  local a = tonumber(attempts)
  return a ~= nil and a == math.floor(a) and math.abs(a) <= 9007199254740991
    and string.format('%d', a) == token
end
local lease = tonumber(ARGV[3])
if not lease or lease ~= math.floor(lease) or lease < 1 or lease > 9007199254740991 then
  return redis.error_reply('EMQARG lease_ms must be an integer >= 1')
end
local row = redis.call('HMGET', KEYS[2], 'state', 'attempts')
if row[1] ~= 'active' or not holds(row[2], ARGV[2]) then
  return 0
end
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[1])
return 1
