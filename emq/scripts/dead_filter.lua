-- dead_filter (extension, operations): requeue or delete the dead jobs a
-- filter selects, examining a bounded page of the dead set per call; the
-- caller repeats with the returned cursor while more = 1. Only a job still
-- dead when the call runs is acted on: its id is in dead and its row, when
-- it has one, says state dead (a row in another state, left by a peer, is
-- skipped and stays).
-- KEYS[1]  dead       emq:{q}:dead
-- KEYS[2]  pending    emq:{q}:pending
-- KEYS[3]  base       emq:{q}:   declared root of job:<id>
-- ARGV[1]  action     'requeue': each as requeue does it (left dead; row
--                     state=pending, attempts and error kept; in pending
--                     at 0); 'delete': ZREM dead, DEL job:<id> (a ghost,
--                     an id in dead without a row, leaves dead either way)
-- ARGV[2]  since_ms   integer >= 0: time of death at or after it (ms)
-- ARGV[3]  before_ms  integer >= 0: time of death before it (ms)
-- ARGV[4]  prefix     the row's error text starts with it; '' selects
--                     every job in the time range, with or without error
-- ARGV[5]  limit      integer >= 1: at most this many acted on
-- ARGV[6]  scan       integer >= 1: at most this many ids examined
-- ARGV[7]  after_id   '' on the first call, else the cursor_id replied
-- ARGV[8]  after_ms   integer >= 0: the cursor_ms replied (0 on the first)
-- Replies:
--   {moved, examined, cursor_id, cursor_ms, more}
--     moved     ids requeued or deleted
--     examined  ids looked at, in dead's order (time of death, then id)
--     cursor_id, cursor_ms  where the next call starts: after the last id
--               examined that stayed in dead (the given cursor when none
--               stayed). An id examined twice, when the cursor left dead
--               meanwhile, is harmless: a match moves, the rest stay.
--     more      1 when the page or the limit ended the call before the
--               end of the range; 0 when the range is exhausted
--   error "EMQARG action must be requeue or delete", "EMQARG since_ms must
--         be an integer >= 0" (likewise before_ms, limit >= 1, scan >= 1,
--         after_ms); nothing written
local action = ARGV[1]
if action ~= 'requeue' and action ~= 'delete' then
  return redis.error_reply('EMQARG action must be requeue or delete')
end
local function int(v, lo, name)
  local n = tonumber(v)
  if not n or n ~= math.floor(n) or n < lo or n > 9007199254740991 then
    return nil, redis.error_reply('EMQARG ' .. name .. ' must be an integer >= ' .. lo)
  end
  return n
end
local since, e1 = int(ARGV[2], 0, 'since_ms')
if e1 then return e1 end
local before, e2 = int(ARGV[3], 0, 'before_ms')
if e2 then return e2 end
local prefix = ARGV[4] or ''
local limit, e3 = int(ARGV[5], 1, 'limit')
if e3 then return e3 end
local scan, e4 = int(ARGV[6], 1, 'scan')
if e4 then return e4 end
local after = ARGV[7] or ''
local after_ms, e5 = int(ARGV[8], 0, 'after_ms')
if e5 then return e5 end

-- The page starts at the first id dead since since_ms, and after the
-- cursor: its rank while it is still in dead at the same time of death,
-- else the first id dead at or after its time.
local start = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. string.format('%d', since))
if after ~= '' then
  local s = redis.call('ZSCORE', KEYS[1], after)
  if s and tonumber(s) == after_ms then
    start = math.max(start, redis.call('ZRANK', KEYS[1], after) + 1)
  else
    start = math.max(start, redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. string.format('%d', after_ms)))
  end
end
local page = redis.call('ZRANGE', KEYS[1], start, start + scan - 1, 'WITHSCORES')
local moved, examined = 0, 0
local cursor, cursor_ms = after, after_ms
local more = 0
if #page / 2 == scan then
  more = 1
end
local i = 1
while i < #page do
  local id, at = page[i], tonumber(page[i + 1])
  if at >= before then
    more = 0
    break
  end
  if moved == limit then
    more = 1
    break
  end
  examined = examined + 1
  local row = KEYS[3] .. 'job:' .. id
  local f = redis.call('HMGET', row, 'state', 'error')
  local match = f[1] == false or f[1] == 'dead'
  if match and prefix ~= '' then
    match = f[2] ~= false and string.sub(f[2], 1, #prefix) == prefix
  end
  if match then
    redis.call('ZREM', KEYS[1], id)
    if action == 'delete' then
      redis.call('DEL', row)
    else
      if f[1] then
        redis.call('HSET', row, 'state', 'pending')
      end
      redis.call('ZADD', KEYS[2], 0, id)
    end
    moved = moved + 1
  else
    cursor, cursor_ms = id, at
  end
  i = i + 2
end
return {moved, examined, cursor, cursor_ms, more}
