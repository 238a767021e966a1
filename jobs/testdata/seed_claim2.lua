-- the retired @claim2 Lua script (history) — one atomic transition
-- KEYS[1] = the pending set   KEYS[2] = the active set   KEYS[3] = the base emq:{q}:
-- ARGV[1] = the lease in milliseconds
-- Pop the oldest id: every pending score is 0, so the lowest member is the
-- lowest bytes, which is the oldest mint.
local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then return {} end
local id = popped[1]
-- The derived key: the declared root KEYS[3], the literal 'job:', the popped id.
-- It is not in KEYS[], but it carries the root's {q} hashtag, so it lands on
-- the same slot as every declared key.
local jk = KEYS[3] .. 'job:' .. id
-- A ghost (an id with no row) is already popped: answer empty, mint no row.
if redis.call('EXISTS', jk) == 0 then return {} end
-- attempts + 1 is the fencing token the claimant holds; complete compares it.
local att = redis.call('HINCRBY', jk, 'attempts', 1)
redis.call('HSET', jk, 'state', 'active')
-- The lease is the active-set score: now + lease_ms on the server clock.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), id)
return {id, redis.call('HGET', jk, 'payload'), att}
