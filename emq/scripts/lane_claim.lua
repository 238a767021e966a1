-- lane_claim (extension, lanes): complete the given lane or plain jobs,
-- advancing their lanes, then lease up to n jobs, taking turns between the
-- plain pending jobs and the lanes, and between the lanes round-robin (a
-- lane of weight w is served w times per turn), each lane at most its cap
-- at once, in its enqueue order. The fairness is decided here, across
-- every consumer of the queue.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  active    emq:{q}:active
-- KEYS[3]  delayed   emq:{q}:delayed
-- KEYS[4]  base      emq:{q}:   declared root of meta, job:<id> and the
--                    lane keys (lane:<k>, lanestate, lanering, laneocc,
--                    laneoccq, laneend, lanecfg, lanehalt, lanecredit,
--                    laneturn, laneadmit)
-- ARGV[1]  lease_ms  integer >= 1
-- ARGV[2]  n         integer 0..1000: most jobs claimed
-- ARGV[3]  reap      integer 0..1000: running lane jobs re-checked first,
--                    in claim order (the lane-aware reap: an occupant that
--                    a peer's core script, a reap or a delete ended frees
--                    its lane), after the ends flow_complete marked
-- ARGV[4]  retention_ms  integer >= 0, for the completions (0 deletes the
--                    row, as complete_batch does; else state completed,
--                    PEXPIRE)
-- ARGV[5], ARGV[6], ...  id1, token1, ...: at most 1000 jobs completed
--                    first (nothing published, as complete_batch)
-- Layout (LANES-FLOWS.md): lanestate[k] packs the lane's state in one
-- integer v = R + 2*H + 4*occ + 8192*(cap-1) + 8388608*(w-1) (R: in the
-- ring, H: halted, occ: occupants; absent = 0: idle, cap 1, weight 1); R
-- set means k is once in lanering (a lane drained by the claim that
-- reaches it is dropped then).
-- laneocc is the set of occupant ids; laneoccq lists them as '<id>\n<k>'
-- in claim order (the reap's cursor; entries no longer occupants are
-- dropped there); laneend lists '<id>\n<k>' of lane jobs whose end
-- flow_complete saw; a lane job's row has field lane = k. Waiting jobs are parked in delayed at 2^53-2 (never
-- due), state delayed, attempts 0. An occupant stays while its row is active, pending or
-- delayed (a retry keeps its place); one whose row is completed, dead or
-- gone is dropped, a dead one halting the lane when lanecfg 'halt:<k>'
-- (else 'halt') is '1', unless its error is 'cancelled'. Work per call: at
-- most 4n+32 visits, the completions, 1000 marked ends, reap occupants
-- and n+reap+100 laneoccq entries.
-- Replies:
--   {reaped, c, flag1, ..., flagc, id1, payload1, attempts1, ...}
--     reaped: occupants the reap dropped; c completions, flag 1
--     completed, 0 stale; then the claimed jobs (attempts is the fencing
--     token); none when paused (meta paused = 1) or nothing is claimable
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
local keep, e4 = int(ARGV[4] or '0', 'retention_ms', 0, 9007199254740991)
if not keep then return e4 end
if #ARGV > 4 and (#ARGV % 2 ~= 0 or #ARGV > 2004) then
  return redis.error_reply('EMQARG lane_claim: 0..1000 (id, token) pairs after retention_ms')
end
local call, base = redis.call, KEYS[4]
local floor, find, sub = math.floor, string.find, string.sub
local ring, lstate, occk = base .. 'lanering', base .. 'lanestate', base .. 'laneocc'
local occq = base .. 'laneoccq'
local jp = base .. 'job:'
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- The lanes' states, read once (HMGET per batch of lanes) and written
-- back at the end.
local st, dirty = {}, {}
local function load(ks)
  local need = {}
  for _, k in ipairs(ks) do
    if not st[k] then
      need[#need + 1] = k
      st[k] = true
    end
  end
  for i = 1, #need, 1000 do
    local vs = call('HMGET', lstate, unpack(need, i, math.min(i + 999, #need)))
    for j, x in ipairs(vs) do
      local k, v = need[i + j - 1], tonumber(x) or 0
      st[k] = {r = v % 2, h = floor(v / 2) % 2, occ = floor(v / 4) % 2048,
        cap = floor(v / 8192) % 1024 + 1, w = floor(v / 8388608) + 1}
      dirty[#dirty + 1] = k
    end
  end
end

-- rel frees the place of lane k's occupant id (no longer in laneocc);
-- dead with err: its row ended dead. A freed lane with room rejoins the
-- ring (toRing) without reading its length: one left with no waiting job
-- is dropped from the ring by the serve that reaches it (its LPOP, which
-- a busy lane pays anyway), so R may be set on an empty lane meanwhile.
local toRing = {}
local function rel(id, k, dead, err)
  local s = st[k]
  if s.occ > 0 then s.occ = s.occ - 1 end
  local cfg = base .. 'lanecfg'
  if dead and err ~= 'cancelled' and (call('HGET', cfg, 'halt:' .. k) or call('HGET', cfg, 'halt')) == '1' then
    s.h = 1
    call('HSET', base .. 'lanehalt', k, id)
    if s.r == 1 then
      call('LREM', ring, 0, k)
      s.r = 0
    end
  elseif s.r == 0 and s.h == 0 and s.occ < s.cap then
    s.r = 1
    toRing[#toRing + 1] = k
  end
end
local function flushRing()
  for i = 1, #toRing, 1000 do
    call('RPUSH', ring, unpack(toRing, i, math.min(i + 999, #toRing)))
  end
  toRing = {}
end

-- isocc flags which of ids are occupants (members of laneocc).
local function isocc(ids)
  if #ids == 0 then return {} end
  return call('SMISMEMBER', occk, unpack(ids))
end

local out = {0, 0}
-- The completions, as complete_batch does them.
local done, cids, crows, lj, lk = {}, {}, {}, {}, {}
local nc = 0
for i = 5, #ARGV, 2 do
  local id = ARGV[i]
  local row = jp .. id
  local r = call('HMGET', row, 'state', 'attempts', 'lane')
  nc = nc + 1
  if r[1] ~= 'active' or r[2] ~= ARGV[i + 1] or done[id] then
    out[2 + nc] = 0
  else
    done[id] = true
    cids[#cids + 1] = id
    if keep == 0 then
      crows[#crows + 1] = row
    else
      call('HSET', row, 'state', 'completed')
      call('PEXPIRE', row, keep)
    end
    if r[3] then
      lj[#lj + 1] = id
      lk[#lk + 1] = r[3]
    end
    out[2 + nc] = 1
  end
end
out[2] = nc
if #cids > 0 then
  call('ZREM', KEYS[2], unpack(cids))
  if #crows > 0 then call('DEL', unpack(crows)) end
  local f = isocc(lj)
  local gone, gk = {}, {}
  for i, id in ipairs(lj) do
    if f[i] == 1 then
      gone[#gone + 1] = id
      gk[#gk + 1] = lk[i]
    end
  end
  if #gone > 0 then
    call('SREM', occk, unpack(gone))
    load(gk)
    for i, id in ipairs(gone) do rel(id, gk[i]) end
  end
end

-- check frees the occupants ids (of lanes ks) whose rows ended
-- (completed, dead or gone) and returns the live ones' laneoccq entries.
local function check(ids, ks)
  local live = {}
  local ended, ek, er = {}, {}, {}
  for i, id in ipairs(ids) do
    local r = call('HMGET', jp .. id, 'state', 'error')
    if r[1] == 'active' or r[1] == 'pending' or r[1] == 'delayed' then
      live[#live + 1] = id .. '\n' .. ks[i]
    else
      ended[#ended + 1] = id
      ek[#ek + 1] = ks[i]
      er[#er + 1] = r
    end
  end
  if #ended > 0 then
    call('SREM', occk, unpack(ended))
    load(ek)
    for i, id in ipairs(ended) do
      rel(id, ek[i], er[i][1] == 'dead', er[i][2])
      out[1] = out[1] + 1
    end
  end
  return live
end

-- parse splits entries '<id>\n<k>' and flags the occupants among them.
local function parse(ents)
  local ids, ks = {}, {}
  for i, e in ipairs(ents) do
    local at = find(e, '\n', 1, true)
    if at then
      ids[i], ks[i] = sub(e, 1, at - 1), sub(e, at + 1)
    else
      ids[i], ks[i] = '', ''
    end
  end
  return ids, ks, isocc(ids)
end

-- The ends flow_complete posted (laneend), then the lane-aware reap: the
-- head of laneoccq (occupants in claim order) is scanned, entries no
-- longer occupants dropped, the first `reap` occupants checked (a live
-- one goes behind this call's claims), stopping at the next occupant.
local marked = call('LPOP', base .. 'laneend', 1000)
if marked then
  local ids, ks, f = parse(marked)
  local ci, ck2 = {}, {}
  for i, id in ipairs(ids) do
    if f[i] == 1 then
      ci[#ci + 1] = id
      ck2[#ck2 + 1] = ks[i]
    end
  end
  check(ci, ck2)
end
local rotated = {}
if n > 0 or reap > 0 then
  local budget = math.min(n + reap + 100, 1000)
  local size = math.min(reap + 16, budget)
  local used, checked, take, stop = 0, {}, {}, false
  while not stop and used < budget do
    local page = call('LRANGE', occq, used, used + math.min(size, budget - used) - 1)
    if #page == 0 then break end
    local ids, ks, f = parse(page)
    for i, id in ipairs(ids) do
      if f[i] == 1 then
        if #checked >= reap then
          stop = true
          break
        end
        checked[#checked + 1] = id
        take[#take + 1] = ks[i]
      end
      used = used + 1
    end
    if #page < size then break end
  end
  if used > 0 then call('LTRIM', occq, used, -1) end
  -- the live ones go behind this call's claims (pushed at the end)
  rotated = check(checked, take)
end

-- Jobs a flow released into their lanes (flow_complete), in that order.
local admit = call('LPOP', base .. 'laneadmit', 1000)
if admit then
  for _, id in ipairs(admit) do
    local r = call('HMGET', jp .. id, 'state', 'lane')
    if r[1] == 'delayed' and r[2] then
      call('RPUSH', base .. 'lane:' .. r[2], id)
      load({r[2]})
      local s = st[r[2]]
      if s.r == 0 and s.h == 0 and s.occ < s.cap then
        s.r = 1
        toRing[#toRing + 1] = r[2]
      end
    end
  end
end
flushRing()

local leased, nl = {}, 0   -- ids to lease in active
local parked, np = {}, 0   -- lane ids out of delayed
local occ, no = {}, 0      -- laneocc SADD arguments
local oq = {}              -- laneoccq RPUSH arguments

local function writeBack()
  local set, del = {}, {}
  for _, k in ipairs(dirty) do
    local s = st[k]
    local v = s.r + 2 * s.h + 4 * s.occ + 8192 * (s.cap - 1) + 8388608 * (s.w - 1)
    if v == 0 then
      del[#del + 1] = k
    else
      set[#set + 1] = k
      set[#set + 1] = string.format('%d', v)
    end
  end
  for i = 1, #set, 1000 do call('HSET', lstate, unpack(set, i, math.min(i + 999, #set))) end
  for i = 1, #del, 1000 do call('HDEL', lstate, unpack(del, i, math.min(i + 999, #del))) end
end

if n == 0 or call('HGET', base .. 'meta', 'paused') == '1' then
  if #rotated > 0 then call('RPUSH', occq, unpack(rotated)) end
  writeBack()
  return out
end

local visits, maxv = 0, 4 * n + 32
local got = 0

local function lease_it(id, f)
  local a = (tonumber(f[2]) or 0) + 1
  call('HSET', jp .. id, 'attempts', string.format('%d', a), 'state', 'active')
  nl = nl + 1
  leased[nl] = id
  out[#out + 1] = id
  out[#out + 1] = f[1] or ''
  out[#out + 1] = a
  got = got + 1
end

local function plain(limit)
  local want = got + limit
  while got < want and visits < maxv do
    local last = want - got - 1
    local popped = call('ZRANGE', KEYS[1], 0, last)
    if #popped == 0 then return end
    call('ZREMRANGEBYRANK', KEYS[1], 0, #popped - 1)
    for _, id in ipairs(popped) do
      visits = visits + 1
      local f = call('HMGET', jp .. id, 'payload', 'attempts')
      if f[1] or call('EXISTS', jp .. id) == 1 then lease_it(id, f) end
    end
  end
end

-- The weight credit the ring's head lane carried over from the last call.
local credit = call('GET', base .. 'lanecredit')
local ck, cu
if credit then
  local u, k = string.match(credit, '^(%d+) (.*)$')
  ck, cu = k, tonumber(u)
end
local ringEmpty = false

-- serve gives lane k its turn: up to min(room, weight) jobs, then the lane
-- is rotated to the ring's tail, left out of it (full, drained), or put
-- back at its head with its credit (the call's n ran out).
local function serve(k, want)
  local s = st[k]
  s.r = 0
  if s.h == 1 then return end
  local used = 0
  if k == ck then
    used, ck = cu, nil
  end
  local empty = false
  while s.occ < s.cap and used < s.w and got < want and not empty and visits < maxv do
    local m = math.min(s.cap - s.occ, s.w - used, want - got)
    local ids = call('LPOP', base .. 'lane:' .. k, m)
    if not ids or #ids < m then empty = true end
    for _, id in ipairs(ids or {}) do
      visits = visits + 1
      local f = call('HMGET', jp .. id, 'payload', 'attempts', 'state')
      -- still waiting (not deleted, cancelled or moved by a peer)
      if f[3] == 'delayed' and f[2] == '0' then
        lease_it(id, f)
        np = np + 1
        parked[np] = id
        no = no + 1
        occ[no] = id
        oq[#oq + 1] = id .. '\n' .. k
        s.occ = s.occ + 1
        used = used + 1
      end
    end
  end
  if empty or s.occ >= s.cap then
    return
  end
  s.r = 1
  if used >= s.w then
    call('RPUSH', ring, k)
  else
    call('LPUSH', ring, k)
    if used > 0 then ck, cu = k, used end
  end
end

local function lanes(limit)
  local want = got + limit
  while got < want and visits < maxv and not ringEmpty do
    local ks = call('LPOP', ring, want - got)
    if not ks then
      ringEmpty = true
      return
    end
    load(ks)
    for i, k in ipairs(ks) do
      if got >= want or visits >= maxv then
        -- not served: back at the head, in their order
        for j = #ks, i, -1 do call('LPUSH', ring, ks[j]) end
        return
      end
      visits = visits + 1
      serve(k, want)
    end
  end
end

-- Plain and lanes take turns (laneturn counts the calls): half the call's
-- n each, the other side taking what one leaves.
local turn = call('INCR', base .. 'laneturn')
local half = math.floor(n / 2)
if turn % 2 == 1 then half = n - half end
lanes(half)
plain(n - got)
if got < n then lanes(n - got) end

for i = 1, nl, 1000 do
  local z = {}
  for j = i, math.min(i + 999, nl) do
    z[#z + 1] = now + lease
    z[#z + 1] = leased[j]
  end
  call('ZADD', KEYS[2], unpack(z))
end
for i = 1, np, 1000 do
  call('ZREM', KEYS[3], unpack(parked, i, math.min(i + 999, np)))
end
for i = 1, no, 1000 do
  call('SADD', occk, unpack(occ, i, math.min(i + 999, no)))
end
for _, id in ipairs(rotated) do oq[#oq + 1] = id end
for i = 1, #oq, 1000 do
  call('RPUSH', occq, unpack(oq, i, math.min(i + 999, #oq)))
end
if ck then
  call('SET', base .. 'lanecredit', cu .. ' ' .. ck)
elseif credit then
  call('DEL', base .. 'lanecredit')
end
writeBack()
return out
