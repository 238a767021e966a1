-- flow_submit (extension, flows): admit a DAG of jobs in one step. A job
-- with no dependency is pending at once; the others wait parked (state
-- delayed, in delayed at 9007199254740991, never due) until every
-- dependency has resolved.
-- KEYS[1]  pending   emq:{q}:pending
-- KEYS[2]  delayed   emq:{q}:delayed
-- KEYS[3]  base      emq:{q}:   declared root of job:<id>, flow:<f>,
--                    flowjobs:<f>, flowjob, flowkids:<id>,
--                    flowedge:<f>, flowwait, flowroots:<f>; every
--                    write for many ids is one call per 1000 values
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
-- then per entry     id, kind ('n' a new node, 'N' a new node whose
--                    dependencies go on in '+' entries of later parts
--                    (its dependencies are kept in flowedge for their
--                    duplicate check), '+' more dependencies of a
--                    node of this flow given before: one sent as 'N', a
--                    new node whose dependencies continue in '+'
--                    entries), payload, d (0..10000),
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
local PARKS = '9007199254740991' -- the score as ZADD reads it (no number to format per member)
local KIDS = 8 -- dependents kept inline in flowjob's value; more are listed
local call, base = redis.call, KEYS[3]
-- Locals, not globals, on the per-node and per-dependency paths (a global
-- is a table lookup each time in Lua 5.1).
local ARGV, tonumber, floor = ARGV, tonumber, math.floor
local byte, match, concat = string.byte, string.match, table.concat

-- bulk calls cmd key with the values a[1..#a], 1000 at a time (pairs
-- stay whole: 1000 is even).
local function bulk(cmd, key, a)
  for i = 1, #a, 1000 do
    call(cmd, key, unpack(a, i, math.min(#a, i + 999)))
  end
end
-- anyRow reports whether one of the rows of ids exists (EXISTS, 1000
-- keys a call), and which (the first, by index); else nil and the rows'
-- keys (write takes them).
local function anyRow(ids)
  local keys = {}
  for i = 1, #ids do keys[i] = base .. 'job:' .. ids[i] end
  for i = 1, #keys, 1000 do
    if call('EXISTS', unpack(keys, i, math.min(#keys, i + 999))) > 0 then
      for x = i, math.min(#keys, i + 999) do
        if call('EXISTS', keys[x]) == 1 then return x end
      end
    end
  end
  return nil, keys
end
-- mget reads fields of hash key, 1000 a call, into one list.
local function mget(key, fields)
  if #fields <= 1000 then -- one call: its reply is the list (no copy)
    return #fields > 0 and call('HMGET', key, unpack(fields)) or {}
  end
  local out = {}
  for i = 1, #fields, 1000 do
    local v = call('HMGET', key, unpack(fields, i, math.min(#fields, i + 999)))
    for x = 1, #v do out[#out + 1] = v[x] end
  end
  return out
end

-- write stores the nodes N and the edges E of flow f, each a table of
-- parallel arrays (no table per node or edge: a table each was most of
-- the script's own time on a 10,000-node flow). N.n nodes x: N.id[x],
-- N.pay[x] (false: a '+' entry), N.d[x] (its dependencies: its count in
-- flowwait, a root at 0; a '+' entry's more dependencies), N.s[x] (1
-- single: its one dependency is local, no count, written '!<id>' in the
-- parent's dependents; 2 split: staged over several parts; else false).
-- E.n edges k: E.kid[k], E.dep[k], E.pol[k] (policy), E.par[k] (a local
-- dependency's id, else false), E.rec[k] (kept in flowedge even when the
-- policy is 'f'), E.at[k] (a '+' entry's index, else false), E.x[k] (the
-- index of its node, kid: single when N.s[E.x[k]] is 1). Writes: rows,
-- flowjobs, flowjob ('f' or 'f <dependents>', the dependents
-- ','-joined up to KIDS, else '*' and the list flowkids:<id>; old holds
-- the values of parents given in earlier parts), flowwait, flowedge.
-- park: roots are parked too and listed in flowroots (a staged flow).
-- rows: the row keys of the nodes with a payload, in their order.
local function write(f, N, E, park, old, rows)
  local nId, nPay, nD, nS = N.id, N.pay, N.d, N.s
  local eKid, eDep, ePol, ePar, eRec = E.kid, E.dep, E.pol, E.par, E.rec
  local eX, adds, parents = E.x, {}, {}
  -- (counters, not #t: a part appends thousands of values)
  local fj, fjob, pend, del, wait, roots = {}, {}, {}, {}, {}, {}
  local r, nj, np, nd2 = 0, 0, 0, 0
  local pol, listed = {}, {}
  for k = 1, E.n do
    local p = ePar[k]
    if p then
      -- a parent's new dependents: the one as a string (a fan-in's
      -- dependency: no table), a list from the second
      local a, kid = adds[p], eKid[k]
      kid = nS[eX[k]] == 1 and '!' .. kid or kid
      if not a then
        adds[p] = kid
        parents[#parents + 1] = p
      elseif type(a) == 'string' then
        adds[p] = {a, kid}
      else
        a[#a + 1] = kid
      end
    end
  end
  -- the flowjob value of each parent: 'f' and its dependents
  local val = {}
  for _, p in ipairs(parents) do
    -- old[p]: nil (new), f (no dependents yet: no match) or 'f <dependents>'
    local a, o = adds[p], old[p]
    if o and o ~= f and type(a) == 'string' then a = {a} end
    o = o and o ~= f and match(o, '^[^ ]* ?(.*)$') or ''
    if o == '' and type(a) == 'string' and old[p] then
      -- its one dependent, inline; a node of an earlier part (a fan-in's
      -- dependency): its value goes out at once (no val entry)
      fjob[nj + 1] = p
      fjob[nj + 2] = f .. ' ' .. a
      nj = nj + 2
    elseif o == '' and type(a) == 'string' then
      val[p] = f .. ' ' .. a -- its one dependent, inline
    elseif o == '*' then
      bulk('RPUSH', base .. 'flowkids:' .. p, a)
      val[p] = false
      listed[p] = true
    else
      local all = a
      if o ~= '' then
        all = {}
        for k in string.gmatch(o, '[^,]+') do all[#all + 1] = k end
        for _, k in ipairs(a) do all[#all + 1] = k end
      end
      if #all <= KIDS then
        val[p] = f .. ' ' .. (#all == 1 and all[1] or concat(all, ','))
      else
        bulk('RPUSH', base .. 'flowkids:' .. p, all)
        val[p] = f .. ' *'
        listed[p] = true
        -- listed now: the edges of its earlier dependents go to flowedge
        -- (as 'f' where none is kept), for the check of later parts
        local fs = {}
        for x = 1, #all - #a do
          local k = all[x]
          if string.byte(k, 1) == 33 then k = string.sub(k, 2) end
          fs[#fs + 1] = k .. '>' .. p
        end
        if #fs > 0 then
          local have = call('HMGET', base .. 'flowedge:' .. f, unpack(fs))
          for x, fld in ipairs(fs) do
            if not have[x] then
              pol[#pol + 1] = fld
              pol[#pol + 1] = 'f'
            end
          end
        end
      end
    end
  end
  for k = 1, E.n do
    if ePol[k] ~= 'f' or (eRec[k] and (not ePar[k] or listed[ePar[k]])) then
      pol[#pol + 1] = eKid[k] .. '>' .. eDep[k]
      pol[#pol + 1] = ePol[k]
    end
  end
  for x = 1, N.n do
    local id, d, sx = nId[x], nD[x], nS[x]
    if nPay[x] then
      r = r + 1
      fj[r] = id
      fjob[nj + 1] = id
      local v = val[id]
      if v then
        fjob[nj + 2] = v
        val[id] = false
      else
        fjob[nj + 2] = f
      end
      nj = nj + 2
      local st = 'delayed'
      if d == 0 and not park then
        st = 'pending'
        pend[np + 1] = 0
        pend[np + 2] = id
        np = np + 2
      else
        del[nd2 + 1] = PARKS
        del[nd2 + 2] = id
        nd2 = nd2 + 2
        if d == 0 then roots[#roots + 1] = id end
      end
      call('HSET', rows[r], 'state', st, 'attempts', '0', 'payload', nPay[x])
      if sx == 2 then
        pol[#pol + 1] = id .. '>'
        pol[#pol + 1] = 'N'
      end
      if sx ~= 1 and (d > 0 or park) then
        wait[#wait + 1] = id
        wait[#wait + 1] = d
      end
    elseif d > 0 then
      call('HINCRBY', base .. 'flowwait', id, d)
    end
  end
  for _, p in ipairs(parents) do
    if val[p] then
      fjob[nj + 1] = p
      fjob[nj + 2] = val[p]
      nj = nj + 2
    end
  end
  bulk('RPUSH', base .. 'flowjobs:' .. f, fj)
  bulk('HSET', base .. 'flowjob', fjob)
  bulk('ZADD', KEYS[1], pend)
  bulk('ZADD', KEYS[2], del)
  bulk('HSET', base .. 'flowwait', wait)
  bulk('RPUSH', base .. 'flowroots:' .. f, roots)
  bulk('HSET', base .. 'flowedge:' .. f, pol)
end

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
  -- Parse and check the part's shape; what needs the server (ids taken,
  -- nodes of this flow, dependencies given in an earlier part) is
  -- gathered and checked below, in a few calls for the whole part.
  local nId, nPay, nD, nS = {}, {}, {}, {}
  local eKid, eDep, ePol, ePar, eRec, eAt, eX = {}, {}, {}, {}, {}, {}, {}
  local seen, idx, total, i = {}, {}, 0, 5
  local once = {} -- kid -> {dep -> true}: given in this part
  local newIds, newAt = {}, {}   -- 'n' and 'N' entries: must be new
  local mine, mineAt = {}, {}    -- ids that must be nodes of this flow
                                 -- (each once, at its first entry)
  local inMine = {}
  local again, againAt = {}, {}  -- '<kid>>' of '+' entries (split), then
                                 -- '<kid>><dep>' (must be new)
  local nn, nm, na, ne = 0, 0, 0, 0 -- their lengths, and edges' (not #t)
  for x = 1, n do
    local id, kind, payload, d = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
    if not id or (kind ~= 'n' and kind ~= 'N' and kind ~= '+') or not payload or not d or
        d ~= floor(d) or d < 0 or d > 10000 then
      return redis.error_reply('EMQARG entry ' .. x .. ': id, kind, payload, d expected')
    end
    local j1, j2, j3 = byte(id, 1, 3)
    if j1 ~= 74 or j2 ~= 79 or j3 ~= 66 then -- 'JOB'
      return redis.error_reply('EMQKIND job id must be JOB-namespaced')
    end
    if kind ~= '+' then
      if seen[id] then
        return redis.error_reply('EMQARG entry ' .. x .. ': id given twice')
      end
      seen[id] = true
      idx[x] = id
      nn = nn + 1
      newIds[nn] = id
      newAt[nn] = x
    elseif seen[id] then
      return redis.error_reply('EMQARG entry ' .. x .. ': more dependencies of a node not in an earlier part')
    else
      if not inMine[id] then
        inMine[id] = true
        nm = nm + 1
        mine[nm] = id
        mineAt[nm] = -x
      end
      na = na + 1
      again[na] = id .. '>'
      againAt[na] = -x
    end
    i = i + 4
    local local1 = false
    for _ = 1, d do
      local ref, pol = ARGV[i], ARGV[i + 1]
      if pol ~= 'f' and pol ~= 'i' and pol ~= 'c' then
        return redis.error_reply("EMQARG entry " .. x .. ": policy must be 'f', 'i' or 'c'")
      end
      -- a ref is an index (a digit first), a remote job ('emq:...') or an
      -- id (tonumber and string.sub only when it may be one of the first two)
      local b1 = ref and byte(ref, 1)
      local j, dep, parent = b1 and b1 >= 48 and b1 <= 57 and tonumber(ref), nil, nil
      if j then
        if j ~= floor(j) or j < 1 or j >= x or not idx[j] then
          return redis.error_reply('EMQARG entry ' .. x .. ': a dependency must be an earlier new node')
        end
        dep = idx[j]
        parent = dep
        local1 = true
      elseif b1 == 101 and string.sub(ref, 1, 4) == 'emq:' and string.find(ref, '}:JOB', 1, true) then
        -- a job of another queue (its base .. id): its end is relayed
        -- (flow_complete 'e'); nothing of its slot is touched here
        if string.sub(ref, 1, #base) == base then
          return redis.error_reply('EMQARG entry ' .. x .. ': a remote dependency names this queue')
        end
        dep = ref
      else
        if not ref or seen[ref] then
          return redis.error_reply('EMQARG entry ' .. x .. ': a dependency must be a node of the flow given before')
        end
        dep = ref
        parent = ref
        local1 = true
        if not inMine[ref] then
          inMine[ref] = true
          nm = nm + 1
          mine[nm] = ref
          mineAt[nm] = x
        end
      end
      -- a new node's one dependency cannot repeat (its id is new)
      if d > 1 or kind == '+' then
        local o = once[id]
        if not o then
          o = {}
          once[id] = o
        elseif o[dep] then
          return redis.error_reply('EMQARG entry ' .. x .. ': a dependency given twice')
        end
        o[dep] = true
      end
      ne = ne + 1
      eKid[ne], eDep[ne], ePol[ne], ePar[ne] = id, dep, pol, parent or false
      eRec[ne], eAt[ne], eX[ne] = kind ~= 'n', kind == '+' and x, x
      i = i + 2
    end
    total = total + d
    if total > 10000 then
      return redis.error_reply('EMQARG more than 10000 dependencies')
    end
    nId[x], nD[x] = id, d
    if kind ~= '+' then
      nPay[x] = payload
      nS[x] = kind == 'N' and 2 or (kind == 'n' and d == 1 and local1 and 1) or false
    else
      nPay[x], nS[x] = false, false
    end
  end
  if i ~= #ARGV + 1 then
    return redis.error_reply('EMQARG flow_submit: arguments left over or missing')
  end
  local x, rows = anyRow(newIds)
  if x then
    return redis.error_reply('EMQFLOW exists: entry ' .. newAt[x] .. ' names a job that exists')
  end
  for k, v in ipairs(mget(base .. 'flowjob', newIds)) do
    if v then
      return redis.error_reply('EMQFLOW exists: entry ' .. newAt[k] .. ' names a job that exists')
    end
  end
  local old, uniq, uniqAt = {}, mine, mineAt
  for k, v in ipairs(mget(base .. 'flowjob', uniq)) do
    if not v or (v ~= f and match(v, '^[^ ]*') ~= f) then
      if uniqAt[k] < 0 then
        return redis.error_reply('EMQARG entry ' .. -uniqAt[k] .. ': more dependencies of a node not in an earlier part')
      end
      return redis.error_reply('EMQARG entry ' .. uniqAt[k] .. ': a dependency must be a node of the flow given before')
    end
    old[uniq[k]] = v
  end
  -- A dependency of a '+' entry must be new: not among the dependents of
  -- its parent when they are inline, else not in flowedge (kept there
  -- for a parent with listed dependents, a remote one, a policy not 'f').
  local inl = {} -- parent -> its inline dependents ('' none), read once
  for k = 1, ne do
    local at = eAt[k]
    if at then
      local p = ePar[k]
      local kids = p and inl[p]
      if kids == nil and p then
        local ov = old[p]
        if ov == f then
          kids = false -- no dependents yet (the common case: not cached)
        elseif ov then
          kids = match(ov, '^[^ ]* (.*)$') or false
          inl[p] = kids
        end
      end
      if kids and kids ~= '*' then
        if string.find(',' .. kids .. ',', ',' .. eKid[k] .. ',', 1, true) then
          return redis.error_reply('EMQARG entry ' .. at .. ': a dependency given twice')
        end
      elseif not p or kids == '*' then
        na = na + 1
        again[na] = eKid[k] .. '>' .. eDep[k]
        againAt[na] = at
      end
    end
  end
  for k, v in ipairs(mget(base .. 'flowedge:' .. f, again)) do
    if againAt[k] < 0 and v ~= 'N' then
      return redis.error_reply('EMQARG entry ' .. -againAt[k] .. ': more dependencies of a node not sent as N')
    elseif againAt[k] > 0 and v then
      return redis.error_reply('EMQARG entry ' .. againAt[k] .. ': a dependency given twice')
    end
  end
  if first == '1' then
    call('HSET', fk, 'state', 'staging', 'total', 0, 'left', 0, 'failed', 0)
  end
  write(f, {n = n, id = nId, pay = nPay, d = nD, s = nS},
    {n = ne, kid = eKid, dep = eDep, pol = ePol, par = ePar, rec = eRec, at = eAt, x = eX}, true, old, rows)
  call('HINCRBY', fk, 'total', #newIds)
  call('HINCRBY', fk, 'left', #newIds)
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
local nodes, seen, total, i = {}, {}, 0, 3
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
  total = total + d
  if total > 10000 then
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
local ids = {}
for x = 1, n do ids[x] = nodes[x].id end
local taken, rows = anyRow(ids)
if taken then
  return redis.error_reply('EMQFLOW exists: node ' .. taken .. ' names a job that exists')
end
-- Write.
call('HSET', base .. 'flow:' .. f, 'state', 'running', 'total', n, 'left', n, 'failed', 0)
local N = {n = n, id = ids, pay = {}, d = indeg, s = {}}
local E = {n = 0, kid = {}, dep = {}, pol = {}, par = {}, rec = {}, at = {}, x = {}}
for x = 1, n do
  local nd = nodes[x]
  N.pay[x] = nd.payload
  N.s[x] = indeg[x] == 1 and 1 or false
  for _, dp in ipairs(nd.deps) do
    local k = E.n + 1
    E.n = k
    E.kid[k], E.dep[k], E.pol[k], E.par[k] = nd.id, ids[dp[1]], dp[2], ids[dp[1]]
    E.rec[k], E.at[k], E.x[k] = false, false, x
  end
end
write(f, N, E, false, {}, rows)
return 1
