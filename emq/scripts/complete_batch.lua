-- complete_batch (extension): complete several claimed jobs of one queue.
-- Each job is exactly what complete would have done to it, in order: an
-- id given twice completes once, the second answering 0.
-- KEYS[1]  active        emq:{q}:active
-- KEYS[2]  base          emq:{q}:   declared root of job:<id>
-- ARGV[1]  retention_ms  integer >= 0; 0 deletes the rows
-- ARGV[2], ARGV[3]       id1, token1
-- ARGV[4], ARGV[5]       id2, token2, ... (pairs)
-- Replies:
--   {r1, r2, ...}  one integer per pair, in order: 1 completed, 0 stale
--                  (as complete: the token is exact decimal text)
--   error "EMQARG retention_ms must be an integer >= 0" or
--         "EMQARG ids and tokens must come in pairs"; nothing written
-- Cost: one HMGET per job; the ZREMs and (retention 0) the DELs go 1,000
-- to a call.
-- The token holds only as exact decimal text: byte for byte the canonical
-- decimal rendering of the stored attempts ("1", never "01", "1.0", " 1"
-- or "1e0").
local function holds(attempts, token)
  local a = tonumber(attempts)
  return a ~= nil and a == math.floor(a) and math.abs(a) <= 9007199254740991
    and string.format('%d', a) == token
end
local keep = tonumber(ARGV[1])
if not keep or keep ~= math.floor(keep) or keep < 0 or keep > 9007199254740991 then
  return redis.error_reply('EMQARG retention_ms must be an integer >= 0')
end
if #ARGV % 2 ~= 1 then
  return redis.error_reply('EMQARG ids and tokens must come in pairs')
end
local out = {}
local done = {}
local ids = {}
local rows = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local key = KEYS[2] .. 'job:' .. id
  local row = redis.call('HMGET', key, 'state', 'attempts')
  if done[id] or row[1] ~= 'active' or not holds(row[2], ARGV[i + 1]) then
    out[#out + 1] = 0
  else
    done[id] = true
    ids[#ids + 1] = id
    if keep == 0 then
      rows[#rows + 1] = key
    else
      redis.call('HSET', key, 'state', 'completed')
      redis.call('PEXPIRE', key, string.format('%d', keep))
    end
    out[#out + 1] = 1
  end
end
for i = 1, #ids, 1000 do
  redis.call('ZREM', KEYS[1], unpack(ids, i, math.min(i + 999, #ids)))
end
for i = 1, #rows, 1000 do
  redis.call('DEL', unpack(rows, i, math.min(i + 999, #rows)))
end
return out
