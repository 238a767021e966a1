-- flow_submit (extension, flows): admit a DAG of jobs in one step. A job
-- with no dependency is pending at once; the others wait parked (state
-- delayed, in delayed at 9007199254740991, never due) until every
-- dependency has resolved.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  base      emq:{q}:   declared root of job:<id>, flow:<f>,
--                    flowjobs:<f>, flowjob, flowkids:<id>, flowpol:<id>,
--                    flowwait
-- ARGV[1]  f         the flow's id (JOB-minted, host-side)
-- ARGV[2]  n         integer 1..1000: the nodes that follow
-- then per node      id, payload, d (integer 0..n-1: its dependencies),
--                    then d pairs: index (1..n, not its own), policy
--                    ('f' fail: the job ends dead with the cause, 'i'
--                    ignore: the failure counts as resolved, 'c' continue:
--                    the job runs at once without waiting for the rest)
-- At most 10000 dependencies in all. Everything is checked first: counts,
-- indices, policies, the ids (JOB, distinct, no row yet), the flow (new),
-- and that the graph has no cycle (Kahn's algorithm, O(n + edges)).
-- Replies:
--   1   admitted: flow:<f> {state running, total n, left n, failed 0}
--   error "EMQFLOW cycle ...", "EMQFLOW exists ...", "EMQARG ...",
--         "EMQKIND ..."; nothing written
local PARK = 9007199254740991
local call, base, f = redis.call, KEYS[3], ARGV[1]
local n = tonumber(ARGV[2])
if not n or n ~= math.floor(n) or n < 1 or n > 1000 then
  return redis.error_reply('EMQARG n must be an integer 1..1000')
end
if #f < 1 or #f > 64 then
  return redis.error_reply('EMQARG flow id must be 1..64 bytes')
end
local nodes, seen, edges, i = {}, {}, 0, 3
for x = 1, n do
  local id, payload, d = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if not id or not payload or not d or d ~= math.floor(d) or d < 0 or d >= n then
    return redis.error_reply('EMQARG node ' .. x .. ': id, payload, d (0..n-1) expected')
  end
  if string.sub(id, 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
  if seen[id] then
    return redis.error_reply('EMQARG node ' .. x .. ': id given twice')
  end
  seen[id] = true
  local deps = {}
  i = i + 3
  for _ = 1, d do
    local j, pol = tonumber(ARGV[i]), ARGV[i + 1]
    if not j or j ~= math.floor(j) or j < 1 or j > n or j == x then
      return redis.error_reply('EMQARG node ' .. x .. ': a dependency must be another node 1..n')
    end
    if pol ~= 'f' and pol ~= 'i' and pol ~= 'c' then
      return redis.error_reply("EMQARG node " .. x .. ": policy must be 'f', 'i' or 'c'")
    end
    deps[#deps + 1] = {j, pol}
    i = i + 2
  end
  edges = edges + d
  if edges > 10000 then
    return redis.error_reply('EMQARG more than 10000 dependencies')
  end
  nodes[x] = {id = id, payload = payload, deps = deps}
end
if i ~= #ARGV + 1 then
  return redis.error_reply('EMQARG flow_submit: arguments left over or missing')
end
-- Acyclic: Kahn's algorithm over the edges dependency -> dependent.
local indeg, kids = {}, {}
for x = 1, n do indeg[x] = 0; kids[x] = {} end
for x = 1, n do
  local once = {}
  for _, dp in ipairs(nodes[x].deps) do
    if once[dp[1]] then
      return redis.error_reply('EMQARG node ' .. x .. ': a dependency given twice')
    end
    once[dp[1]] = true
    indeg[x] = indeg[x] + 1
    table.insert(kids[dp[1]], x)
  end
end
local queue, head, done, deg = {}, 1, 0, {}
for x = 1, n do
  deg[x] = indeg[x]
  if deg[x] == 0 then queue[#queue + 1] = x end
end
while head <= #queue do
  local x = queue[head]
  head = head + 1
  done = done + 1
  for _, y in ipairs(kids[x]) do
    deg[y] = deg[y] - 1
    if deg[y] == 0 then queue[#queue + 1] = y end
  end
end
if done < n then
  return redis.error_reply('EMQFLOW cycle: ' .. (n - done) .. ' nodes are on or behind a cycle')
end
if call('EXISTS', base .. 'flow:' .. f) == 1 then
  return redis.error_reply('EMQFLOW exists: the flow id is taken')
end
for x = 1, n do
  if call('EXISTS', base .. 'job:' .. nodes[x].id) == 1 then
    return redis.error_reply('EMQFLOW exists: node ' .. x .. ' names a job that exists')
  end
end
-- Write.
call('HSET', base .. 'flow:' .. f, 'state', 'running', 'total', n, 'left', n, 'failed', 0)
for x = 1, n do
  local nd = nodes[x]
  local row = base .. 'job:' .. nd.id
  call('RPUSH', base .. 'flowjobs:' .. f, nd.id)
  call('HSET', base .. 'flowjob', nd.id, f)
  if #kids[x] > 0 then
    local ks = {}
    for _, y in ipairs(kids[x]) do ks[#ks + 1] = nodes[y].id end
    call('RPUSH', base .. 'flowkids:' .. nd.id, unpack(ks))
  end
  if indeg[x] == 0 then
    call('HSET', row, 'state', 'pending', 'attempts', '0', 'payload', nd.payload)
    call('ZADD', KEYS[1], 0, nd.id)
  else
    call('HSET', row, 'state', 'delayed', 'attempts', '0', 'payload', nd.payload)
    call('ZADD', KEYS[2], PARK, nd.id)
    call('HSET', base .. 'flowwait', nd.id, indeg[x])
    for _, dp in ipairs(nd.deps) do
      call('HSET', base .. 'flowpol:' .. nd.id, nodes[dp[1]].id, dp[2])
    end
  end
end
return 1
