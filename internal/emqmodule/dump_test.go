package emqmodule

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// dumpLua returns {TIME, {{key, type, pttl, content}, ...}} for every key:
// one round trip however large the dataset.
const dumpLua = `
local out, seen = {}, {}
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    if not seen[k] then
      seen[k] = true
      local t = redis.call('TYPE', k).ok
      local item = {k, t, redis.call('PTTL', k), {}}
      if t == 'hash' then item[4] = redis.call('HGETALL', k)
      elseif t == 'zset' then item[4] = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
      elseif t == 'string' then item[4] = {redis.call('GET', k)} end
      out[#out + 1] = item
    end
  end
until cursor == '0'
return {redis.call('TIME'), out}
`

// fastDump is dump in one script call.
func (s *side) fastDump(t testing.TB) map[string]string { return s.dumpWith(t, false) }

// exactDump is fastDump with every score exact and expiries as absolute
// times (PEXPIRETIME is not in Redis 7.0: the TTL, rounded to a minute):
// for a replica, which holds the primary's very numbers.
func (s *side) exactDump(t testing.TB) map[string]string { return s.dumpWith(t, true) }

func (s *side) dumpWith(t testing.TB, exact bool) map[string]string {
	t.Helper()
	v := s.must(t, "EVAL_RO", dumpLua, "0")
	var now int64
	fmt.Sscan(v.Elems[0].Elems[0].Text(), &now)
	var us int64
	fmt.Sscan(v.Elems[0].Elems[1].Text(), &us)
	now = now*1000 + us/1000
	out := make(map[string]string, len(v.Elems[1].Elems))
	for _, it := range v.Elems[1].Elems {
		key, typ, ttl, c := it.Elems[0].Text(), it.Elems[1].Text(), it.Elems[2].Int, it.Elems[3].Elems
		var b strings.Builder
		b.WriteString(typ)
		switch typ {
		case "string":
			fmt.Fprintf(&b, " %q", c[0].Str)
		case "hash":
			var kv []string
			for i := 0; i+1 < len(c); i += 2 {
				kv = append(kv, fmt.Sprintf("%q=%q", c[i].Str, c[i+1].Str))
			}
			sort.Strings(kv)
			b.WriteString(" " + strings.Join(kv, " "))
		case "zset":
			// By member: times a little apart on the two servers may order
			// members of one class differently.
			var ms []string
			for i := 0; i+1 < len(c); i += 2 {
				sc := scoreClass(c[i+1].Text(), now)
				if exact {
					sc = c[i+1].Text()
				}
				ms = append(ms, fmt.Sprintf("%q@%s", c[i].Str, sc))
			}
			sort.Strings(ms)
			b.WriteString(" " + strings.Join(ms, " "))
		}
		if ttl >= 0 && exact {
			fmt.Fprintf(&b, " expires~%d", (now+ttl)/60000)
		} else if ttl >= 0 {
			fmt.Fprintf(&b, " ttl~%s", timeClass(float64(ttl)))
		}
		out[key] = b.String()
	}
	return out
}
