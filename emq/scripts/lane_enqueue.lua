-- lane_enqueue (extension, lanes): admit jobs at the tail of one lane, a
-- named ordered sub-queue of the queue.
-- KEYS[1]  delayed   emq:{q}:delayed
-- KEYS[2]  base      emq:{q}:   declared root of job:<id> and of the lane
--                    keys lane:<k>, lanestate, lanering, lanecfg, lanename
-- ARGV[1]  k         the lane's key form: its name, or '#' .. hex sha256 of
--                    a name longer than 64 bytes (host-side); no '{' (EMQARG)
-- ARGV[2]  name      the lane's name as given (kept in lanename when k
--                    differs)
-- ARGV[3]  cap       integer 0..1000: jobs of the lane run at once (0: keep
--                    the lane's, default 1)
-- ARGV[4]  weight    integer 0..1000: claims in a row per turn (0: keep,
--                    default 1)
-- ARGV[5]  halt      '' keep, '1' a dead job halts the lane, '0' the lane
--                    goes on (unset: the queue's lanecfg 'halt', default go on)
-- ARGV[6], ARGV[7], ...  id1, payload1, ... (JOB-namespaced ids)
-- Or, with ARGV[1] '' (many lanes, their options kept): ARGV[2], ... =
-- k1, name1, id1, payload1, ... (name '' when it is k), each job at the
-- tail of its own lane, in order.
-- A waiting lane job is a normal row, state delayed, attempts 0, field
-- lane = k, in delayed at the lane score 9007199254740990 (2^53-2: never
-- due, so a peer's promote never moves it), its id at the tail of
-- lane:<k>; or (layout 4) the first job given an idle, empty lane is
-- held by the lane's ring entry '{k{id' instead (lane_claim takes it
-- without popping the list). The cap, weight and count of waiting jobs live in
-- lanestate[k] (lane_claim's header gives the packing): every lane given
-- jobs has its state written, in one HSET for the call.
-- Replies:
--   {1|0, ...}  one per job: 1 admitted, 0 its row exists (nothing written)
--   error "EMQARG ..." or "EMQKIND ..." before anything is written
local LANE = '9007199254740990'
local base = KEYS[2]
local call = redis.call
-- A queue still holding layout 2's occupant keys is refused, nothing
-- written: layout 3 would strand the lane jobs running or waiting there.
if call('EXISTS', base .. 'laneocc', base .. 'laneoccq') > 0 then
  return redis.error_reply('EMQLAYOUT lanes layout 2 keys (laneocc, laneoccq) in this queue: drain its lanes, then delete them (jobs/PROTOCOL-L4.md)')
end
local nargv = #ARGV
-- The jobs are read from ARGV where they stand: job j's lane key, name,
-- id and payload are ARGV[ki], ARGV[ki + 1], ARGV[ii], ARGV[ii + 1] with
-- ii = first + step * (j - 1) (ki = ii - 2 for many lanes; the single
-- lane's key and name are ARGV[1], ARGV[2]).
local cap, w, halt = 0, 0, ''
local first, step, many
local find = string.find
local function key(k)
  if #k < 1 or #k > 65 or find(k, '{', 1, true) then
    return redis.error_reply('EMQARG lane key must be 1..65 bytes, no {')
  end
end
if ARGV[1] == '' then
  if nargv % 4 ~= 1 or nargv < 5 then
    return redis.error_reply('EMQARG lane_enqueue takes \'\' + 4*n arguments')
  end
  first, step, many = 4, 4, true
  for i = 2, nargv, 4 do
    local e = key(ARGV[i])
    if e then return e end
  end
else
  local e = key(ARGV[1])
  if e then return e end
  local nums = {}
  for i, what in ipairs({'cap', 'weight'}) do
    local x = tonumber(ARGV[i + 2])
    if not x or x ~= math.floor(x) or x < 0 or x > 1000 then
      return redis.error_reply('EMQARG ' .. what .. ' must be an integer 0..1000')
    end
    nums[i] = x
  end
  cap, w, halt = nums[1], nums[2], ARGV[5]
  if halt ~= '' and halt ~= '0' and halt ~= '1' then
    return redis.error_reply("EMQARG halt must be '', '0' or '1'")
  end
  if nargv % 2 ~= 1 or nargv < 7 then
    return redis.error_reply('EMQARG lane_enqueue takes 5 + 2*n arguments')
  end
  first, step, many = 6, 2, false
end
-- the ids checked and their rows named in one pass ('JOB' by its bytes:
-- no substring made per job)
local byte = string.byte
local jp = base .. 'job:'
local rows, m = {}, 0
for i = first, nargv, step do
  local id = ARGV[i]
  local a, b, c = byte(id, 1, 3)
  if a ~= 74 or b ~= 79 or c ~= 66 then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
  m = m + 1
  rows[m] = jp .. id
end
local existing = 0
for i = 1, m, 1000 do
  existing = existing + call('EXISTS', unpack(rows, i, math.min(i + 999, m)))
end
-- per lane, in first-seen order: its new ids (one id as a string, more
-- in a table: no table for a lane with one job in the call)
local out, z, nz, seen, lanes, order, no = {}, {}, 0, {}, {}, {}, 0
local j = 0
for i = first, nargv, step do
  j = j + 1
  local id, k = ARGV[i], ARGV[1]
  if many then k = ARGV[i - 2] end
  if seen[id] or (existing > 0 and call('EXISTS', rows[j]) == 1) then
    out[j] = 0
  else
    seen[id] = true
    call('HSET', rows[j], 'state', 'delayed', 'attempts', '0', 'payload', ARGV[i + 1], 'lane', k)
    z[nz + 1], z[nz + 2] = LANE, id
    nz = nz + 2
    local l = lanes[k]
    if not l then
      lanes[k] = id
      no = no + 1
      order[no] = k
      local name = ARGV[2]
      if many then name = ARGV[i - 1] end
      if name ~= '' and name ~= k then call('HSET', base .. 'lanename', k, name) end
    elseif type(l) == 'string' then
      lanes[k] = {l, id}
    else
      l[#l + 1] = id
    end
    out[j] = 1
  end
end
if no == 0 then return out end
-- delayed is kept a skiplist (O(log n) a ZADD): a listpack zset (the
-- server's encoding while it holds up to 128 members) scans its members
-- on every insert, and in a queue whose consumers keep up with its
-- producers delayed is small and recreated often (it is deleted when it
-- empties). A member longer than zset-max-listpack-value (64) converts it
-- for good; it is added with the jobs and removed in the same atomic
-- step, so nobody sees it (issue 27: listpack inserts were 17% of a lane
-- job's server instructions).
local SKIP = '#skiplist' .. string.rep('-', 91)
local conv = call('OBJECT', 'ENCODING', KEYS[1]) ~= 'skiplist'
if conv then
  z[nz + 1], z[nz + 2] = LANE, SKIP
  nz = nz + 2
end
for i = 1, nz, 2000 do
  call('ZADD', KEYS[1], unpack(z, i, math.min(i + 1999, nz)))
end
if conv then call('ZREM', KEYS[1], SKIP) end
if halt ~= '' then call('HSET', base .. 'lanecfg', 'halt:' .. order[1], halt) end
-- The lanes' states (packed as lane_claim reads them); an idle lane with
-- room joins the ring. The field '#table' (no lane key: a hashed one is
-- '#' and 64 hex digits) holds a value longer than any listpack value, so
-- the server keeps lanestate a hash table: O(1) reads however few lanes.
call('HSETNX', base .. 'lanestate', '#table', string.rep('-', 80))
local vs = call('HMGET', base .. 'lanestate', unpack(order, 1, no))
local CNT, MAXC = 8589934592, 1048575 -- 2^33: the waiting count's unit
local set, ns, ring, nr = {}, 0, {}, 0
for i = 1, no do
  local k = order[i]
  local l = lanes[k]
  local v = tonumber(vs[i]) or 0
  -- the fields by % and / only, as lane_claim takes them (no math.floor
  -- calls): for an integer v, (v - v % d) / d is floor(v / d)
  local r, h, occ = v % 2, (v - v % 2) / 2 % 2, (v - v % 4) / 4 % 2048
  local c0, w0 = (v - v % 8192) / 8192 % 1024 + 1, (v % CNT - v % 8388608) / 8388608 + 1
  local cnt = (v - v % CNT) / CNT
  if cap > 0 then c0 = cap end
  if w > 0 then w0 = w end
  if r == 0 and h == 0 and occ == 0 and cnt == 0 then
    -- an idle, empty lane (layout 4): its first job goes into the ring
    -- itself as '{k{id' (k holds no brace), not into lane:<k>, so
    -- lane_claim claims it without popping the lane's list; the rest
    -- follow it in lane:<k>
    r = 1
    nr = nr + 1
    if type(l) == 'string' then
      ring[nr] = '{' .. k .. '{' .. l
    else
      ring[nr] = '{' .. k .. '{' .. l[1]
      call('RPUSH', base .. 'lane:' .. k, unpack(l, 2))
      cnt = #l - 1
    end
  else
    if type(l) == 'string' then
      call('RPUSH', base .. 'lane:' .. k, l)
      cnt = cnt + 1
    else
      call('RPUSH', base .. 'lane:' .. k, unpack(l))
      cnt = cnt + #l
    end
    if r == 0 and h == 0 and occ < c0 then
      r = 1
      nr = nr + 1
      ring[nr] = k
    end
  end
  if cnt > MAXC then cnt = MAXC end
  -- the count of waiting jobs changed: every lane's state is written
  set[ns + 1] = k
  -- a number (below 2^53): the server writes its digits, as lane_claim's
  set[ns + 2] = r + 2 * h + 4 * occ + 8192 * (c0 - 1) + 8388608 * (w0 - 1) + CNT * cnt
  ns = ns + 2
end
if nr > 0 then call('RPUSH', base .. 'lanering', unpack(ring, 1, nr)) end
call('HSET', base .. 'lanestate', unpack(set, 1, ns))
return out
