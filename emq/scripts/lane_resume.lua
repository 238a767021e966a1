-- lane_resume (extension, lanes): let a lane halted by a dead job go on
-- with its next waiting job. The dead job stays dead (requeue it to run it
-- again: it then runs as a plain job, outside the lane).
-- KEYS[1]  base      emq:{q}:   declared root of lane:<k>, lanestate,
--                    lanering, lanehalt
-- ARGV[1]  k         the lane's key form (as lane_enqueue)
-- Replies:
--   1   the lane was halted and goes on
--   0   it was not halted; nothing written
local base, k = KEYS[1], ARGV[1]
local st = redis.call('HGET', base .. 'lanestate', k)
if st ~= 'h' and st ~= 'hr' then
  return 0
end
redis.call('HDEL', base .. 'lanehalt', k)
if st == 'hr' then
  redis.call('HSET', base .. 'lanestate', k, 'r') -- still in the ring
elseif redis.call('LLEN', base .. 'lane:' .. k) > 0 then
  redis.call('HSET', base .. 'lanestate', k, 'r')
  redis.call('RPUSH', base .. 'lanering', k)
else
  redis.call('HDEL', base .. 'lanestate', k)
end
return 1
