-- worker_beat (extension, job system J1): a consumer's heartbeat, or its
-- leave, in the registry of a queue's workers.
-- KEYS[1]  workers   emq:{q}:workers   zset: worker id -> last heartbeat, ms
-- KEYS[2]  base      emq:{q}:          declared root of worker:<wid>
-- ARGV[1]  wid       the worker's id
-- ARGV[2]  ttl_ms    integer >= 0: how long the entry lives without another
--                    heartbeat; 0 removes it (the worker leaves)
-- ARGV[3], ...       field, value pairs of the worker's hash (host, pid, ...)
-- The hash base .. 'worker:' .. wid is written with the fields and
-- 'heartbeat' = now (ms, server clock), and PEXPIREs after ttl_ms; the
-- zset scores wid at now. Entries whose heartbeat is older than ten
-- ttl_ms are pruned from the zset in the same step (the reader, workers,
-- prunes those whose hash has expired).
-- Replies: now (ms) | error "EMQARG ..." (nothing written)
local ttl = tonumber(ARGV[2])
if not ttl or ttl ~= math.floor(ttl) or ttl < 0 or ttl > 9007199254740991 or #ARGV % 2 ~= 0 then
  return redis.error_reply('EMQARG worker_beat takes wid, ttl_ms >= 0 and field, value pairs')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wid = ARGV[1]
local key = KEYS[2] .. 'worker:' .. wid
if ttl == 0 then
  redis.call('ZREM', KEYS[1], wid)
  redis.call('DEL', key)
  return now
end
redis.call('ZADD', KEYS[1], now, wid)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', now - 10 * ttl))
local h = {'heartbeat', string.format('%d', now)}
for i = 3, #ARGV do
  h[#h + 1] = ARGV[i]
end
redis.call('HSET', key, unpack(h))
redis.call('PEXPIRE', key, ARGV[2])
return now
