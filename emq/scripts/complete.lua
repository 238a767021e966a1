-- complete (echomq:6.0.0, core transition 3): finish a claimed job.
-- KEYS[1]  active        emq:{q}:active
-- KEYS[2]  row           emq:{q}:job:<id>
-- ARGV[1]  id
-- ARGV[2]  token         the attempts value claim returned
-- ARGV[3]  retention_ms  integer >= 0; 0 deletes the row
-- Replies:
--   1   completed: id removed from active; row deleted (retention 0), or
--       state=completed with the row expiring after retention_ms
--   0   stale: row state is not active or attempts ~= token (the lease was
--       lost); nothing written
--   error "EMQARG retention_ms must be an integer >= 0"; nothing written
local keep = tonumber(ARGV[3])
if not keep or keep ~= math.floor(keep) or keep < 0 or keep > 9007199254740991 then
  return redis.error_reply('EMQARG retention_ms must be an integer >= 0')
end
local row = redis.call('HMGET', KEYS[2], 'state', 'attempts')
if row[1] ~= 'active' or tonumber(row[2]) ~= tonumber(ARGV[2]) then
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
