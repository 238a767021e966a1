package emqmodule

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"

	"github.com/stretchr/testify/require"
)

// qk builds a queue's keys as the client does.
type qk string

func (q qk) key(t string) string       { return "emq:{" + string(q) + "}:" + t }
func (q qk) row(id string) string      { return q.key("job:") + id }
func (q qk) base() string              { return q.key("") }
func (q qk) pending() string           { return q.key("pending") }
func (q qk) active() string            { return q.key("active") }
func (q qk) delayed() string           { return q.key("delayed") }
func (q qk) dead() string              { return q.key("dead") }
func (q qk) meta() string              { return q.key("meta") }
func (q qk) sets() (p, a, d, x string) { return q.pending(), q.active(), q.delayed(), q.dead() }

// step is one transition call of a scenario.
type step struct {
	name string
	keys []string
	args []string
	want string // the rendered reply both executors must give ("" unchecked)
}

// both runs st on the script server by EVALSHA and on the module server
// natively, and requires equal replies.
func both(t *testing.T, scr, nat *side, st step) string {
	t.Helper()
	a := render(scr.run(t, false, st.name, st.keys, st.args))
	b := render(nat.run(t, true, st.name, st.keys, st.args))
	require.Equal(t, a, b, "%s %q %q: script vs module", st.name, st.keys, st.args)
	if st.want != "" {
		require.Equal(t, st.want, a, "%s %q %q", st.name, st.keys, st.args)
	}
	return a
}

func sameData(t *testing.T, scr, nat *side) {
	t.Helper()
	if d := diffDumps(scr.dump(t), nat.dump(t)); len(d) > 0 {
		t.Fatalf("datasets differ (script vs module):\n%s", strings.Join(d, "\n"))
	}
}

// TestCoreTransitions runs each core transition through its outcomes on
// both executors: the same replies, byte for byte, and the same datasets.
func TestCoreTransitions(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) { coreTransitions(t, proto) })
	}
}

func coreTransitions(t *testing.T, proto int) {
	s, n := pair(t)
	scr, nat := newSideProto(t, "script", s.Addr, false, proto), newSideProto(t, "module", n.Addr, true, proto)
	q := qk("core")
	p, a, d, x := q.sets()
	enq := func(id, payload, want string) step {
		return step{"enqueue", []string{q.row(id), p}, []string{id, payload}, want}
	}
	claim := func(lease, want string) step { return step{"claim", []string{p, a, q.base()}, []string{lease}, want} }
	complete := func(id, tok, keep, want string) step {
		return step{"complete", []string{a, q.row(id)}, []string{id, tok, keep}, want}
	}
	retry := func(id, tok, delay, max, e, want string) step {
		return step{"retry", []string{a, q.row(id), p, d, x}, []string{id, tok, delay, max, e}, want}
	}
	promote := func(limit, want string) step {
		return step{"promote", []string{d, p, q.base()}, []string{limit}, want}
	}
	steps := []step{
		enq("JOB0000000000A", "pa", "1"),
		enq("JOB0000000000A", "other", "0"),
		enq("XOB0000000000A", "pa", `ERR("EMQKIND job id must be JOB-namespaced")`),
		enq("", "pa", `ERR("EMQKIND job id must be JOB-namespaced")`),
		enq("JOB0000000000B", "", "1"),
		enq("JOB0000000000C", "p\x00c\xff", "1"),
		claim("0", `ERR("EMQARG lease_ms must be an integer >= 1")`),
		claim("1.5", `ERR("EMQARG lease_ms must be an integer >= 1")`),
		claim("abc", `ERR("EMQARG lease_ms must be an integer >= 1")`),
		claim("9007199254740992", `ERR("EMQARG lease_ms must be an integer >= 1")`),
		claim("500000000", `["JOB0000000000A" "pa" 1]`),
		complete("JOB0000000000A", "2", "0", "0"),
		complete("JOB0000000000A", "01", "0", "0"),
		complete("JOB0000000000A", "1.0", "0", "0"),
		complete("JOB0000000000A", "1", "-1", `ERR("EMQARG retention_ms must be an integer >= 0")`),
		complete("JOB0000000000A", "1", "500000000", "1"),
		complete("JOB0000000000A", "1", "0", "0"),
		claim(" 0x1DCD6500 ", `["JOB0000000000B" "" 1]`),
		retry("JOB0000000000B", "1", "x", "3", "e", `ERR("EMQARG delay_ms must be an integer >= 0")`),
		retry("JOB0000000000B", "1", "0", "-3", "e", `ERR("EMQARG max_attempts must be an integer >= 0")`),
		retry("JOB0000000000B", "2", "0", "3", "e", "0"),
		retry("JOB0000000000B", "1", "0", "3", "boom", "1"),
		claim("5e8", `["JOB0000000000B" "" 2]`),
		retry("JOB0000000000B", "2", "500000000", "3", "again", "1"),
		promote("10", "0"),
		promote("-1", `ERR("EMQARG limit must be an integer >= 0")`),
		claim("500000000", `["JOB0000000000C" "p\x00c\xff" 1]`),
		retry("JOB0000000000C", "1", "0", "1", "dead now", "2"),
		claim("500000000", "[]"),
		complete("JOB0000000000C", "1", "0", "0"),
	}
	for _, st := range steps {
		both(t, scr, nat, st)
	}
	sameData(t, scr, nat)

	// A due delayed job is promoted; a ghost in delayed moves, no row minted.
	for _, sd := range []*side{scr, nat} {
		sd.must(t, "ZADD", d, "1", "JOB0000000000G")
		sd.must(t, "ZADD", d, "2", "JOB0000000000B")
	}
	both(t, scr, nat, promote("0", "0"))
	both(t, scr, nat, promote("1", "1"))
	both(t, scr, nat, promote("10", "1"))
	sameData(t, scr, nat)
	// The ghost is popped and dropped; then the promoted job is claimed.
	both(t, scr, nat, claim("500000000", `["JOB0000000000B" "" 3]`))
	both(t, scr, nat, claim("500000000", "[]"))
	sameData(t, scr, nat)

	// Pause is read inside the claim.
	both(t, scr, nat, enq("JOB0000000000D", "pd", "1"))
	for _, sd := range []*side{scr, nat} {
		sd.must(t, "HSET", q.meta(), "paused", "1")
	}
	both(t, scr, nat, claim("500000000", "[]"))
	for _, sd := range []*side{scr, nat} {
		sd.must(t, "HSET", q.meta(), "paused", "0")
	}
	both(t, scr, nat, claim("500000000", `["JOB0000000000D" "pd" 1]`))
	sameData(t, scr, nat)
}

// TestModuleChecks: what the module checks beyond the scripts, before any
// write: numkeys, the key layout, the fence, the types of what it writes.
func TestModuleChecks(t *testing.T) {
	_, n := pair(t)
	nat := newSide(t, "module", n.Addr, true)
	q := qk("chk")
	p, a, _, _ := q.sets()
	id := "JOB0000000000A"
	run := func(name string, keys, args []string) string { return render(nat.run(t, true, name, keys, args)) }

	require.Equal(t, `ERR("ERR EMQ.ENQUEUE takes numkeys 2")`, render(nat.raw(t, "EMQ.ENQUEUE", "1", q.row(id), id, "x")))
	require.Contains(t, run("enqueue", []string{q.row(id), "emq:{other}:pending"}, []string{id, "x"}), "EMQKEYS KEYS[1]")
	require.Contains(t, run("enqueue", []string{q.row("JOB0000000000Z"), p}, []string{id, "x"}), "EMQKEYS KEYS[1]")
	require.Contains(t, run("enqueue", []string{q.row(id), "emq:{chk}:active"}, []string{id, "x"}), "EMQKEYS KEYS[2]")
	require.Contains(t, run("claim", []string{p, a, "emq:chk:"}, []string{"1"}), "EMQKEYS")
	require.Contains(t, run("claim", []string{"emq:{}:pending", "emq:{}:active", "emq:{}:"}, []string{"1"}), "EMQKEYS")

	// The fence: absent, foreign, then a minor of 6.
	nat.must(t, "DEL", "{emq}:version")
	require.Equal(t, `ERR("EMQFENCE {emq}:version is not set: the module speaks echomq:6.0.0")`,
		run("enqueue", []string{q.row(id), p}, []string{id, "x"}))
	nat.must(t, "SET", "{emq}:version", "echomq:7.0.0")
	require.Equal(t, `ERR("EMQFENCE {emq}:version holds echomq:7.0.0, the module speaks echomq:6.0.0")`,
		run("enqueue", []string{q.row(id), p}, []string{id, "x"}))
	require.Equal(t, "0", render(nat.must(t, "EXISTS", q.row(id))), "nothing written past the fence")
	nat.must(t, "SET", "{emq}:version", "echomq:6.3.1")
	require.Equal(t, "1", run("enqueue", []string{q.row(id), p}, []string{id, "x"}))

	// A wrong type anywhere written: an error, and nothing written.
	nat.must(t, "SET", q.active(), "not a zset")
	require.Contains(t, run("claim", []string{p, a, q.base()}, []string{"1000"}), "WRONGTYPE")
	require.Equal(t, "1", render(nat.must(t, "ZCARD", p)), "the pop did not happen")
	require.Equal(t, `"0"`, render(nat.must(t, "HGET", q.row(id), "attempts")))
	nat.must(t, "DEL", q.active())
	nat.must(t, "SET", q.row("JOB0000000000B"), "a string row")
	nat.must(t, "ZADD", p, "0", "JOB0000000000B")
	require.Contains(t, run("claim_batch", []string{p, a, q.base()}, []string{"1000", "5"}), "WRONGTYPE")
	require.Equal(t, "2", render(nat.must(t, "ZCARD", p)))
	require.Equal(t, `"0"`, render(nat.must(t, "HGET", q.row(id), "attempts")))

	// Keys of another queue in one call: refused.
	require.Contains(t, run("settle_claim", []string{p, a, "emq:{x}:delayed", q.dead(), q.base()},
		[]string{"1000", "1", "0", "0", "0", "0"}), "EMQKEYS KEYS[3]")
}

// TestSettleClaimAgain: an id completed in a settle_claim and claimed again
// by the same call stays in active (as if it had left first), on both
// executors. It needs an id in pending and active at once, which only a
// hand-made dataset has.
func TestSettleClaimAgain(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	q := qk("again")
	p, a, d, x := q.sets()
	id := "JOB0000000000A"
	both(t, scr, nat, step{"enqueue", []string{q.row(id), p}, []string{id, "pa"}, "1"})
	both(t, scr, nat, step{"enqueue", []string{q.row("JOB0000000000B"), p}, []string{"JOB0000000000B", "pb"}, "1"})
	both(t, scr, nat, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "2"},
		`["JOB0000000000A" "pa" 1 "JOB0000000000B" "pb" 1]`})
	for _, sd := range []*side{scr, nat} {
		sd.must(t, "ZADD", p, "0", id)
	}
	both(t, scr, nat, step{"settle_claim", []string{p, a, d, x, q.base()},
		[]string{"500000000", "5", "500000000", "2", "0", "0", id, "1", "JOB0000000000B", "1"},
		`[[1 1] ["JOB0000000000A" "pa" 2]]`})
	sameData(t, scr, nat)
	require.Equal(t, "1", render(nat.must(t, "ZCARD", a)), "the id claimed again stays in active")
}

// TestSettleClaimPastDeleted: a settle_claim whose completion deletes
// (retention 0) a row that is also the head of pending: the claim pops it
// as a ghost and, its walk of pending used up one row short, goes on from
// pending's head; a release of the deleted row in the same call is stale.
// The module shares one handle per row within a call (the completion's
// delete, the claim's pop and the release all see the same key): both
// executors must answer and leave the same.
func TestSettleClaimPastDeleted(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	q := qk("pastdel")
	p, a, d, x := q.sets()
	ja, jb, jc := "JOB0000000000A", "JOB0000000000B", "JOB0000000000C"
	for _, id := range []string{ja, jb, jc} {
		both(t, scr, nat, step{"enqueue", []string{q.row(id), p}, []string{id, "p" + id[len(id)-1:]}, "1"})
	}
	both(t, scr, nat, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "1"}, `["JOB0000000000A" "pA" 1]`})
	for _, sd := range []*side{scr, nat} {
		sd.must(t, "ZADD", p, "0", ja)
	}
	both(t, scr, nat, step{"settle_claim", []string{p, a, d, x, q.base()},
		[]string{"500000000", "2", "0", "1", "0", "1", ja, "1", ja, "1"},
		`[[1 0] ["JOB0000000000B" "pB" 1 "JOB0000000000C" "pC" 1]]`})
	sameData(t, scr, nat)
	require.Equal(t, "0", render(nat.must(t, "EXISTS", q.row(ja))), "the completed row is deleted")
	require.Equal(t, "0", render(nat.must(t, "ZCARD", p)), "pending is drained")
}

// TestReplication: a replica of a module server holds what the primary
// holds, scores and expiries included: the effects are replicated, with
// the primary's times. Writes made before the replica attached reach it in
// the sync's snapshot, those after as effects (the module builds them once
// the server has forked for the sync).
func TestReplication(t *testing.T) {
	so := Need(t, "")
	prim := startServer(t, so, servertest.Options{})
	p := newSide(t, "primary", prim.Addr, true)
	q := qk("repl")
	pend, act, del, dead := q.sets()
	work := func(from int) {
		var args []string
		for i := from; i < from+20; i++ {
			id := fmt.Sprintf("JOB%011d", i)
			args = append(args, id, "payload "+id)
		}
		p.run(t, true, "enqueue_batch", []string{pend, q.base()}, args)
		p.run(t, true, "enqueue_at", []string{q.row(fmt.Sprintf("JOB%011d", from+100)), del},
			[]string{fmt.Sprintf("JOB%011d", from+100), "later", "500000000"})
		v := p.run(t, true, "claim_batch", []string{pend, act, q.base()}, []string{"500000000", "6"})
		require.Len(t, v.Elems, 18)
		tok := func(i int) string { return strconv.FormatInt(v.Elems[3*i+2].Int, 10) }
		id := func(i int) string { return v.Elems[3*i].Text() }
		p.run(t, true, "complete", []string{act, q.row(id(0))}, []string{id(0), tok(0), "0"})
		p.run(t, true, "complete", []string{act, q.row(id(1))}, []string{id(1), tok(1), "500000000"})
		p.run(t, true, "retry", []string{act, q.row(id(2)), pend, del, dead}, []string{id(2), tok(2), "0", "1", "dead"})
		p.run(t, true, "retry", []string{act, q.row(id(3)), pend, del, dead}, []string{id(3), tok(3), "500000000", "5", "later"})
		p.run(t, true, "settle_claim", []string{pend, act, del, dead, q.base()},
			[]string{"500000000", "3", "0", "1", "0", "1", id(4), tok(4), id(5), tok(5)})
		p.run(t, true, "extend", []string{act, q.row(id(5))}, []string{id(5), "2", "400000000"})
	}
	work(0)
	rep := startServer(t, "", servertest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(prim.Port)}})
	r := newSideNoFlush(t, "replica", rep.Addr)
	require.Eventually(t, func() bool {
		return strings.Contains(r.must(t, "INFO", "replication").Text(), "master_link_status:up")
	}, time.Minute, 10*time.Millisecond)
	work(1000)
	require.Equal(t, int64(1), p.must(t, "WAIT", "1", "60000").Int)
	a, b := p.exactDump(t), r.exactDump(t)
	require.Greater(t, len(a), 40)
	if d := diffDumps(a, b); len(d) > 0 {
		t.Fatalf("replica differs from primary:\n%s", strings.Join(d, "\n"))
	}
}

// TestCommandKeys: the key specs declare numkeys and the keys after it, as
// EVAL's, so COMMAND GETKEYS (and a cluster-aware client's routing) finds
// exactly the declared keys, and COMMAND INFO shows the flags.
func TestCommandKeys(t *testing.T) {
	_, n := pair(t)
	s := newSide(t, "module", n.Addr, true)
	for _, c := range commands {
		keys := make([]string, len(c.keys))
		for i, k := range c.keys {
			keys[i] = "emq:{ks}:" + k
		}
		args := append([]string{"COMMAND", "GETKEYS", "EMQ." + strings.ToUpper(c.name), strconv.Itoa(len(keys))}, keys...)
		args = append(args, "JOB00000000001", "x", "1", "2", "3", "4", "5", "6")
		v := s.must(t, args...)
		var got []string
		for _, e := range v.Elems {
			got = append(got, e.Text())
		}
		require.Equal(t, keys, got, c.name)
		info := render(s.must(t, "COMMAND", "INFO", "emq."+c.name))
		require.Contains(t, info, `"write"`, c.name)
		require.Contains(t, info, `"movablekeys"`, c.name)
		require.Contains(t, info, fmt.Sprintf("[\"emq.%s\" -%d ", c.name, 2+len(c.keys)), c.name)
	}
}

// TestClaimPopsByRank: a claim of several jobs pops pending as the scripts
// pop it, with one ZREMRANGEBYRANK per claim (the server counts it in
// commandstats and fires its keyspace event), not a ZREM per member; the
// replies and the datasets stay the scripts'.
func TestClaimPopsByRank(t *testing.T) {
	s, n := pair(t)
	scr, nat := newSide(t, "script", s.Addr, false), newSide(t, "module", n.Addr, true)
	q := qk("byrank")
	p, a, d, x := q.sets()
	var args []string
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("JOB%011d", i)
		args = append(args, id, "p"+strconv.Itoa(i))
	}
	both(t, scr, nat, step{"enqueue_batch", []string{p, q.base()}, args, "[1 1 1 1 1 1]"})
	for _, sd := range []*side{scr, nat} {
		sd.must(t, "CONFIG", "RESETSTAT")
	}
	got := both(t, scr, nat, step{"claim_batch", []string{p, a, q.base()}, []string{"500000000", "3"}, ""})
	require.Contains(t, got, `"JOB00000000002" "p2" 1`)
	both(t, scr, nat, step{"settle_claim", []string{p, a, d, x, q.base()},
		[]string{"500000000", "2", "0", "1", "0", "0", "JOB00000000000", "1"}, ""})
	sameData(t, scr, nat)
	calls := func(sd *side) int {
		info := sd.must(t, "INFO", "commandstats").Text()
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_zremrangebyrank:calls="); ok {
				c, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				require.NoError(t, err)
				return c
			}
		}
		return 0
	}
	require.Equal(t, 2, calls(scr), "the scripts pop with one ZREMRANGEBYRANK per claim")
	require.Equal(t, calls(scr), calls(nat), "the module pops as the scripts do")
}
