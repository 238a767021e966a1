-- lane_claim (extension, lanes): lease up to n jobs, taking turns between
-- the plain pending jobs and the lanes, and between the lanes round-robin
-- (a lane of weight w is served w times in a row), each lane at most its
-- cap at once, in its enqueue order. The fairness is decided here, across
-- every consumer of the queue.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  delayed   emq:{q}:delayed
-- KEYS[4]  base      emq:{q}:   declared root of meta, job:<id> and the
--                    lane keys (lane:<k>, lanerun:<k>, lanering, lanestate,
--                    lanefull, lanecfg, lanecredit, lanehalt, lanejob,
--                    laneturn)
-- ARGV[1]  lease_ms  integer >= 1
-- ARGV[2]  n         integer 0..1000: most jobs claimed
-- ARGV[3]  reap      integer 0..1000: full lanes re-checked first (the
--                    lane-aware reap: a lane left full by a job that a peer's
--                    core script, a reap or a delete ended goes on)
-- A lane's occupants (lanerun:<k>) are the ids claimed from it that have
-- not ended: state active, pending or delayed (a retry keeps its place, so
-- the lane's next job waits for it). An occupant whose row is completed,
-- dead or gone is dropped when the lane is looked at; a dead one halts the
-- lane when lanecfg 'halt:<k>' (else 'halt') is '1', unless its error is
-- 'cancelled'. Work per call: at most 4n+32 lane visits, each reading at
-- most cap (<= 1000) rows.
-- Replies:
--   {reaped, id1, payload1, attempts1, ...}  reaped: full lanes freed;
--     then the claimed jobs (attempts is the fencing token); none when
--     paused (meta paused = 1) or nothing is claimable
--   error "EMQARG ..."; nothing written
local function int(v, what, lo, hi)
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or n < lo or n > hi then
    return nil, redis.error_reply('EMQARG ' .. what .. ' must be an integer ' .. lo .. '..' .. hi)
  end
  return n
end
local lease, e1 = int(ARGV[1], 'lease_ms', 1, 9007199254740991)
if not lease then return e1 end
local n, e2 = int(ARGV[2], 'n', 0, 1000)
if not n then return e2 end
local reap, e3 = int(ARGV[3], 'reap', 0, 1000)
if not reap then return e3 end
local PARK = 9007199254740991
local call, base = redis.call, KEYS[4]
local ring, lstate, full = base .. 'lanering', base .. 'lanestate', base .. 'lanefull'
local cfg = base .. 'lanecfg'
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function capOf(k) return tonumber(call('HGET', cfg, 'cap:' .. k)) or 1 end

-- halt marks lane k halted by the dead job id: 'hr' while it is still in
-- the ring (the claim drops it there), 'h' otherwise.
local function halt(k, id)
  local st = call('HGET', lstate, k)
  if st == 'f' then call('ZREM', full, k) end
  call('HSET', lstate, k, (st == 'r' or st == 'hr') and 'hr' or 'h')
  call('HSET', base .. 'lanehalt', k, id)
end

-- occupants drops lane k's ended occupants and returns how many run.
local function occupants(k)
  local run = base .. 'lanerun:' .. k
  local live = 0
  for _, id in ipairs(call('SMEMBERS', run)) do
    local r = call('HMGET', base .. 'job:' .. id, 'state', 'error')
    local s = r[1]
    if s == 'active' or s == 'pending' or s == 'delayed' then
      live = live + 1
    else
      call('SREM', run, id)
      call('HDEL', base .. 'lanejob', id)
      if s == 'dead' and r[2] ~= 'cancelled' then
        local h = call('HGET', cfg, 'halt:' .. k) or call('HGET', cfg, 'halt')
        if h == '1' then halt(k, id) end
      end
    end
  end
  return live
end

local out = {0}
-- The lane-aware reap: the oldest full lanes, re-checked.
if reap > 0 then
  for _, k in ipairs(call('ZRANGE', full, 0, reap - 1)) do
    if call('HGET', lstate, k) ~= 'f' then
      call('ZREM', full, k)
    elseif occupants(k) < capOf(k) and call('HGET', lstate, k) == 'f' then
      call('ZREM', full, k)
      if call('LLEN', base .. 'lane:' .. k) > 0 then
        call('HSET', lstate, k, 'r')
        call('RPUSH', ring, k)
      else
        call('HDEL', lstate, k)
      end
      out[1] = out[1] + 1
    elseif call('HGET', lstate, k) == 'f' then
      call('ZADD', full, now, k) -- to the back: the next call sees others
    end
  end
end
if n == 0 or call('HGET', base .. 'meta', 'paused') == '1' then
  return out
end

local function lease_it(id)
  local row = base .. 'job:' .. id
  local attempts = call('HINCRBY', row, 'attempts', 1)
  call('HSET', row, 'state', 'active')
  call('ZADD', KEYS[2], now + lease, id)
  out[#out + 1] = id
  out[#out + 1] = call('HGET', row, 'payload')
  out[#out + 1] = attempts
end

local visits, maxv = 0, 4 * n + 32

local function plain()
  while visits < maxv do
    visits = visits + 1
    local p = call('ZPOPMIN', KEYS[1])
    if #p == 0 then return false end
    if call('EXISTS', base .. 'job:' .. p[1]) == 1 then
      lease_it(p[1])
      return true
    end -- a ghost is dropped, as the core claim does
  end
  return false
end

local function toFull(k)
  call('LPOP', ring)
  call('HSET', lstate, k, 'f')
  call('ZADD', full, now, k)
  call('HDEL', base .. 'lanecredit', k)
end

local function fromLane()
  while visits < maxv do
    visits = visits + 1
    local k = call('LINDEX', ring, 0)
    if not k then return false end
    local st = call('HGET', lstate, k)
    if st ~= 'r' then
      call('LPOP', ring) -- halted, or a stale entry
      if st == 'hr' then call('HSET', lstate, k, 'h') end
    else
      local cap = capOf(k)
      local live = occupants(k)
      if call('HGET', lstate, k) ~= 'r' then
        -- halted by a dead occupant: dropped on the next visit
      elseif live >= cap then
        toFull(k)
      else
        local list = base .. 'lane:' .. k
        local id = call('LPOP', list)
        local left = call('LLEN', list)
        if left == 0 then
          call('LPOP', ring)
          call('HDEL', lstate, k)
          call('HDEL', base .. 'lanecredit', k)
        end
        if id then
          local row = base .. 'job:' .. id
          local sc = tonumber(call('ZSCORE', KEYS[3], id))
          if call('HGET', row, 'state') == 'delayed' and sc and sc >= PARK then
            call('ZREM', KEYS[3], id)
            call('SADD', base .. 'lanerun:' .. k, id)
            lease_it(id)
            if left > 0 then
              if live + 1 >= cap then
                toFull(k)
              else
                local c = call('HINCRBY', base .. 'lanecredit', k, 1)
                if c >= (tonumber(call('HGET', cfg, 'w:' .. k)) or 1) then
                  call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
                  call('HDEL', base .. 'lanecredit', k)
                end
              end
            end
            return true
          end
          -- no longer waiting (deleted, cancelled, moved by a peer): skipped
          call('HDEL', base .. 'lanejob', id)
        end
      end
    end
  end
  return false
end

-- Plain and lanes take turns (laneturn counts the turns across calls); a
-- side found empty is not asked again in this call.
local got, turn = 0, tonumber(call('GET', base .. 'laneturn')) or 0
local noPlain, noLane = false, false
local function tryPlain()
  if noPlain then return false end
  noPlain = not plain()
  return not noPlain
end
local function tryLane()
  if noLane then return false end
  noLane = not fromLane()
  return not noLane
end
while got < n do
  local ok
  turn = turn + 1
  if turn % 2 == 0 then
    ok = tryPlain() or tryLane()
  else
    ok = tryLane() or tryPlain()
  end
  if not ok then break end
  got = got + 1
end
call('SET', base .. 'laneturn', turn)
return out
