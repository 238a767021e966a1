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
--                    lane keys (lane:<k>, lanestate, lanering, laneheld,
--                    laneheldq, laneend, lanecfg, lanehalt, lanecredit,
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
-- Layout 4 (jobs/PROTOCOL-L4.md): lanestate[k] packs the lane's state in
-- one integer v = R + 2*H + 4*occ + 8192*(cap-1) + 8388608*(w-1) +
-- 2^33*n (R: in the ring, H: halted, occ: occupants, n: waiting jobs,
-- saturating at 2^20-1; absent = 0: idle, empty, cap 1, weight 1); a
-- freed lane rejoins the ring only when n > 0, and the serve that pops
-- its last job leaves it out (no LPOP to find it empty);
-- R set means k is once in lanering (a lane drained by the claim that
-- reaches it is dropped then), as the entry k or (layout 4) '{k{id':
-- lane k holding its head job id outside lane:<k> and n (lane_enqueue
-- makes one for an idle, empty lane; it is claimed without an LPOP). laneheld maps each occupant id to its lane
-- k; laneheldq lists the occupant ids in claim order (the reap's cursor;
-- ids no longer in laneheld are dropped there); laneend lists '<id>\n<k>'
-- of lane jobs whose end flow_complete saw; a lane job's row has field
-- lane = k. Waiting jobs are parked in delayed at 2^53-2 (never due),
-- state delayed, attempts 0. An occupant stays while its row is active,
-- pending or delayed (a retry keeps its place); one whose row is
-- completed, dead or gone is dropped, a dead one halting the lane when
-- lanecfg 'halt:<k>' (else 'halt') is '1', unless its error is
-- 'cancelled'. Work per call: at most 4n+32 visits, the completions, 1000
-- marked ends, reap occupants and n+reap+100 laneheldq entries.
-- Cost: per claimed lane job one LPOP of its lane, one HMGET and one HSET
-- of its row; per completion one HMGET of its row; the rest goes a batch
-- to a call. A lane's state is kept as its packed number (no table per
-- lane), counters rather than #t, no string building per job.
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
local nargv = #ARGV
if nargv > 4 and (nargv % 2 ~= 0 or nargv > 2004) then
  return redis.error_reply('EMQARG lane_claim: 0..1000 (id, token) pairs after retention_ms')
end
local call, base = redis.call, KEYS[4]
-- A queue still holding layout 2's occupant keys is refused, nothing
-- written: layout 3 would strand the lane jobs running or waiting there.
if call('EXISTS', base .. 'laneocc', base .. 'laneoccq') > 0 then
  return redis.error_reply('EMQLAYOUT lanes layout 2 keys (laneocc, laneoccq) in this queue: drain its lanes, then delete them (jobs/PROTOCOL-L4.md)')
end
local floor, min, unpack = math.floor, math.min, unpack
local byte, find, sub = string.byte, string.find, string.sub
local ring, lstate = base .. 'lanering', base .. 'lanestate'
local held, heldq = base .. 'laneheld', base .. 'laneheldq'
local cfgk = base .. 'lanecfg'
local jp = base .. 'job:'

-- The lanes' states, read once (HMGET per batch of lanes) and written
-- back at the end when changed: st[k] is the packed number; dirty[i] the
-- i-th lane read, was[i] the number read there (-1: absent). The fields
-- are taken apart with % and / only (no math.floor call): for an integer
-- v, (v - v % d) / d is floor(v / d).
local st, dirty, was, nd = {}, {}, {}, 0
local function load(ks, m)
  local need, nn = {}, 0
  for i = 1, m do
    local k = ks[i]
    if not st[k] then
      nn = nn + 1
      need[nn] = k
      st[k] = 0
    end
  end
  for i = 1, nn, 1000 do
    local j = min(i + 999, nn)
    local vs = call('HMGET', lstate, unpack(need, i, j))
    for x = i, j do
      local k, v = need[x], tonumber(vs[x - i + 1])
      nd = nd + 1
      dirty[nd] = k
      if v then
        st[k], was[nd] = v, v
      else
        was[nd] = -1
      end
    end
  end
end
local CNT, MAXC = 8589934592, 1048575 -- 2^33: the waiting count's unit
-- (the fields are taken apart in line, not by functions: a closure per
-- call and a Lua call per lane; occ = (v - v % 4) / 4 % 2048, cap =
-- (v - v % 8192) / 8192 % 1024 + 1, n = (v - v % CNT) / CNT)

-- rel frees the place of lane k's occupant id (no longer in laneheld);
-- dead with err: its row ended dead. A freed lane with room and waiting
-- jobs (n > 0) rejoins the ring (toRing) without reading its length.
local toRing, nring = {}, 0
local function rel(id, k, dead, err)
  local v = st[k]
  local occ = ((v - v % 4) / 4 % 2048)
  if occ > 0 then
    v, occ = v - 4, occ - 1
  end
  local r = v % 2
  local h = (v - r) / 2 % 2
  if dead and err ~= 'cancelled' and (call('HGET', cfgk, 'halt:' .. k) or call('HGET', cfgk, 'halt')) == '1' then
    if h == 0 then v = v + 2 end
    call('HSET', base .. 'lanehalt', k, id)
    if r == 1 then
      call('LREM', ring, 0, k)
      v = v - 1
    end
  elseif r == 0 and h == 0 and occ < ((v - v % 8192) / 8192 % 1024 + 1) and v >= CNT then
    v = v + 1
    nring = nring + 1
    toRing[nring] = k
  end
  st[k] = v
end
local function flushRing()
  for i = 1, nring, 1000 do
    call('RPUSH', ring, unpack(toRing, i, min(i + 999, nring)))
  end
  toRing, nring = {}, 0
end

-- drop frees the places of the occupants ids[1..m] of lanes ks (rows[i]:
-- their {state, error}, or nil for completions).
local function drop(ids, ks, m, rows)
  call('HDEL', held, unpack(ids, 1, m))
  load(ks, m)
  for i = 1, m do
    local r = rows and rows[i]
    rel(ids[i], ks[i], r and r[1] == 'dead', r and r[2])
  end
end

-- heldOf keeps those of ids[1..m] that are occupants (in laneheld), with
-- their lanes: ids, lanes, count.
local function heldOf(ids, m)
  local ks = call('HMGET', held, unpack(ids, 1, m))
  local hi, hk, c = {}, {}, 0
  for i = 1, m do
    if ks[i] then
      c = c + 1
      hi[c], hk[c] = ids[i], ks[i]
    end
  end
  return hi, hk, c
end

local out, no = {0, 0}, 2
-- The completions, as complete_batch does them.
local done, cids, nc, crows, nr, lj, nl = {}, {}, 0, {}, 0, {}, 0
for i = 5, nargv, 2 do
  local id = ARGV[i]
  local row = jp .. id
  local r = call('HMGET', row, 'state', 'attempts', 'lane')
  no = no + 1
  if r[1] ~= 'active' or r[2] ~= ARGV[i + 1] or done[id] then
    out[no] = 0
  else
    done[id] = true
    nc = nc + 1
    cids[nc] = id
    if keep == 0 then
      nr = nr + 1
      crows[nr] = row
    else
      call('HSET', row, 'state', 'completed')
      call('PEXPIRE', row, keep)
    end
    if r[3] then
      nl = nl + 1
      lj[nl] = id
    end
    out[no] = 1
  end
end
out[2] = no - 2
if nc > 0 then
  call('ZREM', KEYS[2], unpack(cids, 1, nc))
  if nr > 0 then call('DEL', unpack(crows, 1, nr)) end
  if nl > 0 then
    -- the occupants among them (a lane job requeued from dead holds no
    -- place), with their lanes
    local gone, gk, ng = heldOf(lj, nl)
    if ng > 0 then drop(gone, gk, ng) end
  end
end

-- check frees the occupants ids[1..m] (of lanes ks) whose rows ended
-- (completed, dead or gone) and returns the live ones and their count.
local function check(ids, ks, m)
  local live, nlive = {}, 0
  local ended, ek, er, ne = {}, {}, {}, 0
  for i = 1, m do
    local id = ids[i]
    local r = call('HMGET', jp .. id, 'state', 'error')
    local s = r[1]
    if s == 'active' or s == 'pending' or s == 'delayed' then
      nlive = nlive + 1
      live[nlive] = id
    else
      ne = ne + 1
      ended[ne], ek[ne], er[ne] = id, ks[i], r
    end
  end
  if ne > 0 then
    drop(ended, ek, ne, er)
    out[1] = out[1] + ne
  end
  return live, nlive
end

-- The ends flow_complete posted (laneend, '<id>\n<k>'), then the
-- lane-aware reap: the head of laneheldq (occupants in claim order) is
-- scanned, ids no longer in laneheld dropped, the first `reap` occupants
-- checked (a live one goes behind this call's claims), stopping at the
-- next occupant.
local marked = call('LPOP', base .. 'laneend', 1000)
local nmarked = 0
if marked then
  nmarked = #marked
  local ids, m = {}, 0
  for i = 1, #marked do
    local e = marked[i]
    local at = string.find(e, '\n', 1, true)
    if at then
      m = m + 1
      ids[m] = string.sub(e, 1, at - 1)
    end
  end
  if m > 0 then check(heldOf(ids, m)) end
end
local rotated, nrot = {}, 0
if n > 0 or reap > 0 then
  local budget = min(n + reap + 100, 1000)
  -- pages of reap+16 ids, and the first also as long as the lane ends
  -- this call applied (their ids, dropped from laneheld, are most often
  -- at the head: one page reads them, where a page of reap+16 and then
  -- one four times longer read ~90 ids for a round of 20), four times
  -- longer after each full one: a head of live occupants costs one
  -- short page, a longer run of ended ids one or two long ones
  local size = reap + 16 + nl + nmarked
  local used, checked, take, nck, stop = 0, {}, {}, 0, false
  while not stop and used < budget do
    local ask = min(size, budget - used)
    local page = call('LRANGE', heldq, used, used + ask - 1)
    local np = #page
    if np == 0 then break end
    local ks = call('HMGET', held, unpack(page))
    for i = 1, np do
      if ks[i] then
        if nck >= reap then
          stop = true
          break
        end
        nck = nck + 1
        checked[nck], take[nck] = page[i], ks[i]
      end
      used = used + 1
    end
    if np < ask then break end
    size = size * 4
  end
  if used > 0 then call('LTRIM', heldq, used, -1) end
  -- the live ones go behind this call's claims (pushed at the end)
  rotated, nrot = check(checked, take, nck)
end

-- Jobs a flow released into their lanes (flow_complete), in that order.
local admit = call('LPOP', base .. 'laneadmit', 1000)
if admit then
  local ids, ks, m = {}, {}, 0
  for _, id in ipairs(admit) do
    local r = call('HMGET', jp .. id, 'state', 'lane')
    if r[1] == 'delayed' and r[2] then
      m = m + 1
      ids[m], ks[m] = id, r[2]
    end
  end
  load(ks, m)
  for i = 1, m do
    local k = ks[i]
    call('RPUSH', base .. 'lane:' .. k, ids[i])
    local v = st[k]
    if ((v - v % CNT) / CNT) < MAXC then v = v + CNT end
    st[k] = v
    if v % 4 == 0 and ((v - v % 4) / 4 % 2048) < ((v - v % 8192) / 8192 % 1024 + 1) then
      st[k] = v + 1
      nring = nring + 1
      toRing[nring] = k
    end
  end
end
flushRing()

local function writeBack()
  local set, ns, del, ndel = {}, 0, {}, 0
  for i = 1, nd do
    local k = dirty[i]
    local v, w = st[k], was[i]
    if v == 0 then
      if w > 0 then
        ndel = ndel + 1
        del[ndel] = k
      end
    elseif v ~= w then
      -- v as a number: the server writes an integer below 2^53 as its
      -- digits (Valkey's ll2string, Redis 7.0's %.17g), so no
      -- string.format per lane
      set[ns + 1], set[ns + 2] = k, v
      ns = ns + 2
    end
  end
  for i = 1, ns, 1000 do call('HSET', lstate, unpack(set, i, min(i + 999, ns))) end
  for i = 1, ndel, 1000 do call('HDEL', lstate, unpack(del, i, min(i + 999, ndel))) end
end

if n == 0 or call('HGET', base .. 'meta', 'paused') == '1' then
  if nrot > 0 then call('RPUSH', heldq, unpack(rotated, 1, nrot)) end
  writeBack()
  return out
end

local visits, maxv = 0, 4 * n + 32
local got = 0
local leased, nls = {}, 0  -- ids to lease in active
local parked, np = {}, 0   -- lane ids out of delayed
local hold, nh = {}, 0     -- laneheld HSET arguments (id, k)
local order, nq = {}, 0    -- laneheldq RPUSH arguments
-- attempts after a claim: a lane job's is always '0' before it (no
-- table per call to map the text)
local function lease_it(id, row, payload, attempts)
  local a, at = 1, '1'
  if attempts ~= '0' then
    a = (tonumber(attempts) or 0) + 1
    at = string.format('%d', a)
  end
  call('HSET', row, 'attempts', at, 'state', 'active')
  nls = nls + 1
  leased[nls] = id
  out[no + 1], out[no + 2], out[no + 3] = id, payload or '', a
  no = no + 3
  got = got + 1
end

local function plain(limit)
  local want = got + limit
  while got < want and visits < maxv do
    local last = want - got - 1
    local popped = call('ZRANGE', KEYS[1], 0, last)
    local m = #popped
    if m == 0 then return end
    call('ZREMRANGEBYRANK', KEYS[1], 0, m - 1)
    for i = 1, m do
      local id = popped[i]
      local row = jp .. id
      visits = visits + 1
      local f = call('HMGET', row, 'payload', 'attempts')
      if f[1] or call('EXISTS', row) == 1 then lease_it(id, row, f[1], f[2]) end
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
-- take leases lane k's job id when it is still waiting (not deleted,
-- cancelled or moved by a peer), and books it as held by k; it tells
-- whether it did.
local function take(id, k)
  local row = jp .. id
  local f = call('HMGET', row, 'payload', 'attempts', 'state')
  if f[3] ~= 'delayed' or f[2] ~= '0' then return false end
  lease_it(id, row, f[1], '0')
  np = np + 1
  parked[np] = id
  hold[nh + 1], hold[nh + 2] = id, k
  nh = nh + 2
  nq = nq + 1
  order[nq] = id
  return true
end

local function serve(k, want, first)
  local v = st[k]
  if v % 2 == 1 then v = v - 1 end
  local lk = base .. 'lane:' .. k
  if v % 4 == 2 then
    -- halted: a job held by its ring entry goes back to the lane's head
    -- (lane_enqueue makes such an entry only for an idle lane, so this
    -- is a repair, not a path)
    if first then
      call('LPUSH', lk, first)
      if ((v - v % CNT) / CNT) < MAXC then v = v + CNT end
    end
    st[k] = v
    return
  end
  local occ, cap, w = ((v - v % 4) / 4 % 2048), ((v - v % 8192) / 8192 % 1024 + 1), (v % CNT - v % 8388608) / 8388608 + 1
  local cnt = ((v - v % CNT) / CNT)
  local used = 0
  if k == ck then
    used, ck = cu, nil
  end
  local empty = false
  if first then
    -- the lane's head job, held by its ring entry (layout 4: not in
    -- lane:<k>, not counted in n): claimed without popping the list
    visits = visits + 1
    if take(first, k) then
      occ, v, used = occ + 1, v + 4, used + 1
    end
    if cnt == 0 then empty = true end
  end
  while occ < cap and used < w and got < want and not empty and visits < maxv do
    local m = min(cap - occ, w - used, want - got)
    local ids
    if m == 1 then
      -- one job (a cap-1 lane): a bulk reply, no table
      ids = call('LPOP', lk)
      if ids then ids = {ids} end
    else
      ids = call('LPOP', lk, m)
    end
    if not ids then
      -- a pop that finds the list empty is a short one: n is 0 (a
      -- saturated count would otherwise stay, and each freeing of the
      -- lane put it back in the ring to be found empty again)
      empty = true
      v, cnt = v - cnt * CNT, 0
      break
    end
    local c = #ids
    -- the waiting count follows the pops; a short pop finds the lane
    -- empty, a count that reaches 0 says so (no LPOP to learn it); a
    -- saturated count (MAXC) stays until a short pop
    if c < m then
      empty = true
      v, cnt = v - cnt * CNT, 0
    elseif cnt < MAXC then
      local d = min(c, cnt)
      v, cnt = v - d * CNT, cnt - d
      if cnt == 0 then empty = true end
    end
    for i = 1, c do
      visits = visits + 1
      if take(ids[i], k) then
        occ, v, used = occ + 1, v + 4, used + 1
      end
    end
  end
  if empty or occ >= cap then
    st[k] = v
    return
  end
  st[k] = v + 1
  if used >= w then
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
    local m = #ks
    -- an entry '{k{id' (layout 4) is lane k holding its head job id
    local lk, lid = {}, {}
    for i = 1, m do
      local e = ks[i]
      if byte(e, 1) == 123 then
        local at = find(e, '{', 2, true)
        lk[i], lid[i] = sub(e, 2, at - 1), sub(e, at + 1)
      else
        lk[i], lid[i] = e, false
      end
    end
    load(lk, m)
    for i = 1, m do
      if got >= want or visits >= maxv then
        -- not served: back at the head, in their order, as they were
        local back, nb = {}, 0
        for j = m, i, -1 do
          nb = nb + 1
          back[nb] = ks[j]
        end
        call('LPUSH', ring, unpack(back, 1, nb))
        return
      end
      visits = visits + 1
      serve(lk[i], want, lid[i])
    end
  end
end

-- Plain and lanes take turns (laneturn counts the calls of an odd n): half the call's
-- n each, the other side taking what one leaves.
local half = floor(n / 2)
-- (an even n splits evenly whatever the turn: no INCR)
if n % 2 == 1 and call('INCR', base .. 'laneturn') % 2 == 1 then half = n - half end
lanes(half)
plain(n - got)
if got < n then lanes(n - got) end

if nls > 0 then
  -- the clock is read only for a call that leases
  local t = call('TIME')
  local now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  local deadline = string.format('%d', now + lease)
  -- active is kept a skiplist, as lane_enqueue keeps delayed (a listpack
  -- zset scans its members on every insert): a member too long for a
  -- listpack, added with the leases and removed in the same step
  local SKIP = '#skiplist' .. string.rep('-', 91)
  local conv = call('OBJECT', 'ENCODING', KEYS[2]) ~= 'skiplist'
  for i = 1, nls, 1000 do
    local z, nz = {}, 0
    for j = i, min(i + 999, nls) do
      z[nz + 1], z[nz + 2] = deadline, leased[j]
      nz = nz + 2
    end
    if conv and i == 1 then
      z[nz + 1], z[nz + 2] = deadline, SKIP
      nz = nz + 2
    end
    call('ZADD', KEYS[2], unpack(z, 1, nz))
  end
  if conv then call('ZREM', KEYS[2], SKIP) end
end
for i = 1, np, 1000 do
  call('ZREM', KEYS[3], unpack(parked, i, min(i + 999, np)))
end
if nh > 0 then
  -- laneheld is kept a hash table, as delayed and active are kept
  -- skiplists (a listpack hash scans its fields on every HSET, HMGET and
  -- HDEL): a field with a value too long for a listpack, written with
  -- the claims and deleted in the same step
  local conv = call('OBJECT', 'ENCODING', held) ~= 'hashtable'
  if conv then
    hold[nh + 1], hold[nh + 2] = '#hashtable', string.rep('-', 100)
    nh = nh + 2
  end
  for i = 1, nh, 1000 do
    call('HSET', held, unpack(hold, i, min(i + 999, nh)))
  end
  if conv then call('HDEL', held, '#hashtable') end
end
for i = 1, nrot do
  nq = nq + 1
  order[nq] = rotated[i]
end
for i = 1, nq, 1000 do
  call('RPUSH', heldq, unpack(order, i, min(i + 999, nq)))
end
if ck then
  call('SET', base .. 'lanecredit', cu .. ' ' .. ck)
elseif credit then
  call('DEL', base .. 'lanecredit')
end
writeBack()
return out
