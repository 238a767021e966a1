-- settle_claim (extension): settle a worker's outcomes and claim its next
-- batch in one transition, so a worker makes one server call per round.
-- In order: every completion exactly as complete would do it, then every
-- retry exactly as retry, then every release (below), then the claim
-- exactly as claim_batch. An id settled twice settles once, the second
-- answering 0.
-- KEYS[1]  pending       emq:{q}:pending
-- KEYS[2]  active        emq:{q}:active
-- KEYS[3]  delayed       emq:{q}:delayed
-- KEYS[4]  dead          emq:{q}:dead
-- KEYS[5]  base          emq:{q}:   declared root of meta and of job:<id>
-- ARGV[1]  lease_ms      integer >= 1, for the claim
-- ARGV[2]  n             integer >= 0: at most this many jobs claimed; 0 claims none
-- ARGV[3]  retention_ms  integer >= 0, for the completions; 0 deletes the rows
-- ARGV[4]  nc            integer >= 0: completions
-- ARGV[5]  nr            integer >= 0: retries
-- ARGV[6]  nx            integer >= 0: releases
-- then nc completions    id, token
-- then nr retries        id, token, delay_ms (integer >= 0),
--                        max_attempts (integer >= 0), error text
-- then nx releases       id, token
-- A release gives back a job claimed but never started: when the token
-- holds, the id leaves active and joins pending at score 0 with state
-- pending; attempts keeps the claim's count (it never goes back, so a
-- token is never reused).
-- Replies:
--   {settled, jobs}
--     settled  one integer per settlement, completions then retries then
--              releases, each in ARGV order: a completion 1 completed,
--              0 stale; a retry 2 dead, 1 retried (pending when
--              delay_ms = 0, else delayed), 0 stale; a release 1
--              released, 0 stale. Stale: the row's state is not active
--              or its attempts is not exactly the token's decimal text
--              (the lease was lost); nothing written for it.
--     jobs     {id1, payload1, attempts1, ...} as claim_batch answers:
--              up to n jobs, oldest first; {} when n = 0, the queue is
--              paused (meta paused = 1) or nothing is claimable
--   error "EMQARG <what> must be an integer >= <min>" or
--         "EMQARG settle_claim takes 6 + 2*nc + 5*nr + 2*nx arguments";
--         nothing written
-- Cost: one HMGET per settlement and two calls per claimed job (HMGET,
-- HSET); the completions' ZREMs and DELs, the claim's ZRANGE,
-- ZREMRANGEBYRANK (ZPOPMIN without its scores) and ZADD, go 1,000 to a
-- call. The server's time per call, and per reply table, is what bounds a
-- queue's throughput: counters rather than #t, no string.format in the
-- common case.
-- The token holds only as exact decimal text: byte for byte the canonical
-- decimal rendering of the stored attempts ("1", never "01", "1.0", " 1"
-- or "1e0").
local function holds(attempts, token)
  if attempts == token and #token < 16 and string.find(token, '^[1-9]%d*$') then
    return true -- canonical text below 2^53: what the test below answers
  end
  local a = tonumber(attempts)
  return a ~= nil and a == math.floor(a) and math.abs(a) <= 9007199254740991
    and string.format('%d', a) == token
end
local function int(i, what, min)
  local v = tonumber(ARGV[i])
  if not v or v ~= math.floor(v) or v < min or v > 9007199254740991 then
    return nil, redis.error_reply('EMQARG ' .. what .. ' must be an integer >= ' .. min)
  end
  return v
end
local lease, err = int(1, 'lease_ms', 1)
if not lease then return err end
local n
n, err = int(2, 'n', 0)
if not n then return err end
local keep
keep, err = int(3, 'retention_ms', 0)
if not keep then return err end
local nc, nr, nx
nc, err = int(4, 'nc', 0)
if not nc then return err end
nr, err = int(5, 'nr', 0)
if not nr then return err end
nx, err = int(6, 'nx', 0)
if not nx then return err end
if #ARGV ~= 6 + 2 * nc + 5 * nr + 2 * nx then
  return redis.error_reply('EMQARG settle_claim takes 6 + 2*nc + 5*nr + 2*nx arguments')
end
local r0 = 7 + 2 * nc -- the first retry
local x0 = r0 + 5 * nr -- the first release
for i = r0, x0 - 1, 5 do
  local d, e = int(i + 2, 'delay_ms', 0)
  if not d then return e end
  d, e = int(i + 3, 'max_attempts', 0)
  if not d then return e end
end

local call = redis.call
local base = KEYS[5]
local jp = base .. 'job:' -- a row key is jp .. id
local settled, ns = {}, 0
local now
local function clock()
  if not now then
    local t = call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end

-- Completions: as complete, the writes gathered.
local done, ids, rows = {}, {}, {}
local nid, nrow = 0, 0
local again = false -- a completed id was claimed again in this call
for i = 7, r0 - 1, 2 do
  local id = ARGV[i]
  local key = jp .. id
  local row = call('HMGET', key, 'state', 'attempts')
  ns = ns + 1
  if done[id] or row[1] ~= 'active' or not holds(row[2], ARGV[i + 1]) then
    settled[ns] = 0
  else
    done[id] = true
    nid = nid + 1
    ids[nid] = id
    if keep == 0 then
      nrow = nrow + 1
      rows[nrow] = key
    else
      call('HSET', key, 'state', 'completed')
      call('PEXPIRE', key, string.format('%d', keep))
    end
    settled[ns] = 1
  end
end
for i = 1, nrow, 1000 do
  call('DEL', unpack(rows, i, math.min(i + 999, nrow)))
end

-- Retries: as retry.
for i = r0, x0 - 1, 5 do
  local id = ARGV[i]
  local key = jp .. id
  local row = call('HMGET', key, 'state', 'attempts')
  ns = ns + 1
  if row[1] ~= 'active' or not holds(row[2], ARGV[i + 1]) then
    settled[ns] = 0
  else
    local delay, max = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
    call('ZREM', KEYS[2], id)
    if tonumber(row[2]) >= max then
      call('HSET', key, 'error', ARGV[i + 4], 'state', 'dead')
      call('ZADD', KEYS[4], clock(), id)
      settled[ns] = 2
    elseif delay == 0 then
      call('HSET', key, 'error', ARGV[i + 4], 'state', 'pending')
      call('ZADD', KEYS[1], 0, id)
      settled[ns] = 1
    else
      call('HSET', key, 'error', ARGV[i + 4], 'state', 'delayed')
      call('ZADD', KEYS[3], clock() + delay, id)
      settled[ns] = 1
    end
  end
end

-- Releases: back to pending, attempts kept.
for i = x0, #ARGV, 2 do
  local id = ARGV[i]
  local key = jp .. id
  local row = call('HMGET', key, 'state', 'attempts')
  ns = ns + 1
  if row[1] ~= 'active' or not holds(row[2], ARGV[i + 1]) then
    settled[ns] = 0
  else
    call('ZREM', KEYS[2], id)
    call('HSET', key, 'state', 'pending')
    call('ZADD', KEYS[1], 0, id)
    settled[ns] = 1
  end
end

-- The completed ids leave active after the claim's ids join it, so that
-- a worker's active set does not empty and come back as a listpack (whose
-- inserts cost a scan each) every round; an id claimed again in this call
-- stays, as if it had left first.
local function retire()
  local keep, nk = ids, nid
  if again then
    keep, nk = {}, 0
    for j = 1, nid do
      if done[ids[j]] ~= 'again' then
        nk = nk + 1
        keep[nk] = ids[j]
      end
    end
  end
  for j = 1, nk, 1000 do
    call('ZREM', KEYS[2], unpack(keep, j, math.min(j + 999, nk)))
  end
end

-- The claim: as claim_batch.
local out = {}
if n == 0 or call('HGET', base .. 'meta', 'paused') == '1' then
  retire()
  return {settled, out}
end
local deadline = string.format('%d', clock() + lease)
-- attempts after a claim, by the text before it: no arithmetic and no
-- string.format for the common few.
local NEXT = {['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9}
local TEXT = {'1', '2', '3', '4', '5', '6', '7', '8', '9'}
local leased, nl, no = {}, 0, 0
while nl < n do
  -- The oldest n - nl: ZPOPMIN, without formatting every score.
  local last = string.format('%d', n - nl - 1)
  local popped = call('ZRANGE', KEYS[1], 0, last)
  if #popped == 0 then
    break
  end
  call('ZREMRANGEBYRANK', KEYS[1], 0, last)
  for i = 1, #popped do
    local id = popped[i]
    local key = jp .. id
    local f = call('HMGET', key, 'payload', 'attempts')
    -- A row has a payload; only a row without one needs EXISTS to tell it
    -- from a ghost.
    if f[1] or call('EXISTS', key) == 1 then
      -- What HINCRBY attempts 1 does, folded into the one HSET.
      local attempts = NEXT[f[2]] or ((tonumber(f[2]) or 0) + 1)
      call('HSET', key, 'attempts', TEXT[attempts] or string.format('%d', attempts), 'state', 'active')
      nl = nl + 1
      leased[nl] = id
      if done[id] then
        done[id], again = 'again', true
      end
      out[no + 1] = id
      out[no + 2] = f[1] or ''
      out[no + 3] = attempts
      no = no + 3
    end
  end
end
-- Every claimed id joins active at the one deadline, 1,000 to a ZADD,
-- newest first: in a small set (a listpack) each then joins at the head of
-- its deadline's ids instead of after them all.
local z = {}
local i = nl
while i >= 1 do
  local nz = 0
  while i >= 1 and nz < 2000 do
    z[nz + 1] = deadline
    z[nz + 2] = leased[i]
    nz = nz + 2
    i = i - 1
  end
  call('ZADD', KEYS[2], unpack(z, 1, nz))
end
retire()
return {settled, out}
