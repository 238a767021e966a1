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
-- Staged (a flow too large for one call, in bounded steps):
-- ARGV[1]  '+'
-- ARGV[2]  f         the flow's id
-- ARGV[3]  first     '1': the first part (the flow must be new; it is made
--                    in state 'staging'), '0': a later part (the flow must
--                    be staging)
-- ARGV[4]  n         integer 1..1000: the entries that follow
-- then per entry     id, kind ('n' a new node, '+' more dependencies of a
--                    node of this flow given before), payload, d (0..10000),
--                    then d pairs: ref, policy; ref is the index (1..x-1)
--                    of an earlier new node of this part, or the id of a
--                    node of this flow given in an earlier part, or a job
--                    of another queue named by its base and id
--                    ("emq:{other}:JOB..."), whose end the relay applies
--                    (flow_complete 'e'). So every dependency points
--                    backwards: no cycle can be made.
-- At most 10000 dependencies per part. Nothing of a staged flow runs
-- until flow_complete 'g' seals it (roots are parked too); flow_complete
-- '-' deletes a staged flow.
-- Replies (staged): 1 admitted; "EMQFLOW exists ...", "EMQFLOW not
-- staging", "EMQARG ...", "EMQKIND ..."; nothing written
-- Replies:
--   1   admitted: flow:<f> {state running, total n, left n, failed 0}
--   error "EMQFLOW cycle ...", "EMQFLOW exists ...", "EMQARG ...",
--         "EMQKIND ..."; nothing written
local PARK = 9007199254740991
local call, base = redis.call, KEYS[3]
if ARGV[1] == '+' then
  local f, first, n = ARGV[2], ARGV[3], tonumber(ARGV[4])
  if not f or #f < 1 or #f > 64 or (first ~= '0' and first ~= '1') then
    return redis.error_reply('EMQARG flow_submit +: f (1..64 bytes), first (0 or 1) expected')
  end
  if not n or n ~= math.floor(n) or n < 1 or n > 1000 then
    return redis.error_reply('EMQARG n must be an integer 1..1000')
  end
  local fk = base .. 'flow:' .. f
  local st = call('HGET', fk, 'state')
  if first == '1' and (st or call('EXISTS', fk) == 1) then
    return redis.error_reply('EMQFLOW exists: the flow id is taken')
  elseif first == '0' and st ~= 'staging' then
    return redis.error_reply('EMQFLOW not staging')
  end
  local ents, seen, idx, edges, i = {}, {}, {}, 0, 5
  for x = 1, n do
    local id, kind, payload, d = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
    if not id or (kind ~= 'n' and kind ~= '+') or not payload or not d or
        d ~= math.floor(d) or d < 0 or d > 10000 then
      return redis.error_reply('EMQARG entry ' .. x .. ': id, kind, payload, d expected')
    end
    if string.sub(id, 1, 3) ~= 'JOB' then
      return redis.error_reply('EMQKIND job id must be JOB-namespaced')
    end
    if kind == 'n' then
      if seen[id] then
        return redis.error_reply('EMQARG entry ' .. x .. ': id given twice')
      end
      if call('EXISTS', base .. 'job:' .. id) == 1 or call('HEXISTS', base .. 'flowjob', id) == 1 then
        return redis.error_reply('EMQFLOW exists: entry ' .. x .. ' names a job that exists')
      end
      seen[id] = true
      idx[x] = id
    elseif seen[id] or call('HGET', base .. 'flowjob', id) ~= f then
      return redis.error_reply('EMQARG entry ' .. x .. ': more dependencies of a node not in an earlier part')
    end
    i = i + 4
    local deps, once = {}, {}
    for _ = 1, d do
      local ref, pol = ARGV[i], ARGV[i + 1]
      if pol ~= 'f' and pol ~= 'i' and pol ~= 'c' then
        return redis.error_reply("EMQARG entry " .. x .. ": policy must be 'f', 'i' or 'c'")
      end
      local j, dep, remote = tonumber(ref), nil, false
      if j then
        if j ~= math.floor(j) or j < 1 or j >= x or not idx[j] then
          return redis.error_reply('EMQARG entry ' .. x .. ': a dependency must be an earlier new node')
        end
        dep = idx[j]
      elseif ref and string.sub(ref, 1, 4) == 'emq:' and string.find(ref, '}:JOB', 1, true) then
        -- a job of another queue (its base .. id): its end is relayed
        -- (flow_complete 'e'); nothing of its slot is touched here
        if string.sub(ref, 1, #base) == base then
          return redis.error_reply('EMQARG entry ' .. x .. ': a remote dependency names this queue')
        end
        dep = ref
        remote = true
      else
        if not ref or seen[ref] or call('HGET', base .. 'flowjob', ref) ~= f then
          return redis.error_reply('EMQARG entry ' .. x .. ': a dependency must be a node of the flow given before')
        end
        dep = ref
      end
      if once[dep] or (kind == '+' and call('HEXISTS', base .. 'flowpol:' .. id, dep) == 1) then
        return redis.error_reply('EMQARG entry ' .. x .. ': a dependency given twice')
      end
      once[dep] = true
      deps[#deps + 1] = {dep, pol, remote}
      i = i + 2
    end
    edges = edges + d
    if edges > 10000 then
      return redis.error_reply('EMQARG more than 10000 dependencies')
    end
    ents[x] = {id = id, kind = kind, payload = payload, deps = deps}
  end
  if i ~= #ARGV + 1 then
    return redis.error_reply('EMQARG flow_submit: arguments left over or missing')
  end
  if first == '1' then
    call('HSET', fk, 'state', 'staging', 'total', 0, 'left', 0, 'failed', 0)
  end
  local fresh = 0
  for _, e in ipairs(ents) do
    if e.kind == 'n' then
      fresh = fresh + 1
      call('RPUSH', base .. 'flowjobs:' .. f, e.id)
      call('HSET', base .. 'flowjob', e.id, f)
      call('HSET', base .. 'job:' .. e.id, 'state', 'delayed', 'attempts', '0', 'payload', e.payload)
      call('ZADD', KEYS[2], PARK, e.id)
      if #e.deps == 0 then call('RPUSH', base .. 'flowroots:' .. f, e.id) end
    end
    call('HINCRBY', base .. 'flowwait', e.id, #e.deps)
    for _, dp in ipairs(e.deps) do
      if not dp[3] then call('RPUSH', base .. 'flowkids:' .. dp[1], e.id) end
      call('HSET', base .. 'flowpol:' .. e.id, dp[1], dp[2])
    end
  end
  call('HINCRBY', fk, 'total', fresh)
  call('HINCRBY', fk, 'left', fresh)
  return 1
end
local f = ARGV[1]
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
