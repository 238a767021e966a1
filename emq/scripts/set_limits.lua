-- set_limits (extension, job system): set or clear a queue's limits, the
-- meta fields claim_limited reads, in one step.
-- KEYS[1]  meta          emq:{q}:meta
-- ARGV[1]  limit_active  integer >= 0: at most this many jobs active; 0 none
-- ARGV[2]  rate_n        integer >= 0: at most this many claims per rate_ms
-- ARGV[3]  rate_ms       integer >= 0; rate_n and rate_ms are both 0 (no
--                        rate) or both >= 1
-- A field set to 0 is deleted from meta (no limit of that kind).
-- Replies:
--   1   written
--   error "EMQARG <what>"; nothing written
local v = {}
local names = {'limit_active', 'rate_n', 'rate_ms'}
for k = 1, 3 do
  local x = tonumber(ARGV[k])
  if #ARGV ~= 3 or not x or x ~= math.floor(x) or x < 0 or x > 9007199254740991 then
    return redis.error_reply('EMQARG ' .. names[k] .. ' must be an integer >= 0')
  end
  v[k] = x
end
if (v[2] == 0) ~= (v[3] == 0) then
  return redis.error_reply('EMQARG rate_n and rate_ms must both be 0 or both >= 1')
end
for k = 1, 3 do
  if v[k] == 0 then
    redis.call('HDEL', KEYS[1], names[k])
  else
    redis.call('HSET', KEYS[1], names[k], string.format('%d', v[k]))
  end
end
return 1
