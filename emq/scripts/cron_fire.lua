-- cron_fire (extension, job system): fire due slots of one schedule, each
-- claimed and enqueued in the same step, so that however many schedulers
-- fire the same slot, skewed or dying, it is enqueued once. The schedule's
-- last fired slot lives in emq:{q}:cron (field: the schedule's name) and
-- only moves forward: a slot fires when it is later than the last (the
-- compare-and-set), and the job's id is derived from the slot and the name
-- by the caller, the same in every scheduler.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  base      emq:{q}:   declared root of cron and of job:<id>
-- ARGV[1]  name      the schedule's name (1 to 1,024 bytes)
-- ARGV[2]  payload   every slot's job gets it
-- ARGV[3]  ahead_ms  integer >= 0: a slot later than now+ahead_ms (server
--                    clock) is refused, so a scheduler whose clock runs far
--                    ahead cannot fire the future
-- ARGV[4], ARGV[5]   slot1_ms, id1 (slot: integer >= 0, Unix ms; id: a
--                    branded id, JOB-namespaced)
-- ARGV[6], ARGV[7]   slot2_ms, id2, ... slots strictly ascending
-- Replies:
--   {last, r1, r2, ...}  last: the schedule's last fired slot after the
--                        call (-1: never fired); one ri per slot, in order:
--     1   fired: the job is in pending (its slot has come on the server
--         clock), row {state=pending, attempts=0, payload}
--     2   fired: the job is in delayed, due at its slot (a scheduler whose
--         clock runs ahead fired it early)
--     0   already fired, or a later slot was: nothing written
--     3   the slot is taken (last moves to it) but a row with its id
--         exists (the slot fired before the cron hash was reset), so no
--         job is written
--    -1   too far ahead: nothing written for it nor any later slot
--   error "EMQKIND job id must be JOB-namespaced" or "EMQARG <what>";
--         nothing written
local call = redis.call
local n = #ARGV
if n < 5 or (n - 3) % 2 ~= 0 then
  return redis.error_reply('EMQARG cron_fire takes name, payload, ahead_ms and slot, id pairs')
end
local name = ARGV[1]
if #name == 0 or #name > 1024 then
  return redis.error_reply('EMQARG name must be 1 to 1024 bytes')
end
local function int(v)
  local x = tonumber(v)
  if x and x == math.floor(x) and x >= 0 and x <= 9007199254740991 then
    return x
  end
end
local ahead = int(ARGV[3])
if not ahead then
  return redis.error_reply('EMQARG ahead_ms must be an integer >= 0')
end
local prev = -1
for i = 4, n, 2 do
  local s = int(ARGV[i])
  if not s or s <= prev then
    return redis.error_reply('EMQARG slots must be integers >= 0, strictly ascending')
  end
  prev = s
  if string.sub(ARGV[i + 1], 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
end
local cron = KEYS[3] .. 'cron'
local jp = KEYS[3] .. 'job:'
local stored = call('HGET', cron, name)
local last = -1
if stored then
  last = tonumber(stored)
  if not last then
    return redis.error_reply('EMQARG the cron hash holds no slot for this name')
  end
end
local t = call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out, moved = {0}, false
for i = 4, n, 2 do
  local slot, id = tonumber(ARGV[i]), ARGV[i + 1]
  local r = 0
  if slot > now + ahead then
    for k = i, n, 2 do
      out[#out + 1] = -1
    end
    break
  elseif slot > last then
    last, moved = slot, true
    local row = jp .. id
    if call('EXISTS', row) == 1 then
      r = 3
    elseif slot > now then
      call('HSET', row, 'state', 'delayed', 'attempts', '0', 'payload', ARGV[2])
      call('ZADD', KEYS[2], slot, id)
      r = 2
    else
      call('HSET', row, 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
      call('ZADD', KEYS[1], 0, id)
      r = 1
    end
  end
  out[#out + 1] = r
end
if moved then
  call('HSET', cron, name, string.format('%d', last))
end
out[1] = last
return out
