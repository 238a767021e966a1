-- flow_complete (extension, lanes and flows): the settle of a job that may
-- belong to a lane or a flow, and the flow's repair, read and cancel. A
-- lane job's end is marked for lane_claim (which frees its place, or halts
-- the lane); a flow job's end resolves its dependents in the same step.
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
--   'C' retention_ms, then 1..1000 (id, token, result): complete each
--       as 'c' does, in order; with retention 0 the ends are not
--       published (a J1 Wait waits only on a job with a retention, and
--       settle_claim publishes none either)
--   'S' retention_ms, lease_ms, n (0..1000), then 0..1000 (id, token,
--       result): complete each as 'C' does, then claim up to n pending
--       jobs as claim_batch does (honouring meta paused): the worker's
--       settle and claim in one call, dependents released by the
--       completions claimable in it: after the pending jobs, up to the
--       rest of n of them go from parked straight to active (the
--       others to pending); its drain runs min(STEPS, max(n - pending,
--       16) + 1) units, about what the claim takes
--   's' : run the queued resolution steps (see drain below)
--   'a' f [offset count]: repair and read the jobs offset..offset+count-1
--       (default 0, 1000; count 1..1000) of flow f: every one of them that
--       ended without this script (a peer's core complete: row completed
--       or gone; a peer's retry, reap or cancel: dead; trimmed dead: gone
--       with a flowgone tombstone) is resolved now
--   'x' f, error [offset count]: cancel flow f: after the repair, every
--       job of the page not yet run (pending, or waiting on its
--       dependencies) ends dead with error; dependents failed on the way
--       end dead with the cause; cancelled counts them
--   'L' id, target, dependent: link job id to a dependent in queue
--       target (another slot): its end is posted on outbox
--   'l' n: post the ends of up to n linked jobs ended without this script
--   'e' dependent, label, ok, cause: apply a relayed end (once)
--   'g' f: seal staged flow f (flow_submit '+'): it runs, its roots are
--       released in steps
--   '-' f: abort staged flow f: delete up to 500 of its jobs
-- Every call also drains at most STEPS (250) units of the queue's pending
-- resolution steps (flowstep), oldest first: no call's work grows with a
-- flow's fan-out or fan-in.
-- Replies:
--   'c': 1 completed, 3 completed and steps are left (call 's'),
--        0 stale (nothing written)
--   'r': 2 dead, 4 dead and steps are left, 1 back in pending or delayed,
--        0 stale (nothing written)
--   'C': {flag1, ..., flagn, steps}: flag 1 completed, 0 stale; steps
--        the entries left on flowstep
--   'S': {flag1, ..., flagn, steps, id1, payload1, attempts1, ...}: the
--        flags and steps as 'C', then the claimed jobs (attempts = token)
--   's': steps left (0: drained)
--   'L': 1 linked, 2 posted now (completed or gone), 3 posted now (dead)
--   'l': ends posted;  'e': 1 applied, 0 not (already, or ended)
--   'g': steps left; error "EMQFLOW not staging"
--   '-': jobs left to delete (0: the flow is gone); "EMQFLOW not staging"
--   'a', 'x': {state, total, left, failed, cancelled, id1, state1, ...}
--        state 'staging' | 'running' | 'done' | 'failed', or {} for no
--        such flow; statei is the row's state ('' when the row is gone)
--   error "EMQARG ..."; nothing written
local PARK = 9007199254740991
local PARKS = '9007199254740991' -- PARK as ZMSCORE writes it
local call, base, mode = redis.call, KEYS[5], ARGV[1]
local find, sub, gmatch, byte = string.find, string.sub, string.gmatch, string.byte
local function int(v, what)
  local x = tonumber(v)
  if not x or x ~= math.floor(x) or x < 0 or x > 9007199254740991 then
    return nil, redis.error_reply('EMQARG ' .. what .. ' must be an integer >= 0')
  end
  return x
end
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- bulk calls cmd key with the values a[1..#a], 1000 at a time (pairs
-- stay whole: 1000 is even).
local function bulk(cmd, key, a)
  for i = 1, #a, 1000 do
    call(cmd, key, unpack(a, i, math.min(#a, i + 999)))
  end
end

local function parked(id)
  local sc = tonumber(call('ZSCORE', KEYS[3], id))
  return sc and sc >= PARK and call('HGET', base .. 'job:' .. id, 'state') == 'delayed'
end

-- laneEnd marks the end of lane job id (its row has field lane, k) on
-- laneend, for lane_claim to free its place (or halt the lane) before its
-- next claim (LANES-FLOWS.md).
local function laneEnd(id, k)
  if k then call('RPUSH', base .. 'laneend', id .. '\n' .. k) end
end

-- Flow layout (LANES-FLOWS.md): flowjob id -> 'f' or 'f kids' while the
-- job's end is not resolved, kids its dependents ','-joined when at most
-- KIDS, or '*' when they are listed at flowkids:<id>; a dependent written
-- '!<id>' has that one dependency only (no flowwait count: its release
-- is the dependency's end); flowedge:<f> '<kid>><dep>' -> policy, for the
-- dependencies whose policy is not 'f' (and all those of a node staged
-- over several parts); flowwait kid -> dependencies not yet resolved. Resolution runs in bounded steps: an ended job with
-- listed ('*') dependents, or more than the call's inline budget, queues
-- an entry on flowstep, and every call drains at most STEPS units (an
-- entry, a dependent, a root) of that queue, oldest first, whoever queued
-- it. Entries:
--   'E\n' id '\n' ok '\n' f '\n' cause   job id of flow f ended (ok 1
--        completed, 0 dead with cause): its dependents (flowkids:<id>,
--        trimmed as they are resolved) are resolved
--   'R\n' f '\n1\n\n'                   sealed staged flow f: its roots
--        (flowroots:<f>) are released
local STEPS = 250
local KIDS = 8
local STEP = base .. 'flowstep'
local WAIT = base .. 'flowwait'

-- laneRelease puts a released job kid that names a lane (row field lane)
-- in its lane instead of pending: still parked at the lane score, on
-- laneadmit, which lane_claim moves to the lane's tail in this order.
-- Only a queue with lanes (lanestate exists, read once a call) pays the
-- HGET.
local hasLanes
local function laneRelease(kid)
  if hasLanes == nil then hasLanes = call('EXISTS', base .. 'lanestate') == 1 end
  if not hasLanes then return false end
  local k = call('HGET', base .. 'job:' .. kid, 'lane')
  if not k then return false end
  call('ZADD', KEYS[3], 'XX', 9007199254740990, kid)
  call('RPUSH', base .. 'laneadmit', kid)
  return true
end

-- Released dependents are batched: want() notes a job whose dependencies
-- have resolved; flushRel() makes those still parked pending (ZMSCORE,
-- then one HDEL, ZREM and ZADD for all, one HSET per row). Every path
-- that can fail or move a dependent flushes first, so the order of the
-- steps is the order of their effects.
local rel, nrel, relset = {}, 0, {}
-- 'S' hands released jobs to its claim: while hold is set the drain
-- leaves what it released for the claim's own flushRel, which moves up
-- to direct of them from parked to active at once (take claims one: its
-- row's HSET and the reply), after the pending jobs were claimed.
local hold, direct, take = false, 0, nil
-- budget is the units a drain runs: STEPS, or less in 'S' (below)
local budget = STEPS
local function want(kid, uncounted)
  if not relset[kid] then
    relset[kid] = uncounted and 1 or 2 -- 2: drop its flowwait count
    nrel = nrel + 1
    rel[nrel] = kid
  end
end
local function flushRel()
  if nrel == 0 then return end
  local all, how = rel, relset
  local n = nrel
  rel, nrel, relset = {}, 0, {}
  local jp = base .. 'job:'
  for i = 1, n, 500 do
    local j = math.min(n, i + 499)
    local counted, nc = {}, 0
    for x = i, j do
      local kid = all[x]
      if how[kid] == 2 then
        nc = nc + 1
        counted[nc] = kid
      end
    end
    if nc > 0 then call('HDEL', WAIT, unpack(counted, 1, nc)) end
    local sc = call('ZMSCORE', KEYS[3], unpack(all, i, j))
    local go, z, ng, nz = {}, {}, 0, 0
    for x = i, j do
      local kid = all[x]
      local s = sc[x - i + 1]
      -- parked: the score's text is PARKS (no tonumber per job), or any
      -- score read as a number at least PARK
      if s and (s == PARKS or (tonumber(s) or 0) >= PARK) and (hasLanes == false or not laneRelease(kid)) then
        ng = ng + 1
        go[ng] = kid
        if direct > 0 then
          direct = direct - 1
          take(kid)
        else
          z[nz + 1] = 0
          z[nz + 2] = kid
          nz = nz + 2
          call('HSET', jp .. kid, 'state', 'pending')
        end
      end
    end
    if ng > 0 then call('ZREM', KEYS[3], unpack(go, 1, ng)) end
    if nz > 0 then call('ZADD', KEYS[2], unpack(z, 1, nz)) end
  end
end

local canc = {}
local function cancelled(f)
  local c = canc[f]
  if c == nil then
    c = call('HGET', base .. 'flow:' .. f, 'cancelled') == '1'
    canc[f] = c
  end
  return c
end

-- dec resolves k dependencies of kid as completed (or ignored): released
-- when none is left (unless its flow is cancelled: it stays parked). A
-- '!' kid has one dependency: it is released at once.
local function dec(kid, k, f)
  if byte(kid, 1) == 33 then
    if not cancelled(f) then want(sub(kid, 2), true) end
    return
  end
  local w = call('HINCRBY', WAIT, kid, -k)
  if w + k <= 0 then
    call('HDEL', WAIT, kid) -- it was not waiting (released, ended)
  elseif w <= 0 and not cancelled(f) then
    want(kid)
  end
end

local ended

-- resolve resolves dependent kid of x's end (ok: completed; else dead
-- with cause) in flow f.
local function resolve(kid, x, ok, cause, f)
  if ok then return dec(kid, 1, f) end
  local k0 = kid
  if byte(kid, 1) == 33 then kid = sub(kid, 2) end
  local pol = call('HGET', base .. 'flowedge:' .. f, kid .. '>' .. x)
  if pol == 'i' then return dec(k0, 1, f) end
  flushRel()
  if pol == 'c' then
    if not cancelled(f) and parked(kid) then want(kid) end
  elseif parked(kid) then
    call('ZREM', KEYS[3], kid)
    call('HSET', base .. 'job:' .. kid, 'state', 'dead', 'error',
      'flow: dependency ' .. x .. ' failed: ' .. cause)
    call('ZADD', KEYS[4], now, kid)
    call('HDEL', WAIT, kid)
    call('PUBLISH', base .. 'done:' .. kid, 'dead')
    ended(1, {kid}, {false}, {'dependency ' .. x .. ' failed'})
  end
end

-- inline is how many dependents this call may still resolve at once (a
-- dependent counted once however many of its dependencies end here),
-- finline how many failures, without queuing a step.
local inline, finline = 1000, 64

local function finish(f)
  -- the record is kept a week after the flow's end
  local fk = base .. 'flow:' .. f
  local failed = tonumber(call('HGET', fk, 'failed')) or 0
  call('HSET', fk, 'state', failed > 0 and 'failed' or 'done')
  for _, k in ipairs({fk, base .. 'flowjobs:' .. f, base .. 'flowapplied:' .. f, base .. 'flowedge:' .. f}) do
    call('PEXPIRE', k, 604800000)
  end
end

-- ended marks the flow jobs among the n ends (eid[i] the job's id,
-- eok[i] true for completed, false for dead with the cause ecause[i]; eok
-- nil: every one completed) ended in their flows' counts and resolves
-- their dependents: at once when they are few (and the call's inline
-- budget allows), else queued as a step. The completed dependencies of
-- one dependent are resolved together (one HINCRBY). Parallel arrays, no
-- table per end: a batch of 1000 completions is the hot path.
ended = function(n, eid, eok, ecause)
  if n == 0 then return end
  local fs = call('HMGET', base .. 'flowjob', unpack(eid, 1, n))
  local mids, nm = {}, 0
  local cdone, cfail, forder, nf = {}, {}, {}, 0 -- per flow: ended, dead
  local decn, decf, dorder, nd = {}, {}, {}, 0   -- per dependent: completed deps, flow
  local fails = {}
  for i = 1, n do
    local v = fs[i]
    if v then
      local id = eid[i]
      local ok = eok == nil or eok[i]
      nm = nm + 1
      mids[nm] = id
      -- 'f' or 'f kids' (find and sub: cheaper than a pattern per job)
      local sp, f, kv = find(v, ' ', 1, true), v, nil
      if sp then
        f, kv = sub(v, 1, sp - 1), sub(v, sp + 1)
        if kv == '' then kv = nil end
      end
      local c = cdone[f]
      if not c then
        nf = nf + 1
        forder[nf] = f
        c, cfail[f] = 0, 0
      end
      cdone[f] = c + 1
      if not ok then cfail[f] = cfail[f] + 1 end
      if kv == '*' then
        call('RPUSH', STEP, 'E\n' .. id .. '\n' .. (ok and '1' or '0') .. '\n' .. f .. '\n' .. (ok and '' or ecause[i] or ''))
      elseif kv and ok and not find(kv, ',', 1, true) then
        -- one dependent (a fan-in's dependency): no table
        local k = decn[kv]
        if k then
          decn[kv] = k + 1
        elseif inline >= 1 then
          inline = inline - 1
          decn[kv], decf[kv] = 1, f
          nd = nd + 1
          dorder[nd] = kv
        else
          call('RPUSH', base .. 'flowkids:' .. id, kv)
          call('RPUSH', STEP, 'E\n' .. id .. '\n1\n' .. f .. '\n')
        end
      elseif kv then
        local kids, nk = {}, 0
        for kid in gmatch(kv, '[^,]+') do
          nk = nk + 1
          kids[nk] = kid
        end
        local fresh = 0
        if ok then
          for _, kid in ipairs(kids) do
            if not decn[kid] then fresh = fresh + 1 end
          end
        end
        if ok and fresh <= inline then
          inline = inline - fresh
          for _, kid in ipairs(kids) do
            local k = decn[kid]
            if k then
              decn[kid] = k + 1
            else
              decn[kid], decf[kid] = 1, f
              nd = nd + 1
              dorder[nd] = kid
            end
          end
        elseif not ok and nk <= finline then
          finline = finline - nk
          fails[#fails + 1] = {id, ecause[i] or '', f, kids}
        else
          bulk('RPUSH', base .. 'flowkids:' .. id, kids)
          call('RPUSH', STEP, 'E\n' .. id .. '\n' .. (ok and '1' or '0') .. '\n' .. f .. '\n' .. (ok and '' or ecause[i] or ''))
        end
      end
    end
  end
  if nm == 0 then return end
  call('HDEL', base .. 'flowjob', unpack(mids, 1, nm))
  for x = 1, nf do
    local f = forder[x]
    local fk = base .. 'flow:' .. f
    local left = call('HINCRBY', fk, 'left', -cdone[f])
    if cfail[f] > 0 then call('HINCRBY', fk, 'failed', cfail[f]) end
    if left <= 0 then finish(f) end
  end
  for x = 1, nd do
    local kid = dorder[x]
    dec(kid, decn[kid], decf[kid])
  end
  for _, y in ipairs(fails) do
    for _, kid in ipairs(y[4]) do
      resolve(kid, y[1], false, y[2], y[3])
    end
  end
end

-- drain runs up to STEPS units of the queued resolutions, then releases
-- what they resolved.
local function drain()
  local b = budget
  while b > 0 do
    local e = call('LINDEX', STEP, 0)
    if not e then break end
    local kind, x, oks, f, cause = string.match(e, '^(%a)\n([^\n]*)\n(%d)\n([^\n]*)\n(.*)$')
    local list = kind == 'R' and base .. 'flowroots:' .. (f or '') or base .. 'flowkids:' .. (x or '')
    local ids = kind and call('LRANGE', list, 0, b - 1) or {}
    b = b - #ids - 1
    if #ids > 0 then call('LTRIM', list, #ids, -1) end
    if #ids == 0 then
    elseif kind == 'R' then
      if not cancelled(f) then
        local w = call('HMGET', WAIT, unpack(ids))
        for i, kid in ipairs(ids) do
          if w[i] == '0' then want(kid) end
        end
      end
    elseif oks == '1' and not cancelled(f) then
      -- completed, the flow not cancelled: a '!' dependent (one
      -- dependency) is released at once, without resolve and dec
      for _, kid in ipairs(ids) do
        if byte(kid, 1) == 33 then
          local k = sub(kid, 2) -- want(k, true), inline
          if not relset[k] then
            relset[k] = 1
            nrel = nrel + 1
            rel[nrel] = k
          end
        else
          dec(kid, 1, f)
        end
      end
    else
      for _, kid in ipairs(ids) do
        resolve(kid, x, oks == '1', cause, f)
      end
    end
    if call('EXISTS', list) == 0 then call('LPOP', STEP) end
  end
  if not hold then flushRel() end
end

-- Across queues. A job of this queue on which a flow of another queue
-- (another slot) depends has links: flowremote:<id> lists
-- "<target queue>\n<dependent id>", and the id is in flowlinked. Its end
-- posts one entry per link on the outbox ("<target>\n<dependent>\n
-- <label>\n<ok>\n<cause>", label = this queue's base .. id) for the relay
-- (emq's RelayFlows) to apply in the target's slot (mode 'e' there) and
-- then remove: no script touches another slot's keys.
local function relayEnd(id, ok, cause)
  local rl = base .. 'flowremote:' .. id
  if call('EXISTS', rl) == 0 then return end
  for _, l in ipairs(call('LRANGE', rl, 0, -1)) do
    call('RPUSH', base .. 'outbox', l .. '\n' .. base .. id .. '\n' .. (ok and '1' or '0') .. '\n' .. (cause or ''))
  end
  call('DEL', rl)
  call('SREM', base .. 'flowlinked', id)
end

-- relayEnds posts the completions of those of ids that are linked.
local function relayEnds(ids)
  if #ids == 0 or call('SCARD', base .. 'flowlinked') == 0 then return end
  local m = call('SMISMEMBER', base .. 'flowlinked', unpack(ids))
  for i, id in ipairs(ids) do
    if m[i] == 1 then relayEnd(id, true) end
  end
end

local function flowEnd(id, ok, cause)
  ended(1, {id}, {ok}, {cause})
  drain()
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
  local r = call('HMGET', row, 'state', 'attempts', 'lane')
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
    laneEnd(id, r[3])
    relayEnd(id, true)
    flowEnd(id, true)
    return call('EXISTS', STEP) == 1 and 3 or 1
  end
  local err = ARGV[6]
  call('HSET', row, 'error', err)
  if tonumber(r[2]) >= max then
    call('HSET', row, 'state', 'dead')
    call('ZADD', KEYS[4], now, id)
    call('PUBLISH', base .. 'done:' .. id, 'dead')
    laneEnd(id, r[3])
    relayEnd(id, false, err)
    flowEnd(id, false, err)
    return call('EXISTS', STEP) == 1 and 4 or 2
  elseif a == 0 then
    call('HSET', row, 'state', 'pending')
    call('ZADD', KEYS[2], 0, id)
  else
    call('HSET', row, 'state', 'delayed')
    call('ZADD', KEYS[3], now + a, id)
  end
  return 1
end

-- completeMany completes the (id, token, result) triples of ARGV from
-- index j0 to #ARGV with retention a, as 'c' does for each, and returns
-- the flags (1 completed, 0 stale); a job given twice completes once.
local function completeMany(j0, a)
  local out, ids, rows, seen = {}, {}, {}, {}
  local no, ni, nr = 0, 0, 0 -- lengths of out, ids, rows
  local jp = base .. 'job:'
  for j = j0, #ARGV, 3 do
    local id = ARGV[j]
    local row = jp .. id
    local r = call('HMGET', row, 'state', 'attempts', 'lane')
    no = no + 1
    if seen[id] or r[1] ~= 'active' or r[2] ~= ARGV[j + 1] then
      out[no] = 0
    else
      seen[id] = true
      if a == 0 then
        nr = nr + 1
        rows[nr] = row
      else
        call('HSET', row, 'state', 'completed')
        call('PEXPIRE', row, a)
        call('SET', base .. 'result:' .. id, ARGV[j + 2], 'PX', a)
        call('PUBLISH', base .. 'done:' .. id, 'completed')
      end
      ni = ni + 1
      ids[ni] = id
      if r[3] then laneEnd(id, r[3]) end
      out[no] = 1
    end
  end
  if ni > 0 then
    bulk('ZREM', KEYS[1], ids)
    for i = 1, nr, 1000 do
      call('DEL', unpack(rows, i, math.min(nr, i + 999)))
    end
    relayEnds(ids)
    ended(ni, ids)
  end
  drain()
  return out
end

if mode == 'C' then
  -- batch complete: retention_ms, then (id, token, result) triples
  local a, e1 = int(ARGV[2], 'retention_ms')
  if not a then return e1 end
  if #ARGV < 5 or (#ARGV - 2) % 3 ~= 0 or (#ARGV - 2) / 3 > 1000 then
    return redis.error_reply('EMQARG flow_complete C: retention, then 1..1000 (id, token, result)')
  end
  local out = completeMany(3, a)
  out[#out + 1] = call('LLEN', STEP)
  return out
end

if mode == 'S' then
  -- settle and claim: retention_ms, lease_ms, n, then (id, token,
  -- result) triples (0..1000): complete them as 'C' does, then claim up
  -- to n pending jobs as claim_batch does
  local a, e1 = int(ARGV[2], 'retention_ms')
  if not a then return e1 end
  local lease, e2 = int(ARGV[3], 'lease_ms')
  if not lease then return e2 end
  local n, e3 = int(ARGV[4], 'n')
  if not n then return e3 end
  if lease < 1 or n > 1000 or (#ARGV - 4) % 3 ~= 0 or (#ARGV - 4) / 3 > 1000 then
    return redis.error_reply('EMQARG flow_complete S: retention, lease (>= 1), n (0..1000), then 0..1000 (id, token, result)')
  end
  hold = n > 0
  if hold then
    -- release about what the claim takes after the pending jobs (at
    -- least 16): a surplus would go through pending in every call
    budget = math.min(STEPS, math.max(n - call('ZCARD', KEYS[2]), 16) + 1)
  end
  local out = completeMany(5, a)
  hold = false
  if n == 0 or call('HGET', base .. 'meta', 'paused') == '1' then
    flushRel()
    out[#out + 1] = call('LLEN', STEP)
    return out
  end
  out[#out + 1] = call('LLEN', STEP)
  local deadline = string.format('%d', now + lease)
  local z, nl, no = {}, 0, #out -- no: out's length (appended below)
  -- take claims job id (gone: skipped): its row active, one attempt more
  take = function(id)
    local row = base .. 'job:' .. id
    local f = call('HMGET', row, 'payload', 'attempts')
    if f[1] or call('EXISTS', row) == 1 then
      local at = (tonumber(f[2]) or 0) + 1
      -- a number goes out as its integer text (attempts stay far below 2^53)
      call('HSET', row, 'attempts', at, 'state', 'active')
      nl = nl + 1
      z[2 * nl - 1] = deadline
      z[2 * nl] = id
      out[no + 1] = id
      out[no + 2] = f[1] or ''
      out[no + 3] = at
      no = no + 3
    end
  end
  while nl < n do
    local last = string.format('%d', n - nl - 1)
    local popped = call('ZRANGE', KEYS[2], 0, last)
    if #popped == 0 then break end
    call('ZREMRANGEBYRANK', KEYS[2], 0, last)
    for _, id in ipairs(popped) do take(id) end
  end
  -- then what this call's completions released, parked -> active
  direct = n - nl
  flushRel()
  direct = 0
  bulk('ZADD', KEYS[1], z)
  return out
end

if mode == 's' then
  drain()
  return call('LLEN', STEP)
end

if mode == 'L' then
  -- link: ARGV id, target queue, dependent id. The job's end will be
  -- posted on the outbox for the dependent; a job already ended is
  -- posted now (gone: counted completed).
  local id, tq, dep = ARGV[2], ARGV[3], ARGV[4]
  if not id or not tq or not dep or tq == '' or dep == '' then
    return redis.error_reply('EMQARG flow_complete L: id, target, dependent expected')
  end
  local r = call('HMGET', base .. 'job:' .. id, 'state', 'error')
  local l = tq .. '\n' .. dep
  if r[1] == 'pending' or r[1] == 'active' or r[1] == 'delayed' then
    call('RPUSH', base .. 'flowremote:' .. id, l)
    call('SADD', base .. 'flowlinked', id)
    return 1
  end
  local ok = r[1] ~= 'dead'
  call('RPUSH', base .. 'outbox', l .. '\n' .. base .. id .. '\n' .. (ok and '1' or '0') .. '\n' .. (ok and '' or (r[2] or '')))
  return ok and 2 or 3
end

if mode == 'l' then
  -- relay repair: up to n linked jobs (of flowlinked) that ended without
  -- this script (a peer's core complete or retry, trimmed) are posted
  local n = tonumber(ARGV[2]) or 100
  local posted = 0
  for _, id in ipairs(call('SRANDMEMBER', base .. 'flowlinked', math.min(math.max(n, 1), 1000))) do
    local r = call('HMGET', base .. 'job:' .. id, 'state', 'error')
    if r[1] == 'completed' or r[1] == 'dead' or not r[1] then
      local gone = not r[1] and call('HGET', base .. 'flowgone', id)
      local ok = r[1] == 'completed' or (not r[1] and not gone)
      relayEnd(id, ok, r[2] or gone or '')
      posted = posted + 1
    end
  end
  return posted
end

if mode == 'e' then
  -- apply a relayed end: ARGV dependent id, label, ok, cause; once per
  -- (label, dependent) (flowapplied:<f>): 1 applied, 0 already applied
  -- or the dependent has ended
  local kid, label, oks, cause = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  if not kid or not label or (oks ~= '0' and oks ~= '1') or not cause then
    return redis.error_reply('EMQARG flow_complete e: dependent, label, ok, cause expected')
  end
  local f = call('HGET', base .. 'flowjob', kid)
  if not f then return 0 end
  f = string.match(f, '^[^ ]*')
  if call('SADD', base .. 'flowapplied:' .. f, label .. '>' .. kid) == 0 then return 0 end
  resolve(kid, label, oks == '1', cause, f)
  drain()
  return 1
end

local f = ARGV[2]
if not f then
  return redis.error_reply('EMQARG flow_complete: arguments missing')
end
local fk = base .. 'flow:' .. f

if mode == 'g' then
  -- seal staged flow f: its roots are released, in steps
  if call('HGET', fk, 'state') ~= 'staging' then
    return redis.error_reply('EMQFLOW not staging')
  end
  call('HSET', fk, 'state', 'running')
  call('RPUSH', STEP, 'R\n\n1\n' .. f .. '\n')
  drain()
  return call('LLEN', STEP)
end

if mode == '-' then
  -- abort staged flow f: delete up to 500 of its jobs; the rest left
  if call('HGET', fk, 'state') ~= 'staging' then
    return redis.error_reply('EMQFLOW not staging')
  end
  local fj = base .. 'flowjobs:' .. f
  local ids = call('LRANGE', fj, -500, -1)
  if #ids > 0 then
    local rows, lists = {}, {}
    for i, id in ipairs(ids) do
      rows[i] = base .. 'job:' .. id
      lists[i] = base .. 'flowkids:' .. id
    end
    call('DEL', unpack(rows))
    call('UNLINK', unpack(lists))
    call('ZREM', KEYS[3], unpack(ids))
    call('HDEL', base .. 'flowjob', unpack(ids))
    call('HDEL', WAIT, unpack(ids))
  end
  call('LTRIM', fj, 0, -501)
  local left = call('LLEN', fj)
  if left == 0 then call('DEL', fk, base .. 'flowroots:' .. f, base .. 'flowedge:' .. f) end
  return left
end

if mode ~= 'a' and mode ~= 'x' then
  return redis.error_reply("EMQARG mode must be 'c', 'r', 'C', 'S', 's', 'a', 'x', 'g', '-', 'L', 'l' or 'e'")
end
local ai = mode == 'x' and 4 or 3
local off, e3 = int(ARGV[ai] or '0', 'offset')
if not off then return e3 end
local cnt, e4 = int(ARGV[ai + 1] or '1000', 'count')
if not cnt then return e4 end
if cnt < 1 or cnt > 1000 then
  return redis.error_reply('EMQARG count must be an integer 1..1000')
end
if mode == 'x' and not ARGV[3] then
  return redis.error_reply('EMQARG flow_complete: arguments missing')
end
if call('EXISTS', fk) == 0 then
  return {}
end
local jobs = call('LRANGE', base .. 'flowjobs:' .. f, off, off + cnt - 1)
local live = #jobs > 0 and call('HMGET', base .. 'flowjob', unpack(jobs)) or {}
-- Repair: ends this script did not see. A row that is gone counts as
-- completed (a peer's complete without retention) unless trim_dead left
-- a tombstone (flowgone: id -> its error) when it removed it dead.
local eid, eok, ecause, ne = {}, {}, {}, 0
local function repaired(id, ok, cause)
  ne = ne + 1
  eid[ne], eok[ne], ecause[ne] = id, ok, cause or ''
end
for i, id in ipairs(jobs) do
  if live[i] then
    local r = call('HMGET', base .. 'job:' .. id, 'state', 'error')
    if not r[1] then
      local gone = call('HGET', base .. 'flowgone', id)
      if gone then
        call('HDEL', base .. 'flowgone', id)
        repaired(id, false, gone)
      else
        repaired(id, true)
      end
    elseif r[1] == 'completed' then
      repaired(id, true)
    elseif r[1] == 'dead' then
      repaired(id, false, r[2])
    end
  end
end
ended(ne, eid, eok, ecause)
drain()
local ncancelled = 0
if mode == 'x' then
  call('HSET', fk, 'cancelled', 1)
  canc[f] = true
  local left0 = tonumber(call('HGET', fk, 'left'))
  local sets = {pending = KEYS[2], delayed = KEYS[3]}
  for _, id in ipairs(jobs) do
    if call('HEXISTS', base .. 'flowjob', id) == 1 then
      local row = base .. 'job:' .. id
      local s = call('HGET', row, 'state')
      if sets[s or ''] and call('ZREM', sets[s], id) == 1 then
        call('HSET', row, 'state', 'dead', 'error', ARGV[3])
        call('ZADD', KEYS[4], now, id)
        call('HDEL', WAIT, id)
        call('PUBLISH', base .. 'done:' .. id, 'dead')
        ended(1, {id}, {false}, {ARGV[3]})
      end
    end
  end
  drain()
  -- with the dependents the cancelled jobs failed on their way
  ncancelled = left0 - tonumber(call('HGET', fk, 'left'))
end
local h = call('HMGET', fk, 'state', 'total', 'left', 'failed')
local out = {h[1], tonumber(h[2]), tonumber(h[3]), tonumber(h[4]), ncancelled}
for _, id in ipairs(jobs) do
  out[#out + 1] = id
  out[#out + 1] = call('HGET', base .. 'job:' .. id, 'state') or ''
end
return out
