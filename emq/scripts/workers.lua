-- workers (extension, job system J1): the live workers of a queue, read,
-- with the entries of those gone pruned.
-- KEYS[1]  workers   emq:{q}:workers   zset: worker id -> last heartbeat, ms
-- KEYS[2]  base      emq:{q}:          declared root of worker:<wid>
-- ARGV[1]  limit     integer >= 1: at most this many entries examined,
--                    newest heartbeat first
-- An entry whose hash has expired (a missed heartbeat) leaves the zset.
-- Replies:
--   {wid1, {field, value, ...}, wid2, {...}, ...}  the live ones
--   error "EMQARG ..." (nothing written)
local limit = tonumber(ARGV[1])
if not limit or limit ~= math.floor(limit) or limit < 1 or limit > 9007199254740991 then
  return redis.error_reply('EMQARG limit must be an integer >= 1')
end
local ids = redis.call('ZREVRANGE', KEYS[1], 0, string.format('%d', limit - 1))
local out = {}
for i = 1, #ids do
  local h = redis.call('HGETALL', KEYS[2] .. 'worker:' .. ids[i])
  if #h == 0 then
    redis.call('ZREM', KEYS[1], ids[i])
  else
    out[#out + 1] = ids[i]
    out[#out + 1] = h
  end
end
return out
