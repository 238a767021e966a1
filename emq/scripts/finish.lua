-- finish (extension, job system J1): settle claimed jobs whose end someone
-- may wait for, each exactly as complete or a final retry would, and tell
-- the waiters: a completion keeps the handler's result beside the row, in
-- the same step.
-- KEYS[1]  active        emq:{q}:active
-- KEYS[2]  dead          emq:{q}:dead
-- KEYS[3]  base          emq:{q}:   declared root of job:<id>, result:<id>
--                        and the channel done:<id>
-- ARGV[1]  n             integer >= 0: settlements that follow
-- then n settlements     id, token, kind, retention_ms (integer >= 1), data
--   kind 'c'  complete: the row leaves active with state completed and
--             PEXPIRE retention_ms; data is the result, kept at
--             base .. 'result:' .. id with PX retention_ms ('' is kept too)
--   kind 'd'  dead: the row leaves active with state dead and error = data
--             (as retry does once attempts reach max_attempts), joining dead
--             at the server's time
-- A settlement that holds (the row's state is active and its attempts is
-- exactly the token's decimal text) is then published on the channel
-- base .. 'done:' .. id with the message 'completed' or 'dead'.
-- Replies:
--   {r1, r2, ...}  one per settlement: 1 settled, 0 stale (nothing written)
--   error "EMQARG ..." for a malformed count, kind or retention; nothing
--         written
local function int(v, what, min)
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or n < min or n > 9007199254740991 then
    return nil, redis.error_reply('EMQARG ' .. what .. ' must be an integer >= ' .. min)
  end
  return n
end
local n, err = int(ARGV[1], 'n', 0)
if not n then return err end
if #ARGV ~= 1 + 5 * n then
  return redis.error_reply('EMQARG finish takes 1 + 5*n arguments')
end
for i = 2, #ARGV, 5 do
  local k = ARGV[i + 2]
  if k ~= 'c' and k ~= 'd' then
    return redis.error_reply("EMQARG finish kind must be 'c' or 'd'")
  end
  local r, e = int(ARGV[i + 3], 'retention_ms', 1)
  if not r then return e end
end
local call = redis.call
local base = KEYS[3]
local now
local out = {}
for i = 2, #ARGV, 5 do
  local id, token, kind, keep = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = base .. 'job:' .. id
  local row = call('HMGET', key, 'state', 'attempts')
  local a = tonumber(row[2])
  if row[1] ~= 'active' or (row[2] ~= token and not (a and string.format('%d', a) == token)) then
    out[#out + 1] = 0
  else
    call('ZREM', KEYS[1], id)
    if kind == 'c' then
      call('HSET', key, 'state', 'completed')
      call('PEXPIRE', key, keep)
      call('SET', base .. 'result:' .. id, ARGV[i + 4], 'PX', keep)
      call('PUBLISH', base .. 'done:' .. id, 'completed')
    else
      if not now then
        local t = call('TIME')
        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      call('HSET', key, 'error', ARGV[i + 4], 'state', 'dead')
      call('ZADD', KEYS[2], now, id)
      call('PUBLISH', base .. 'done:' .. id, 'dead')
    end
    out[#out + 1] = 1
  end
end
return out
