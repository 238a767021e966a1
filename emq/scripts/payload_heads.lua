-- payload_heads (extension, operations; read only): the first bytes of
-- each job's payload, for an operator's view of the payload's header
-- (the job system's envelope: its task type) without moving the payloads.
-- KEYS[1]  base       emq:{q}:   declared root of job:<id>
-- ARGV[1]  n          integer 1..65536: the most bytes of each payload
-- ARGV[2]  max_size   integer 0..2^53-1: a payload larger than it is
--                     not read (its head replied ''), so that one call
--                     never copies a huge payload
-- ARGV[3], ...        id1, id2, ... (at most 1,000)
-- Replies:
--   {size1, head1, size2, head2, ...}  per id, in order: the payload's
--               length in bytes (HSTRLEN; -1 when the row has no
--               payload field or no row) and its first n bytes ('' when
--               none, or when size > max_size)
--   error "EMQARG n must be an integer in 1..65536" (likewise max_size,
--         and "EMQARG at most 1000 ids"); nothing read
-- Writes nothing.
local function int(v, lo, hi, name)
  local x = tonumber(v)
  if not x or x ~= math.floor(x) or x < lo or x > hi then
    return nil, redis.error_reply('EMQARG ' .. name .. ' must be an integer in ' .. lo .. '..' .. hi)
  end
  return x
end
local n, e1 = int(ARGV[1], 1, 65536, 'n')
if e1 then return e1 end
local max_size, e2 = int(ARGV[2], 0, 9007199254740991, 'max_size')
if e2 then return e2 end
if #ARGV - 2 > 1000 then
  return redis.error_reply('EMQARG at most 1000 ids')
end
local out = {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local row = KEYS[1] .. 'job:' .. id
  local size = -1
  local head = ''
  if redis.call('HEXISTS', row, 'payload') == 1 then
    size = redis.call('HSTRLEN', row, 'payload')
    if size <= max_size then
      head = string.sub(redis.call('HGET', row, 'payload'), 1, n)
    end
  end
  out[#out + 1] = size
  out[#out + 1] = head
end
return out
