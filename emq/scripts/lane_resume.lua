-- lane_resume (extension, lanes): let a lane halted by a dead job go on
-- with its next waiting job. The dead job stays dead (requeue it to run it
-- again: it then runs as a plain job, outside the lane).
-- KEYS[1]  base      emq:{q}:   declared root of lane:<k>, lanestate,
--                    lanering, lanehalt
-- ARGV[1]  k         the lane's key form (as lane_enqueue)
-- lanestate[k] is packed as lane_claim's header says (bit 2: halted; the
-- waiting count from 2^33 up, set here to the lane's length).
-- Replies:
--   1   the lane was halted and goes on
--   0   it was not halted; nothing written
local base, k = KEYS[1], ARGV[1]
local call = redis.call
local v = tonumber(call('HGET', base .. 'lanestate', k)) or 0
if math.floor(v / 2) % 2 == 0 then
  return 0
end
v = v - 2
call('HDEL', base .. 'lanehalt', k)
-- the waiting count (bits from 2^33 up) is set to the lane's length
local CNT = 8589934592
local n = call('LLEN', base .. 'lane:' .. k)
v = v % CNT + CNT * math.min(n, 1048575)
local occ, cap = math.floor(v / 4) % 2048, math.floor(v / 8192) % 1024 + 1
if v % 2 == 0 and occ < cap and n > 0 then
  v = v + 1
  call('RPUSH', base .. 'lanering', k)
end
if v == 0 then
  call('HDEL', base .. 'lanestate', k)
else
  call('HSET', base .. 'lanestate', k, string.format('%d', v))
end
return 1
