-- unique_enqueue (extension, job system): admit jobs each under a unique
-- key, in one transition; the key is held by its owner's state, not by a
-- lock. A unique key emq:{q}:unique:<hash> holds the id of its owner; it
-- is free when that owner's row is missing (deleted, or completed with
-- retention 0) or its state is completed or dead, whoever made it so (a
-- core script of any peer included): the key is read with its owner's row
-- and taken in the same step. With a period (ttl_ms > 0) the key is also
-- free once the period has passed (PEXPIRE), whatever the owner's state.
-- Jobs are taken in ARGV order; a later job of the call sees what an
-- earlier one did. The mode, delay and period are the call's, shared by
-- its jobs (a batch of mixed options is sent as several calls).
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  base      emq:{q}:   declared root of job:<id> and unique:<hash>
-- ARGV[1]  mode      'keep' | 'replace' | 'debounce'
-- ARGV[2]  delay_ms  integer >= 0; 0 enqueues into pending, else into
--                    delayed, due at now+delay_ms (server clock)
-- ARGV[3]  ttl_ms    integer >= 0; 0 holds a key while its owner lives,
--                    else at most that long
-- ARGV[4..], three per job:
--   id        branded id, JOB-namespaced: the new job's
--   payload
--   hash      64 lowercase hex digits: sha256 of the unique key, hashed by
--             the caller (the key itself is never sent)
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
--   {r1, r2, ...}  one per job, in order:
--     1          enqueued: the new job owns the key
--     4          duplicate: a row with the new id exists; nothing written
--     '0'..owner the key is held: nothing written (keep, or an active
--                owner); the owner's id after the digit
--     '2'..old   replaced: old was deleted, the new job owns the key
--     '3'..owner debounced: owner was updated in place
--   error "EMQKIND job id must be JOB-namespaced" (any of the ids) or
--         "EMQARG <what>"; nothing written
-- Cost: one MGET and one EXISTS per 1,000 jobs, an HSET per job (an HGET
-- more when its key names an owner), and per 1,000 jobs one ZADD into
-- pending and one MSET of the keys taken (with a period, a SET PX per key
-- instead).
local call = redis.call
local n = #ARGV
if n < 3 or (n - 3) % 3 ~= 0 then
  return redis.error_reply('EMQARG unique_enqueue takes a mode, a delay, a period and 3 arguments per job')
end
local function int(v)
  local x = tonumber(v)
  return x and x == math.floor(x) and x >= 0 and x <= 9007199254740991
end
local mode = ARGV[1]
if mode ~= 'keep' and mode ~= 'replace' and mode ~= 'debounce' then
  return redis.error_reply('EMQARG mode must be keep, replace or debounce')
end
if not int(ARGV[2]) then
  return redis.error_reply('EMQARG delay_ms must be an integer >= 0')
end
if not int(ARGV[3]) then
  return redis.error_reply('EMQARG ttl_ms must be an integer >= 0')
end
local delay, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 4, n, 3 do
  if string.sub(ARGV[i], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
  local h = ARGV[i + 2]
  -- Anchored, the pattern is one greedy pass (a scan for a bad byte
  -- would start a match at each of the 64).
  if #h ~= 64 or not string.find(h, '^[0-9a-f]+$') then
    return redis.error_reply('EMQARG hash must be 64 lowercase hex digits')
  end
end
local m = (n - 3) / 3
local jp = KEYS[3] .. 'job:'
local up = KEYS[3] .. 'unique:'
local ukeys, rows = {}, {}
for j = 1, m do
  local id, h = ARGV[3 * j + 1], ARGV[3 * j + 3]
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
-- The server's clock, read once when the call's jobs are delayed.
local now, where = 0, 'pending'
if delay > 0 then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  where = 'delayed'
end
-- place puts a job in pending (gathered for one ZADD) or delayed.
local pend, np, nopend = {}, 0, {}
local function place(id)
  if delay == 0 then
    np = np + 1
    pend[np] = id
    nopend[id] = nil
  else
    call('ZADD', KEYS[2], now + delay, id)
    nopend[id] = true
  end
end
-- The keys taken, each written once at the end with its last owner: no
-- read of a unique key follows the MGET (held[] answers for the call).
local taken, nt, tid = {}, 0, {}
local function own(j, id)
  local key = ukeys[j]
  if tid[key] == nil then
    nt = nt + 1
    taken[nt] = key
  end
  tid[key] = id
end
local out, held, seen = {}, {}, {}
for j = 1, m do
  local i = 3 * j + 1
  local id, payload, h = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local owner = held[h]
  if owner == nil then
    owner = owners[j]
  end
  local st = owner and call('HGET', jp .. owner, 'state')
  local live = st and st ~= 'completed' and st ~= 'dead'
  local waiting = st == 'pending' or st == 'delayed'
  if live and (mode == 'keep' or not waiting) then
    out[j] = '0' .. owner
  elseif live and mode == 'debounce' then
    call('ZREM', KEYS[1], owner)
    call('ZREM', KEYS[2], owner)
    place(owner)
    call('HSET', jp .. owner, 'payload', payload, 'state', where)
    own(j, owner)
    out[j] = '3' .. owner
  elseif seen[id] or (existing > 0 and call('EXISTS', rows[j]) == 1) then
    out[j] = 4
  else
    seen[id] = true
    out[j] = 1
    if live then -- replace a waiting owner
      call('ZREM', KEYS[1], owner)
      call('ZREM', KEYS[2], owner)
      call('DEL', jp .. owner)
      nopend[owner] = true
      out[j] = '2' .. owner
    end
    place(id)
    call('HSET', rows[j], 'state', where, 'attempts', '0', 'payload', payload)
    own(j, id)
    held[h] = id
  end
end
-- Score 0 for every member: byte order of the ids is mint order. An id
-- replaced by a later job of this call stays out.
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
if ttl > 0 then
  local px = string.format('%d', ttl)
  for k = 1, nt do
    call('SET', taken[k], tid[taken[k]], 'PX', px)
  end
else
  local kv, nkv = {}, 0
  for k = 1, nt do
    nkv = nkv + 2
    kv[nkv - 1], kv[nkv] = taken[k], tid[taken[k]]
    if nkv == 2000 then
      call('MSET', unpack(kv, 1, nkv))
      nkv = 0
    end
  end
  if nkv > 0 then
    call('MSET', unpack(kv, 1, nkv))
  end
end
return out
