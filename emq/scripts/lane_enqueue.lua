-- lane_enqueue (extension, lanes): admit jobs at the tail of one lane, a
-- named ordered sub-queue of the queue.
-- KEYS[1]  delayed   emq:{q}:delayed
-- KEYS[2]  base      emq:{q}:   declared root of job:<id> and of the lane
--                    keys lane:<k>, lanestate, lanering, lanecfg, lanename
-- ARGV[1]  k         the lane's key form: its name, or '#' .. hex sha256 of
--                    a name longer than 64 bytes (host-side)
-- ARGV[2]  name      the lane's name as given (kept in lanename when k
--                    differs)
-- ARGV[3]  cap       integer 0..1000: jobs of the lane run at once (0: keep
--                    the lane's, default 1)
-- ARGV[4]  weight    integer 0..1000: claims in a row per turn (0: keep,
--                    default 1)
-- ARGV[5]  halt      '' keep, '1' a dead job halts the lane, '0' the lane
--                    goes on (unset: the queue's lanecfg 'halt', default go on)
-- ARGV[6], ARGV[7], ...  id1, payload1, ... (JOB-namespaced ids)
-- A waiting lane job is a normal row, state delayed, attempts 0, field
-- lane = k, in delayed at the lane score 9007199254740990 (2^53-2: never
-- due, so a peer's promote never moves it), its id at the tail of
-- lane:<k>. The cap and weight live in lanestate[k] (lane_claim's header
-- gives the packing).
-- Replies:
--   {1|0, ...}  one per job: 1 admitted, 0 its row exists (nothing written)
--   error "EMQARG ..." or "EMQKIND ..." before anything is written
local LANE = 9007199254740990
local base, k = KEYS[2], ARGV[1]
if #k < 1 or #k > 65 then
  return redis.error_reply('EMQARG lane key must be 1..65 bytes')
end
local nums = {}
for i, what in ipairs({'cap', 'weight'}) do
  local x = tonumber(ARGV[i + 2])
  if not x or x ~= math.floor(x) or x < 0 or x > 1000 then
    return redis.error_reply('EMQARG ' .. what .. ' must be an integer 0..1000')
  end
  nums[i] = x
end
local cap, w = nums[1], nums[2]
local halt = ARGV[5]
if halt ~= '' and halt ~= '0' and halt ~= '1' then
  return redis.error_reply("EMQARG halt must be '', '0' or '1'")
end
if #ARGV % 2 ~= 1 then
  return redis.error_reply('EMQARG lane_enqueue takes 5 + 2*n arguments')
end
for i = 6, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
end
local call = redis.call
local jp = base .. 'job:'
if halt ~= '' then call('HSET', base .. 'lanecfg', 'halt:' .. k, halt) end
if ARGV[2] ~= k then call('HSET', base .. 'lanename', k, ARGV[2]) end
local rows, m = {}, 0
for i = 6, #ARGV, 2 do
  local id = ARGV[i]
  m = m + 1
  rows[m] = jp .. id
end
local existing = call('EXISTS', unpack(rows))
local out, added, z, seen = {}, {}, {}, {}
for j = 1, m do
  local id = ARGV[4 + 2 * j]
  if seen[id] or (existing > 0 and call('EXISTS', rows[j]) == 1) then
    out[j] = 0
  else
    seen[id] = true
    call('HSET', rows[j], 'state', 'delayed', 'attempts', '0', 'payload', ARGV[5 + 2 * j], 'lane', k)
    added[#added + 1] = id
    z[#z + 1] = LANE
    z[#z + 1] = id
    out[j] = 1
  end
end
if #added > 0 then
  call('ZADD', KEYS[1], unpack(z))
  call('RPUSH', base .. 'lane:' .. k, unpack(added))
end
-- The lane's state (packed as lane_claim reads it); an idle lane with room
-- joins the ring.
local v = tonumber(call('HGET', base .. 'lanestate', k)) or 0
local r, h, occ = v % 2, math.floor(v / 2) % 2, math.floor(v / 4) % 2048
local c0, w0 = math.floor(v / 8192) % 1024 + 1, math.floor(v / 8388608) + 1
if cap > 0 then c0 = cap end
if w > 0 then w0 = w end
if r == 0 and h == 0 and occ < c0 and #added > 0 then
  r = 1
  call('RPUSH', base .. 'lanering', k)
end
v = r + 2 * h + 4 * occ + 8192 * (c0 - 1) + 8388608 * (w0 - 1)
if v == 0 then
  call('HDEL', base .. 'lanestate', k)
else
  call('HSET', base .. 'lanestate', k, string.format('%d', v))
end
return out
