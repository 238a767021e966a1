-- unique_enqueue (extension, job system): admit jobs each under a unique
-- key, in one transition; the key is held by its owner's state, not by a
-- lock. A unique key emq:{q}:unique:<hash> holds the id of its owner; it
-- is free when that owner's row is missing (deleted, or completed with
-- retention 0) or its state is completed or dead, whoever made it so (a
-- core script of any peer included): the key is read with its owner's row
-- and taken in the same step. With a period (ttl_ms > 0) the key is also
-- free once the period has passed (PEXPIRE), whatever the owner's state.
-- Jobs are taken in ARGV order; a later job of the call sees what an
-- earlier one did.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  base      emq:{q}:   declared root of job:<id> and unique:<hash>
-- ARGV, six per job:
--   id        branded id, JOB-namespaced: the new job's
--   payload
--   hash      64 lowercase hex digits: sha256 of the unique key, hashed by
--             the caller (the key itself is never sent)
--   mode      'keep' | 'replace' | 'debounce'
--   delay_ms  integer >= 0; 0 enqueues into pending, else into delayed,
--             due at now+delay_ms (server clock)
--   ttl_ms    integer >= 0; 0 holds the key while its owner lives, else at
--             most that long
-- Per job, when the key is held (owner live: state pending, delayed or
-- active, or any state this wire does not know):
--   keep      nothing written; reports the owner
--   replace   an owner pending or delayed is deleted (out of its set, row
--             deleted) and the new job enqueued and made owner; an active
--             owner is kept and reported, nothing written
--   debounce  an owner pending or delayed keeps its id and becomes the new
--             job: its payload is the new one and it is due delay_ms from
--             now (pending when 0, its attempts kept); the key's period
--             starts again; an active owner is kept and reported
-- When the key is free the new job is enqueued, exactly as enqueue (or
-- enqueue_at) would, and owns the key.
-- Replies:
--   {code1, id1, code2, id2, ...}  two per job, in order:
--     1, id     enqueued: the new job owns the key
--     0, owner  the key is held: nothing written (keep, or an active owner)
--     2, old    replaced: old was deleted, the new job owns the key
--     3, owner  debounced: owner was updated in place
--     4, id     duplicate: a row with the new id exists; nothing written
--   error "EMQKIND job id must be JOB-namespaced" (any of the ids) or
--         "EMQARG <what>"; nothing written
-- Cost: one MGET and one EXISTS per 1,000 jobs, then per job an HSET and a
-- SET (an HGET more when the key names an owner), and one ZADD per 1,000
-- jobs into pending.
local call = redis.call
local n = #ARGV
if n % 6 ~= 0 then
  return redis.error_reply('EMQARG unique_enqueue takes 6 arguments per job')
end
local function int(v)
  local x = tonumber(v)
  return x and x == math.floor(x) and x >= 0 and x <= 9007199254740991
end
local MODES = {keep = true, replace = true, debounce = true}
for i = 1, n, 6 do
  if string.sub(ARGV[i], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
  local h = ARGV[i + 2]
  if #h ~= 64 or string.find(h, '[^0-9a-f]') then
    return redis.error_reply('EMQARG hash must be 64 lowercase hex digits')
  end
  if not MODES[ARGV[i + 3]] then
    return redis.error_reply('EMQARG mode must be keep, replace or debounce')
  end
  if not int(ARGV[i + 4]) then
    return redis.error_reply('EMQARG delay_ms must be an integer >= 0')
  end
  if not int(ARGV[i + 5]) then
    return redis.error_reply('EMQARG ttl_ms must be an integer >= 0')
  end
end
local m = n / 6
local jp = KEYS[3] .. 'job:'
local up = KEYS[3] .. 'unique:'
local ukeys, rows = {}, {}
for j = 1, m do
  local h, id = ARGV[6 * j - 3], ARGV[6 * j - 5]
  ukeys[j] = up .. h
  rows[j] = jp .. id
end
local owners, existing = {}, 0
for j = 1, m, 1000 do
  local last = math.min(j + 999, m)
  local got = call('MGET', unpack(ukeys, j, last))
  for k = 1, #got do
    owners[j + k - 1] = got[k]
  end
  existing = existing + call('EXISTS', unpack(rows, j, last))
end
-- The server's clock, read once when a job of the call is delayed.
local now = 0
for i = 5, n, 6 do
  if ARGV[i] ~= '0' then
    local t = call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    break
  end
end
-- place puts a job in pending (delay 0: gathered for one ZADD) or delayed.
local pend, np, nopend = {}, 0, {}
local function place(id, delay)
  if delay == 0 then
    np = np + 1
    pend[np] = id
    nopend[id] = nil
    return 'pending'
  end
  call('ZADD', KEYS[2], now + delay, id)
  nopend[id] = true
  return 'delayed'
end
local function own(key, id, ttl)
  if ttl > 0 then
    call('SET', key, id, 'PX', string.format('%d', ttl))
  else
    call('SET', key, id)
  end
end
local out, held, seen = {}, {}, {}
for j = 1, m do
  local i = 6 * j - 5
  local id, payload, h, mode = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local delay, ttl = tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5])
  local owner = held[h]
  if owner == nil then
    owner = owners[j]
  end
  local st = owner and call('HGET', jp .. owner, 'state')
  local live = st and st ~= 'completed' and st ~= 'dead'
  local waiting = st == 'pending' or st == 'delayed'
  if live and (mode == 'keep' or not waiting) then
    out[2 * j - 1], out[2 * j] = 0, owner
  elseif live and mode == 'debounce' then
    local okey = jp .. owner
    call('ZREM', KEYS[1], owner)
    call('ZREM', KEYS[2], owner)
    call('HSET', okey, 'payload', payload, 'state', place(owner, delay))
    own(ukeys[j], owner, ttl)
    out[2 * j - 1], out[2 * j] = 3, owner
  elseif seen[id] or (existing > 0 and call('EXISTS', rows[j]) == 1) then
    out[2 * j - 1], out[2 * j] = 4, id
  else
    seen[id] = true
    local code, other = 1, id
    if live then -- replace a waiting owner
      call('ZREM', KEYS[1], owner)
      call('ZREM', KEYS[2], owner)
      call('DEL', jp .. owner)
      nopend[owner] = true
      code, other = 2, owner
    end
    call('HSET', rows[j], 'state', place(id, delay), 'attempts', '0', 'payload', payload)
    own(ukeys[j], id, ttl)
    held[h] = id
    out[2 * j - 1], out[2 * j] = code, other
  end
end
-- Score 0 for every member: byte order of the ids is mint order. An id
-- replaced or moved to delayed by a later job of this call stays out.
local z, nz = {}, 0
for k = np, 1, -1 do
  local id = pend[k]
  if not nopend[id] then
    nz = nz + 2
    z[nz - 1], z[nz] = '0', id
    if nz == 2000 then
      call('ZADD', KEYS[1], unpack(z, 1, nz))
      nz = 0
    end
  end
end
if nz > 0 then
  call('ZADD', KEYS[1], unpack(z, 1, nz))
end
return out
