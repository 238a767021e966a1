-- cron_fire (extension, job system): fire due slots of one schedule, each
-- claimed and enqueued in the same step, so that however many schedulers
-- fire the same slot, skewed or dying, it is enqueued once. The schedule's
-- last fired slot lives in emq:{q}:cron (field: the schedule's name) and
-- only moves forward: a slot fires when it is later than the last (the
-- compare-and-set), and the job's id is the first of k candidates derived
-- from the slot and the name by the caller (the same in every scheduler)
-- whose row does not exist, or exists and was written by this very
-- schedule for this very slot (emq:{q}:cronjobs says whose it is): a
-- collision with another schedule's id takes the next candidate instead of
-- missing the slot.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  base      emq:{q}:   declared root of cron, cronjobs and job:<id>
-- ARGV[1]  name      the schedule's name (1 to 1,024 bytes)
-- ARGV[2]  payload   every slot's job gets it
-- ARGV[3]  ahead_ms  integer >= 0: a slot later than now+ahead_ms (server
--                    clock) is refused, so a scheduler whose clock runs far
--                    ahead cannot fire the future
-- ARGV[4]  k         candidates per slot, 1 to 8
-- ARGV[5], ...       slot1_ms, id1_1, ..., id1_k (slot: integer >= 0, Unix
--                    ms; ids: branded ids, JOB-namespaced, the candidates in
--                    order), then slot2_ms, ... slots strictly ascending
-- Record: emq:{q}:cronjobs, a zset, member "<id>\n<name>", score the slot,
--   for each job written; members of slots more than 30 days before the
--   server's now are removed by each call.
-- Replies:
--   {last, r1, id1, r2, id2, ...}  last: the schedule's last fired slot
--                        after the call (-1: never fired); per slot, in
--                        order, ri and the id of its job ('' when none):
--     1   fired: the job is in pending (its slot has come on the server
--         clock), row {state=pending, attempts=0, payload}
--     2   fired: the job is in delayed, due at its slot (a scheduler whose
--         clock runs ahead fired it early)
--     0   already fired, or a later slot was: nothing written
--     3   the slot is taken (last moves to it) but its job exists (the
--         slot fired before the cron hash was reset: the candidate's row
--         is this schedule's for this slot), or all k candidates name other
--         jobs' rows; no job is written
--    -1   too far ahead: nothing written for it nor any later slot
--   error "EMQKIND job id must be JOB-namespaced" or "EMQARG <what>";
--         nothing written
local call = redis.call
local n = #ARGV
local k = tonumber(ARGV[4])
if not k or k ~= math.floor(k) or k < 1 or k > 8 then
  return redis.error_reply('EMQARG k must be an integer from 1 to 8')
end
local g = k + 1
if n < 4 + g or (n - 4) % g ~= 0 then
  return redis.error_reply('EMQARG cron_fire takes name, payload, ahead_ms, k and groups of a slot and k ids')
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
for i = 5, n, g do
  local s = int(ARGV[i])
  if not s or s <= prev then
    return redis.error_reply('EMQARG slots must be integers >= 0, strictly ascending')
  end
  prev = s
  for j = i + 1, i + k do
    if string.sub(ARGV[j], 1, 3) ~= 'JOB' then
      return redis.error_reply('EMQKIND job id must be JOB-namespaced')
    end
  end
end
local cron = KEYS[3] .. 'cron'
local jp = KEYS[3] .. 'job:'
local own = KEYS[3] .. 'cronjobs'
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
local wrote = false
for i = 5, n, g do
  local slot = tonumber(ARGV[i])
  local r, id = 0, ''
  if slot > now + ahead then
    for _ = i, n, g do
      out[#out + 1] = -1
      out[#out + 1] = ''
    end
    break
  elseif slot > last then
    last, moved = slot, true
    r = 3
    for j = i + 1, i + k do
      local c = ARGV[j]
      local row = jp .. c
      if call('EXISTS', row) == 0 then
        id = c
        if slot > now then
          call('HSET', row, 'state', 'delayed', 'attempts', '0', 'payload', ARGV[2])
          call('ZADD', KEYS[2], slot, c)
          r = 2
        else
          call('HSET', row, 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
          call('ZADD', KEYS[1], 0, c)
          r = 1
        end
        call('ZADD', own, slot, c .. '\n' .. name)
        wrote = true
        break
      elseif call('ZSCORE', own, c .. '\n' .. name) then
        id = c -- this schedule's job of this slot, fired before a reset
        break
      end
    end
  end
  out[#out + 1] = r
  out[#out + 1] = id
end
if wrote then
  call('ZREMRANGEBYSCORE', own, '-inf', '(' .. string.format('%d', now - 2592000000))
end
if moved then
  call('HSET', cron, name, string.format('%d', last))
end
out[1] = last
return out
