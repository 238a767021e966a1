-- enqueue (echomq:6.0.0, core transition 1): admit one job into pending.
-- KEYS[1]  row       emq:{q}:job:<id>
-- KEYS[2]  pending   emq:{q}:pending
-- ARGV[1]  id        branded id; must be JOB-namespaced
-- ARGV[2]  payload
-- Replies:
--   1   enqueued: row {state=pending, attempts=0, payload}, id in pending at score 0
--   0   duplicate: the row already exists; nothing written
--   error "EMQKIND job id must be JOB-namespaced"
-- The kind gate: the first three bytes must be JOB (the full 14-byte check
-- is host-side, before any key is built).
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
-- Idempotent: an existing row is a duplicate and a no-op.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
-- Score 0 for every member: byte order of the ids is mint order.
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
