package emqmodule

import (
	"strings"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/stretchr/testify/require"
)

// aclUsers are ACL users of queue a: the (its sets and base only),
// one without the rows, one that may only read them, one with one row,
// one with the whole queue; each but the first may read the fence.
var aclUsers = map[string][]string{
	"sets":     {"~emq:{a}:pending", "~emq:{a}:active", "~emq:{a}:"},
	"norows":   {"~emq:{a}:pending", "~emq:{a}:active", "~emq:{a}:delayed", "~emq:{a}:dead", "~emq:{a}:meta", "~emq:{a}:", "%R~{emq}:version"},
	"readrows": {"~emq:{a}:pending", "~emq:{a}:active", "~emq:{a}:delayed", "~emq:{a}:dead", "~emq:{a}:meta", "~emq:{a}:", "%R~{emq}:version", "%R~emq:{a}:job:*"},
	"onerow":   {"~emq:{a}:pending", "~emq:{a}:active", "~emq:{a}:delayed", "~emq:{a}:dead", "~emq:{a}:meta", "~emq:{a}:", "%R~{emq}:version", "~emq:{a}:job:JOB0000000000A"},
	"nometa":   {"~emq:{a}:pending", "~emq:{a}:active", "~emq:{a}:delayed", "~emq:{a}:dead", "~emq:{a}:", "%R~{emq}:version", "~emq:{a}:job:*"},
	"full":     {"~emq:{a}:*", "%R~{emq}:version"},
}

// userSide is s's server, connected as user (the scripts s loaded).
func userSide(t *testing.T, s *side, addr, user string) *side {
	t.Helper()
	c, err := conn.Dial(tctx(t), conn.Options{Addr: addr, Username: user, Password: "pw"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &side{name: s.name + " as " + user, c: c, native: s.native, shas: s.shas}
}

// TestACL: the keys a transition derives (rows, meta) are checked against
// the caller's ACL as the script's redis.call checks them: wherever the
// script is refused, the module is (NOPERM), and wherever the script
// runs, the module runs to the same reply and dataset. Where the script
// is refused after a write of its own (a claim's pop, an earlier row of a
// batch), the module is refused before any: then its dataset is the one
// before the call (module/README.md).
func TestACL(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	for u, pats := range aclUsers {
		args := append([]string{"ACL", "SETUSER", u, "reset", "on", ">pw", "+@all"}, pats...)
		onBoth(t, scr, nat, args...)
		t.Cleanup(func() { scr.raw(t, "ACL", "DELUSER", u); nat.raw(t, "ACL", "DELUSER", u) })
	}
	q := qk("a")
	p, a, d, x := q.sets()
	ja, jb, jc, jd, je := "JOB0000000000A", "JOB0000000000B", "JOB0000000000C", "JOB0000000000D", "JOB0000000000E"
	// A and B claimed (token 1), C pending, D delayed and due, a ghost G
	// first in pending, meta not paused.
	setup := func() {
		onBoth(t, scr, nat, "DEL", p, a, d, x, q.meta(), q.row(ja), q.row(jb), q.row(jc), q.row(jd), q.row(je))
		for _, id := range []string{ja, jb, jc} {
			onBoth(t, scr, nat, "HSET", q.row(id), "state", "pending", "attempts", "0", "payload", "p"+id)
			onBoth(t, scr, nat, "ZADD", p, "0", id)
		}
		bothN(t, scr, nat, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "2"}, ""})
		onBoth(t, scr, nat, "HSET", q.row(jd), "state", "delayed", "attempts", "0", "payload", "pd")
		onBoth(t, scr, nat, "ZADD", d, "1", jd)
		onBoth(t, scr, nat, "ZADD", p, "0", "JOB000000000")
		onBoth(t, scr, nat, "HSET", q.meta(), "paused", "0")
	}
	steps := []step{
		{"enqueue", []string{q.row(je), p}, []string{je, "x"}, ""},
		{"enqueue_at", []string{q.row(je), d}, []string{je, "x", "5"}, ""},
		{"enqueue_batch", []string{p, q.base()}, []string{je, "x"}, ""},
		{"enqueue_batch", []string{p, q.base()}, []string{ja, "x", je, "y"}, ""},
		{"enqueue_batch", []string{p, q.base()}, []string{ja, "x"}, ""},
		{"claim", []string{p, a, q.base()}, []string{"500000000"}, ""},
		{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "5"}, ""},
		{"complete", []string{a, q.row(ja)}, []string{ja, "1", "0"}, ""},
		{"complete_batch", []string{a, q.base()}, []string{"0", ja, "1", jb, "1"}, ""},
		{"complete_batch", []string{a, q.base()}, []string{"500000000", jb, "1"}, ""},
		{"complete_batch", []string{a, q.base()}, []string{"500000000", ja, "9", jb, "9"}, ""},
		{"retry", []string{a, q.row(ja), p, d, x}, []string{ja, "1", "0", "3", "e"}, ""},
		{"extend", []string{a, q.row(ja)}, []string{ja, "1", "600000000"}, ""},
		{"promote", []string{d, p, q.base()}, []string{"10"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "5", "0", "2", "0", "0", ja, "1", jb, "1"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "0", "0", "0", "1", "1", jb, "1", "0", "3", "e", ja, "1"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "0", "0", "1", "0", "0", ja, "9"}, ""},
		{"settle_claim", []string{p, a, d, x, q.base()}, []string{"500000000", "2", "0", "0", "0", "0"}, ""},
	}
	refused := map[string]int{}
	for _, u := range []string{"sets", "norows", "readrows", "onerow", "nometa", "full"} {
		us, un := userSide(t, scr, s.Addr, u), userSide(t, nat, n.Addr, u)
		for _, st := range steps {
			setup()
			before := nat.fastDump(t)
			got := bothN(t, us, un, st)
			what := u + ": " + st.name + " " + strings.Join(st.args, " ") + " -> " + got
			if strings.Contains(got, "NOPERM") {
				refused[u]++
			}
			if d := diffDumps(scr.fastDump(t), nat.fastDump(t)); len(d) > 0 {
				require.Equal(t, `ERR("NOPERM")`, got, "%s: datasets differ, and not on a refusal:\n%s", what, strings.Join(d, "\n"))
				if d2 := diffDumps(before, nat.fastDump(t)); len(d2) > 0 {
					t.Fatalf("%s: the module wrote before its refusal:\n%s", what, strings.Join(d2, "\n"))
				}
				t.Logf("%s: the script wrote before its refusal, the module did not", what)
			}
		}
	}
	t.Logf("refusals by user: %v", refused)
	require.Equal(t, len(steps), refused["sets"], "the issue's user is refused every transition")
	require.Equal(t, len(steps), refused["norows"], "every transition reads a row")
	require.Zero(t, refused["full"])
	for _, u := range []string{"readrows", "onerow", "nometa"} {
		require.NotZero(t, refused[u], u)
		require.Less(t, refused[u], len(steps), u)
	}

	// The refusal is logged as the server logs a command's, the key named.
	nat.must(t, "ACL", "LOG", "RESET")
	setup()
	un := userSide(t, nat, n.Addr, "norows")
	require.Equal(t, `ERR("NOPERM")`, norm(un.run(t, true, "claim_batch", []string{p, a, q.base()}, []string{"500000000", "5"})))
	c2, err := conn.Dial(tctx(t), conn.Options{Addr: n.Addr, Protocol: 2})
	require.NoError(t, err)
	defer c2.Close()
	lv, err := c2.Do(tctx(t), "ACL", "LOG")
	require.NoError(t, err)
	log := render(lv)
	require.Contains(t, log, `"emq:{a}:job:JOB000000000"`, "the refused row in ACL LOG")
	require.Contains(t, log, `"module"`)
}

// TestACLFence: the module reads the fence, {emq}:version, which no script
// reads (the client reads it at Open): a user who may not read it is
// refused every transition by the module, nothing written.
func TestACLFence(t *testing.T) {
	_, n := pair(t)
	nat := newSide(t, "module", n.Addr, true)
	nat.must(t, "ACL", "SETUSER", "nofence", "reset", "on", ">pw", "+@all", "~emq:{a}:*")
	t.Cleanup(func() { nat.raw(t, "ACL", "DELUSER", "nofence") })
	q := qk("a")
	un := userSide(t, nat, n.Addr, "nofence")
	for _, c := range commands {
		keys := make([]string, len(c.keys))
		for i, k := range c.keys {
			keys[i] = q.key(k)
			if k == "job:" {
				keys[i] = q.row("JOB0000000000A")
			}
		}
		got := norm(un.run(t, true, c.name, keys, []string{"JOB0000000000A", "1", "1", "0", "0", "0"}))
		require.Equal(t, `ERR("NOPERM")`, got, c.name)
	}
	require.Equal(t, int64(0), nat.must(t, "EXISTS", q.row("JOB0000000000A"), q.pending(), q.active(), q.delayed()).Int,
		"nothing written")
	// The module's refusal is the server's own for a command, byte for byte.
	direct := render(un.raw(t, "GET", "{emq}:version"))
	require.Contains(t, direct, "NOPERM")
	require.Equal(t, direct, render(un.run(t, true, "claim", []string{q.pending(), q.active(), q.base()}, []string{"1"})))
}

// TestACLScriptCaller: a script's redis.call of an EMQ command is
// refused: the server names no user for a script's client, so the module
// could not check the keys it derives against the caller's ACL, and a
// script must not read through it what its caller may not.
func TestACLScriptCaller(t *testing.T) {
	_, n := pair(t)
	nat := newSide(t, "module", n.Addr, true)
	q := qk("lua")
	id := "JOB0000000000A"
	got := render(nat.raw(t, "EVAL", "return redis.call('EMQ.ENQUEUE', 2, KEYS[1], KEYS[2], ARGV[1], ARGV[2])", "2",
		q.row(id), q.pending(), id, "x"))
	require.Contains(t, got, "NOPERM", "a script's call of the module")
	require.Equal(t, int64(0), nat.must(t, "EXISTS", q.row(id), q.pending()).Int, "nothing written")
	require.Equal(t, "1", render(nat.run(t, true, "enqueue", []string{q.row(id), q.pending()}, []string{id, "x"})), "called directly")
}
