-- trim_dead (extension, operations): remove the oldest dead jobs, ids and
-- rows, beyond an age or a count; at most limit per call, so a huge dead
-- set never blocks the server: the caller repeats while a call removes
-- limit.
-- KEYS[1]  dead        emq:{q}:dead
-- KEYS[2]  base        emq:{q}:   declared root of job:<id>
-- ARGV[1]  max_age_ms  integer >= 0: jobs that died at or before now minus
--                      it go (0: every job dead by now); -1: no age bound
-- ARGV[2]  max_count   integer >= 0: all but the newest max_count go
--                      (0: every one); -1: no count bound
-- ARGV[3]  limit       integer >= 1: at most this many removed
-- Replies:
--   n   the count removed, oldest death first (ties in id order): each id
--       leaves dead and its row is deleted. n = limit: there may be more.
--       A flow job (in flowjob) leaves flowgone <id> = its error.
--   error "EMQARG max_age_ms must be an integer >= -1" (likewise
--         max_count), "EMQARG limit must be an integer >= 1"; nothing
--         written
local function int(v, lo, name)
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or n < lo or n > 9007199254740991 then
    return nil, redis.error_reply('EMQARG ' .. name .. ' must be an integer >= ' .. lo)
  end
  return n
end
local age, e1 = int(ARGV[1], -1, 'max_age_ms')
if e1 then return e1 end
local count, e2 = int(ARGV[2], -1, 'max_count')
if e2 then return e2 end
local limit, e3 = int(ARGV[3], 1, 'limit')
if e3 then return e3 end
local ids = {}
if age >= 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  -- The oldest first: a prefix of the set in rank order.
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - age),
    'LIMIT', 0, string.format('%d', limit))
end
if count >= 0 and #ids < limit then
  -- Beyond the newest count: the next ranks after those already chosen.
  local excess = redis.call('ZCARD', KEYS[1]) - #ids - count
  local k = math.min(excess, limit - #ids)
  if k > 0 then
    local more = redis.call('ZRANGE', KEYS[1], #ids, #ids + k - 1)
    for _, id in ipairs(more) do
      ids[#ids + 1] = id
    end
  end
end
local rows = {}
for i, id in ipairs(ids) do
  rows[i] = KEYS[2] .. 'job:' .. id
  -- A flow job whose end its flow has not resolved yet leaves a tombstone
  -- (flowgone: id -> its error), so the flow's repair counts it failed,
  -- not completed, once its row is gone.
  if redis.call('HEXISTS', KEYS[2] .. 'flowjob', id) == 1 then
    redis.call('HSET', KEYS[2] .. 'flowgone', id, redis.call('HGET', rows[i], 'error') or '')
  end
end
for i = 1, #ids, 1000 do
  redis.call('ZREM', KEYS[1], unpack(ids, i, math.min(i + 999, #ids)))
  redis.call('DEL', unpack(rows, i, math.min(i + 999, #rows)))
end
return #ids
