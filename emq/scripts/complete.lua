-- complete (echomq:6.0.0, core transition 3): finish a claimed job.
-- KEYS[1]  active        emq:{q}:active
-- KEYS[2]  row           emq:{q}:job:<id>
-- ARGV[1]  id
-- ARGV[2]  token         the attempts value claim returned
-- ARGV[3]  retention_ms  integer >= 0; 0 deletes the row
-- Replies:
--   1   completed: id removed from active; row deleted (retention 0), or
--       state=completed with the row expiring after retention_ms
--   0   stale: row state is not active, or token is not exactly the decimal
--       text of attempts (the lease was lost); nothing written
--   error "EMQARG retention_ms must be an integer >= 0"; nothing written
-- The token holds only as exact decimal text: byte for byte the canonical
-- decimal rendering of the stored attempts ("1", never "01", "1.0", " 1"
-- or "1e0").
local function holds(attempts, token)
  local a = tonumber(attempts)
  return a ~= nil and a == math.floor(a) and math.abs(a) <= 9007199254740991
    and string.format('%d', a) == token
end
local keep = tonumber(ARGV[3])
if not keep or keep ~= math.floor(keep) or keep < 0 or keep > 9007199254740991 then
  return redis.error_reply('EMQARG retention_ms must be an integer >= 0')
end
local row = redis.call('HMGET', KEYS[2], 'state', 'attempts')
if row[1] ~= 'active' or not holds(row[2], ARGV[2]) then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
if keep == 0 then
  redis.call('DEL', KEYS[2])
else
  redis.call('HSET', KEYS[2], 'state', 'completed')
  redis.call('PEXPIRE', KEYS[2], string.format('%d', keep))
end
return 1
