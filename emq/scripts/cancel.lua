-- cancel (extension, job system J1): end a job that has not finished, in
-- any state, as dead with an error text, in one step.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  active    emq:{q}:active
-- KEYS[4]  dead      emq:{q}:dead
-- KEYS[5]  base      emq:{q}:   declared root of job:<id>, and of the
--                    channels cancel and done:<id>
-- ARGV[1]  id
-- ARGV[2]  error text kept in the row ('cancelled')
-- A pending, delayed or active job leaves its set, its row takes state
-- dead and the error, and it joins dead at the server's time; its
-- attempts is kept, so the token of a worker running it no longer holds
-- (complete, retry and extend answer 0). An active job's id is then
-- published on base .. 'cancel' (the servers holding it end its handler),
-- and every cancelled id on base .. 'done:' .. id with 'dead' (for the
-- waiters).
-- Replies:
--   the state the job was in: 'pending', 'delayed' or 'active' (now dead);
--   'completed' or 'dead' for a finished job, and '' for no such job:
--   nothing written
local id = ARGV[1]
local key = KEYS[5] .. 'job:' .. id
local state = redis.call('HGET', key, 'state')
local sets = {pending = KEYS[1], delayed = KEYS[2], active = KEYS[3]}
local set = sets[state or '']
if not set then
  return state or ''
end
redis.call('ZREM', set, id)
local t = redis.call('TIME')
redis.call('HSET', key, 'state', 'dead', 'error', ARGV[2])
redis.call('ZADD', KEYS[4], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), id)
if state == 'active' then
  redis.call('PUBLISH', KEYS[5] .. 'cancel', id)
end
redis.call('PUBLISH', KEYS[5] .. 'done:' .. id, 'dead')
return state
