-- lane_enqueue (extension, lanes): admit jobs at the tail of one lane, a
-- named ordered sub-queue of the queue.
-- KEYS[1]  delayed   emq:{q}:delayed
-- KEYS[2]  base      emq:{q}:   declared root of job:<id> and of the lane
--                    keys lane:<k>, lanestate, lanering, lanecfg, lanejob,
--                    lanename
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
-- A waiting lane job is a normal row, state delayed, in delayed at the
-- parked score 9007199254740991 (2^53-1: never due, so a peer's promote
-- never moves it), its id at the tail of lane:<k> and lanejob[id] = k.
-- Replies:
--   {1|0, ...}  one per job: 1 admitted, 0 its row exists (nothing written)
--   error "EMQARG ..." or "EMQKIND ..." before anything is written
local PARK = 9007199254740991
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
if cap > 0 then call('HSET', base .. 'lanecfg', 'cap:' .. k, cap) end
if w > 0 then call('HSET', base .. 'lanecfg', 'w:' .. k, w) end
if halt ~= '' then call('HSET', base .. 'lanecfg', 'halt:' .. k, halt) end
if ARGV[2] ~= k then call('HSET', base .. 'lanename', k, ARGV[2]) end
local out, added = {}, 0
for i = 6, #ARGV, 2 do
  local id = ARGV[i]
  local row = base .. 'job:' .. id
  if call('EXISTS', row) == 1 then
    out[#out + 1] = 0
  else
    call('HSET', row, 'state', 'delayed', 'attempts', '0', 'payload', ARGV[i + 1])
    call('ZADD', KEYS[1], PARK, id)
    call('RPUSH', base .. 'lane:' .. k, id)
    call('HSET', base .. 'lanejob', id, k)
    out[#out + 1] = 1
    added = added + 1
  end
end
-- An idle lane joins the ring; the claim checks its cap when its turn comes.
if added > 0 and not call('HGET', base .. 'lanestate', k) then
  call('HSET', base .. 'lanestate', k, 'r')
  call('RPUSH', base .. 'lanering', k)
end
return out
