-- flow_complete (extension, lanes and flows): the settle of a job that may
-- belong to a lane or a flow, and the flow's repair, read and cancel. A
-- lane job's end frees its place in the lane (or halts the lane); a flow
-- job's end resolves its dependents in the same step.
-- KEYS[1]  active    emq:{q}:active
-- KEYS[2]  pending   emq:{q}:pending
-- KEYS[3]  delayed   emq:{q}:delayed
-- KEYS[4]  dead      emq:{q}:dead
-- KEYS[5]  base      emq:{q}:   declared root of job:<id>, result:<id>,
--                    the channel done:<id>, the lane keys and the flow keys
-- ARGV[1]  mode, then by mode:
--   'c' id, token, retention_ms, result: complete (as complete does; 0
--       deletes the row, else the row is kept and the result at
--       result:<id> PX retention_ms), published on done:<id> 'completed'
--   'r' id, token, delay_ms, max_attempts, error: retry (as retry does);
--       a job that goes dead is published on done:<id> 'dead'
--   'a' f: repair and read flow f: every job of f that ended without
--       this script (a peer's core complete: row completed or gone; a
--       peer's retry, reap or cancel: dead) is resolved now
--   'x' f, error: cancel flow f: after the repair, every job of f not yet
--       run (pending, or waiting on its dependencies) ends dead with error
--       (or, failed on the way under 'f', with the cause); cancelled counts
--       them
-- A flow's work is bounded by its size (<= 1000 jobs, 10000 dependencies).
-- Replies:
--   'c': 1 completed, 0 stale (nothing written)
--   'r': 2 dead, 1 back in pending or delayed, 0 stale (nothing written)
--   'a', 'x': {state, total, left, failed, cancelled, id1, state1, ...}
--        state 'running' | 'done' | 'failed', or {} for no such flow;
--        statei is the row's state ('' when the row is gone)
--   error "EMQARG ..."; nothing written
local PARK = 9007199254740991
local call, base, mode = redis.call, KEYS[5], ARGV[1]
local function int(v, what)
  local x = tonumber(v)
  if not x or x ~= math.floor(x) or x < 0 or x > 9007199254740991 then
    return nil, redis.error_reply('EMQARG ' .. what .. ' must be an integer >= 0')
  end
  return x
end
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function parked(id)
  local sc = tonumber(call('ZSCORE', KEYS[3], id))
  return sc and sc >= PARK and call('HGET', base .. 'job:' .. id, 'state') == 'delayed'
end

-- laneEnd frees the place of an ended lane job id (dead: halting the lane
-- when its policy says so).
local function laneEnd(id, dead, err)
  local k = call('HGET', base .. 'lanejob', id)
  if not k then return end
  call('HDEL', base .. 'lanejob', id)
  if call('SREM', base .. 'lanerun:' .. k, id) == 0 then return end
  local ls, cfg = base .. 'lanestate', base .. 'lanecfg'
  local st = call('HGET', ls, k)
  local h = call('HGET', cfg, 'halt:' .. k) or call('HGET', cfg, 'halt')
  if dead and h == '1' and err ~= 'cancelled' then
    if st == 'f' then call('ZREM', base .. 'lanefull', k) end
    call('HSET', ls, k, (st == 'r' or st == 'hr') and 'hr' or 'h')
    call('HSET', base .. 'lanehalt', k, id)
  elseif st == 'f' then
    call('ZREM', base .. 'lanefull', k)
    call('HSET', ls, k, 'r')
    call('RPUSH', base .. 'lanering', k)
  end
end

-- flowEnd resolves flow job id's end (ok: completed) for its dependents,
-- and those of the dependents it fails, through a worklist.
local function flowEnd(id0, ok0, cause0)
  local work = {{id0, ok0, cause0}}
  local w = 1
  while w <= #work do
    local id, ok, cause = work[w][1], work[w][2], work[w][3]
    w = w + 1
    local f = call('HGET', base .. 'flowjob', id)
    if f then
      call('HDEL', base .. 'flowjob', id)
      local fk = base .. 'flow:' .. f
      local left = call('HINCRBY', fk, 'left', -1)
      local failed = tonumber(call('HGET', fk, 'failed')) or 0
      if not ok then failed = call('HINCRBY', fk, 'failed', 1) end
      local cancelled = call('HGET', fk, 'cancelled') == '1'
      local kl = base .. 'flowkids:' .. id
      for _, kid in ipairs(call('LRANGE', kl, 0, -1)) do
        local pol = call('HGET', base .. 'flowpol:' .. kid, id)
        local release = false
        if ok or pol == 'i' then
          if call('HEXISTS', base .. 'flowwait', kid) == 1 and
              call('HINCRBY', base .. 'flowwait', kid, -1) <= 0 then
            release = true
          end
        elseif pol == 'c' then
          release = true
        elseif parked(kid) then
          call('ZREM', KEYS[3], kid)
          call('HSET', base .. 'job:' .. kid, 'state', 'dead', 'error',
            'flow: dependency ' .. id .. ' failed: ' .. (cause or ''))
          call('ZADD', KEYS[4], now, kid)
          call('HDEL', base .. 'flowwait', kid)
          call('PUBLISH', base .. 'done:' .. kid, 'dead')
          work[#work + 1] = {kid, false, 'dependency ' .. id .. ' failed'}
        end
        if release and not cancelled and parked(kid) then
          call('HDEL', base .. 'flowwait', kid)
          call('ZREM', KEYS[3], kid)
          call('HSET', base .. 'job:' .. kid, 'state', 'pending')
          call('ZADD', KEYS[2], 0, kid)
        end
      end
      call('DEL', kl, base .. 'flowpol:' .. id)
      if left <= 0 then
        -- the record is kept a week after the flow's end
        call('HSET', fk, 'state', failed > 0 and 'failed' or 'done')
        call('PEXPIRE', fk, 604800000)
        call('PEXPIRE', base .. 'flowjobs:' .. f, 604800000)
      end
    end
  end
end

if mode == 'c' or mode == 'r' then
  local id, token = ARGV[2], ARGV[3]
  local a, e1 = int(ARGV[4], mode == 'c' and 'retention_ms' or 'delay_ms')
  if not a then return e1 end
  local max = 0
  if mode == 'r' then
    local e2
    max, e2 = int(ARGV[5], 'max_attempts')
    if not max then return e2 end
  end
  if not id or not token or not ARGV[5] or (mode == 'r' and not ARGV[6]) then
    return redis.error_reply('EMQARG flow_complete: arguments missing')
  end
  local row = base .. 'job:' .. id
  local r = call('HMGET', row, 'state', 'attempts')
  if r[1] ~= 'active' or r[2] ~= token then
    return 0
  end
  call('ZREM', KEYS[1], id)
  if mode == 'c' then
    if a == 0 then
      call('DEL', row)
    else
      call('HSET', row, 'state', 'completed')
      call('PEXPIRE', row, a)
      call('SET', base .. 'result:' .. id, ARGV[5], 'PX', a)
    end
    call('PUBLISH', base .. 'done:' .. id, 'completed')
    laneEnd(id, false)
    flowEnd(id, true)
    return 1
  end
  local err = ARGV[6]
  call('HSET', row, 'error', err)
  if tonumber(r[2]) >= max then
    call('HSET', row, 'state', 'dead')
    call('ZADD', KEYS[4], now, id)
    call('PUBLISH', base .. 'done:' .. id, 'dead')
    laneEnd(id, true, err)
    flowEnd(id, false, err)
    return 2
  elseif a == 0 then
    call('HSET', row, 'state', 'pending')
    call('ZADD', KEYS[2], 0, id)
  else
    call('HSET', row, 'state', 'delayed')
    call('ZADD', KEYS[3], now + a, id)
  end
  return 1
end

if mode ~= 'a' and mode ~= 'x' then
  return redis.error_reply("EMQARG mode must be 'c', 'r', 'a' or 'x'")
end
local f = ARGV[2]
if not f or (mode == 'x' and not ARGV[3]) then
  return redis.error_reply('EMQARG flow_complete: arguments missing')
end
local fk = base .. 'flow:' .. f
if call('EXISTS', fk) == 0 then
  return {}
end
local jobs = call('LRANGE', base .. 'flowjobs:' .. f, 0, -1)
-- Repair: ends this script did not see.
for _, id in ipairs(jobs) do
  if call('HEXISTS', base .. 'flowjob', id) == 1 then
    local r = call('HMGET', base .. 'job:' .. id, 'state', 'error')
    if r[1] == 'completed' or not r[1] then
      flowEnd(id, true)
    elseif r[1] == 'dead' then
      flowEnd(id, false, r[2])
    end
  end
end
local cancelled = 0
if mode == 'x' then
  call('HSET', fk, 'cancelled', 1)
  local left0 = tonumber(call('HGET', fk, 'left'))
  local sets = {pending = KEYS[2], delayed = KEYS[3]}
  for _, id in ipairs(jobs) do
    if call('HEXISTS', base .. 'flowjob', id) == 1 then
      local row = base .. 'job:' .. id
      local s = call('HGET', row, 'state')
      if sets[s or ''] and call('ZREM', sets[s], id) == 1 then
        call('HSET', row, 'state', 'dead', 'error', ARGV[3])
        call('ZADD', KEYS[4], now, id)
        call('HDEL', base .. 'flowwait', id)
        call('PUBLISH', base .. 'done:' .. id, 'dead')
        flowEnd(id, false, ARGV[3])
      end
    end
  end
  -- with the dependents the cancelled jobs failed on their way
  cancelled = left0 - tonumber(call('HGET', fk, 'left'))
end
local h = call('HMGET', fk, 'state', 'total', 'left', 'failed')
local out = {h[1], tonumber(h[2]), tonumber(h[3]), tonumber(h[4]), cancelled}
for _, id in ipairs(jobs) do
  out[#out + 1] = id
  out[#out + 1] = call('HGET', base .. 'job:' .. id, 'state') or ''
end
return out
