package emqmodule

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/resp"
	"github.com/stretchr/testify/require"
)

// The differential test: one random sequence of operations, run against
// two servers, one through the scripts and one through the module (with a
// share of its calls through the scripts, so that each executor works on
// rows the other wrote; reap always by script, as the protocol has it).
// Every reply must be equal, and the datasets equal at checkpoints and at
// the end (every key's type, fields, members, and scores relative to each
// server's clock); so must the keyspace events of every operation
// (notify-keyspace-events KEA; expirations, which come when they come,
// aside). A share of the calls runs as an ACL-restricted user (the whole
// first queue, only the sets of the second: refused before any write);
// for 100 operations in every 1,000 both servers are at maxmemory
// (noeviction); rows get attempts at 2^53 and beyond. Errors are compared
// as norm renders them.
//
// EMQ_DIFF_OPS sets the count (default 20,000; 100,000 for the full run),
// EMQ_RESP=2 runs it over RESP2 (default RESP3),
// EMQ_DIFF_SEED the seed, EMQ_DIFF_NATIVE_ADDR a module server started
// elsewhere (under valgrind, say) in place of the package's own.
//
// Time is made deterministic: a "short" time (a lease, delay or retention
// of 1 or 2 ms) has passed on both servers before the next operation (the
// test waits until both servers' clocks are 3 ms past its reply), and a "long" one (5e8 ms) never
// passes during the run.

const (
	long = "500000000"
)

type diffRun struct {
	t        *testing.T
	rng      *rand.Rand
	scr, nat *side
	queues   []qk
	ids      map[qk][]string
	tokens   map[string][]string // by queue+id: the tokens claims answered
	active   map[qk][]string     // ids a claim answered, most recent last
	mint     int
	short    bool     // the op being built has a short time
	wait     bool     // an op sent had one: wait before the next
	due      [2]int64 // when wait ends: script server's clock, module server's (ms)
	log      []string
	nOps     int
	stats    map[string]int
	native   int
	lim      [2]*side       // the restricted user's connections: script, module
	subs     [2]*subscriber // the keyspace events: script, module
	marks    int
	oom      bool
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestDifferential(t *testing.T) {
	ops := envInt("EMQ_DIFF_OPS", 20000)
	if testing.Short() {
		ops = 3000
	}
	seed := uint64(envInt("EMQ_DIFF_SEED", int(time.Now().UnixNano()%1_000_000_007)))
	s, n := pair(t)
	natAddr := n.Addr
	if a := os.Getenv("EMQ_DIFF_NATIVE_ADDR"); a != "" {
		natAddr = a
	}
	t.Logf("seed %d, %d operations, servers %s %s (script) and %s (module)", seed, ops, s.Name, s.Version, natAddr)
	d := &diffRun{
		t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		scr: newSide(t, "script", s.Addr, false), nat: newSide(t, "module", natAddr, true),
		queues: []qk{"diff", "d:2 ü"},
		ids:    map[qk][]string{}, tokens: map[string][]string{}, active: map[qk][]string{},
		stats: map[string]int{},
	}
	d.restrict(s.Addr, natAddr)
	for i := 0; i < ops; i++ {
		switch i % 1000 {
		case 600:
			d.setOOM(true)
		case 700:
			d.setOOM(false)
		}
		d.step()
		if (i+1)%5000 == 0 {
			d.compare(fmt.Sprintf("after %d ops", i+1))
		}
	}
	d.setOOM(false)
	d.compare("at the end")
	t.Logf("ops by kind: %v; %d of the module server's calls native", d.stats, d.native)
	if ops >= 3000 {
		require.NotZero(t, d.stats["refused NOPERM"], "no call was refused by the ACL")
		require.NotZero(t, d.stats["refused OOM"], "no call was refused at maxmemory")
	}
}

// restrict makes the restricted user and its connections, and turns the
// keyspace events on, with a subscriber on each server.
func (d *diffRun) restrict(scrAddr, natAddr string) {
	t := d.t
	q2 := d.queues[1]
	args := []string{"ACL", "SETUSER", "limited", "reset", "on", ">pw", "+@all", "%R~{emq}:version", "~emq:{diff}:*",
		q2.pending(), q2.active(), q2.delayed(), q2.dead(), q2.base()}
	for i := 9; i < len(args); i++ { // no space in an ACL pattern: ? matches it
		args[i] = "~" + strings.ReplaceAll(args[i], " ", "?")
	}
	onBoth(t, d.scr, d.nat, args...)
	onBoth(t, d.scr, d.nat, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	onBoth(t, d.scr, d.nat, "CONFIG", "SET", "notify-keyspace-events", "KEA")
	t.Cleanup(func() {
		for _, sd := range []*side{d.scr, d.nat} {
			sd.raw(t, "CONFIG", "SET", "maxmemory", "0")
			sd.raw(t, "CONFIG", "SET", "notify-keyspace-events", "")
			sd.raw(t, "ACL", "DELUSER", "limited")
		}
	})
	d.lim = [2]*side{userSide(t, d.scr, scrAddr, "limited"), userSide(t, d.nat, natAddr, "limited")}
	d.subs = [2]*subscriber{subscribe(t, scrAddr), subscribe(t, natAddr)}
}

func (d *diffRun) setOOM(on bool) {
	mm := "0"
	if on {
		mm = "1"
	}
	onBoth(d.t, d.scr, d.nat, "CONFIG", "SET", "maxmemory", mm)
	d.oom = on
	d.log = append(d.log, "maxmemory "+mm)
}

// events compares the keyspace events both servers fired since the last
// call (expirations aside).
func (d *diffRun) events(what string) {
	d.t.Helper()
	d.marks++
	mk := "m" + strconv.Itoa(d.marks)
	onBoth(d.t, d.scr, d.nat, "PUBLISH", "emq-marker", mk)
	var got [2][]string
	for i, sub := range d.subs {
		for _, e := range sub.until(d.t, mk) {
			if !strings.HasPrefix(e, "expired ") {
				got[i] = append(got[i], e)
			}
		}
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		// A ZADD of a member already in a set scored by time (active,
		// delayed, dead) fires only when the score moved: an extend, or a
		// claim of an id still in active, within the millisecond of the
		// last one on one server but not on the other. Those aside, the
		// events must be equal.
		for i := range got {
			var keep []string
			for _, e := range got[i] {
				if !(strings.HasPrefix(e, "zadd ") && (strings.HasSuffix(e, ":active") || strings.HasSuffix(e, ":delayed") || strings.HasSuffix(e, ":dead"))) {
					keep = append(keep, e)
				}
			}
			got[i] = keep
		}
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") && clockOrdered(what) &&
		slices.Equal(jobGroups(got[0]), jobGroups(got[1])) {
		return // the same jobs moved, each by the same events, in another order
	}
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		d.t.Fatalf("keyspace events differ at %s:\nscript: %q\nmodule: %q\nlast ops:\n%s", what, got[0], got[1], d.tail())
	}
}

func (d *diffRun) compare(when string) {
	d.t.Helper()
	d.pause()
	d.pause()
	a, b := d.scr.fastDump(d.t), d.nat.fastDump(d.t)
	if diff := diffDumps(a, b); len(diff) > 0 {
		if len(diff) > 20 {
			diff = diff[:20]
		}
		d.t.Fatalf("datasets differ %s (%d keys vs %d):\n%s\nlast ops:\n%s", when, len(a), len(b),
			strings.Join(diff, "\n"), d.tail())
	}
	if len(a) == 0 {
		d.t.Fatalf("empty datasets %s: the run tested nothing", when)
	}
}

func (d *diffRun) tail() string {
	from := len(d.log) - 15
	if from < 0 {
		from = 0
	}
	return strings.Join(d.log[from:], "\n")
}

// pause lets every short time sent so far pass on both servers: it waits
// until each server's clock (TIME) has reached due, 3 ms past where it was
// when the op with the short time returned (a time of 1 or 2 ms from then
// is over by that clock, which the scripts and the module read); then it
// marks whether the op about to be sent has a short time.
func (d *diffRun) pause() {
	if d.wait {
		for i, s := range []*side{d.scr, d.nat} {
			for serverMS(d.t, s) < d.due[i] {
			}
		}
	}
	d.wait, d.short = d.short, false
}

// markDue records, after an op with a short time, when pause may let the
// next one go on each server.
func (d *diffRun) markDue() {
	if d.wait {
		d.due = [2]int64{serverMS(d.t, d.scr) + 3, serverMS(d.t, d.nat) + 3}
	}
}

// serverMS reads s's clock, in ms, as the scripts read TIME.
func serverMS(t testing.TB, s *side) int64 {
	t.Helper()
	v := s.must(t, "TIME")
	if len(v.Elems) != 2 {
		t.Fatalf("%s: TIME answered %v", s.name, v)
	}
	sec, err1 := strconv.ParseInt(v.Elems[0].Text(), 10, 64)
	us, err2 := strconv.ParseInt(v.Elems[1].Text(), 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: TIME answered %v", s.name, v)
	}
	return sec*1000 + us/1000
}

// do runs one transition on both servers and compares the replies.
func (d *diffRun) do(name string, keys, args []string) string {
	d.t.Helper()
	r, _ := d.doV(name, keys, args)
	return r
}

// doV is do, also returning the script server's reply.
func (d *diffRun) doV(name string, keys, args []string) (string, resp.Value) {
	d.t.Helper()
	d.pause()
	d.nOps++
	d.stats[name]++
	native := name != "reap" && d.rng.IntN(5) != 0
	if native {
		d.native++
	}
	scr, nat, who := d.scr, d.nat, ""
	if name != "reap" && name != "promote" && d.rng.IntN(5) == 0 {
		scr, nat, who = d.lim[0], d.lim[1], " (limited)"
	}
	va := scr.run(d.t, false, name, keys, args)
	a := norm(va)
	b := norm(nat.run(d.t, native, name, keys, args))
	d.markDue()
	if d.oom {
		who += " (maxmemory)"
	}
	entry := fmt.Sprintf("#%d %s%s %q %q -> %s", d.nOps, name, who, keys, args, a)
	if len(entry) > 400 {
		entry = entry[:400] + "…"
	}
	d.log = append(d.log, entry)
	if len(d.log) > 100 {
		d.log = d.log[50:]
	}
	if a != b {
		d.t.Fatalf("replies differ at op %d, %s (module side native=%v):\nscript: %s\nmodule: %s\nlast ops:\n%s",
			d.nOps, name, native, a, b, d.tail())
	}
	d.events(fmt.Sprintf("op %d, %s", d.nOps, name))
	for _, k := range []string{"NOPERM", "OOM"} {
		if strings.Contains(a, `ERR("`+k) {
			d.stats["refused "+k]++
		}
	}
	return a, va
}

// raw runs a plain command on both servers.
func (d *diffRun) raw(args ...string) {
	d.pause()
	a, b := norm(d.scr.raw(d.t, args...)), norm(d.nat.raw(d.t, args...))
	d.log = append(d.log, fmt.Sprintf("raw %q -> %s", args, a))
	if a != b {
		d.t.Fatalf("raw %q: %s vs %s", args, a, b)
	}
	d.events(fmt.Sprintf("raw %q", args))
}

const b62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (d *diffRun) newID() string {
	d.mint++
	n := d.mint
	var b [11]byte
	for i := 10; i >= 0; i-- {
		b[i] = b62[n%62]
		n /= 62
	}
	return "JOB" + string(b[:])
}

// id picks an id of q: fresh, known, or one the kind gate refuses.
func (d *diffRun) id(q qk, fresh int) string {
	r := d.rng.IntN(100)
	switch {
	case r < fresh || len(d.ids[q]) == 0:
		id := d.newID()
		d.ids[q] = append(d.ids[q], id)
		if len(d.ids[q]) > 400 {
			d.ids[q] = d.ids[q][200:]
		}
		return id
	case r < fresh+3:
		return []string{"XOB0000000000A", "", "job0000000000A", "JO"}[d.rng.IntN(4)]
	case r < fresh+5:
		return "JOB\x00\xff{}" // an odd id the gate admits
	}
	return d.ids[q][d.rng.IntN(len(d.ids[q]))]
}

// claimedID picks an id a claim answered, or any id.
func (d *diffRun) claimedID(q qk) string {
	if a := d.active[q]; len(a) > 0 && d.rng.IntN(10) < 8 {
		if d.rng.IntN(2) == 0 {
			return a[len(a)-1]
		}
		return a[d.rng.IntN(len(a))]
	}
	return d.id(q, 5)
}

func (d *diffRun) token(q qk, id string) string {
	toks := d.tokens[string(q)+id]
	if len(toks) == 0 {
		return strconv.Itoa(d.rng.IntN(3))
	}
	last := toks[len(toks)-1]
	switch r := d.rng.IntN(100); {
	case r < 65:
		return last
	case r < 78:
		return toks[d.rng.IntN(len(toks))] // perhaps spent
	case r < 83:
		n, _ := strconv.Atoi(last)
		return strconv.Itoa(n + 1)
	default:
		return []string{"0" + last, last + ".0", " " + last, last + "\x00", "", "1e0", "-" + last}[d.rng.IntN(7)]
	}
}

func (d *diffRun) payload() string {
	switch r := d.rng.IntN(100); {
	case r < 5:
		return ""
	case r < 7:
		return strings.Repeat("x", 40_000+d.rng.IntN(1000))
	case r < 15:
		b := make([]byte, d.rng.IntN(40))
		for i := range b {
			b[i] = byte(d.rng.IntN(256))
		}
		return string(b)
	}
	return "p" + strconv.Itoa(d.rng.IntN(1_000_000))
}

// dur picks a time argument: short (then the run waits), long, zero when
// allowed, a valid number in another spelling, or an invalid one.
func (d *diffRun) dur(min int) string {
	r := d.rng.IntN(100)
	switch {
	case r < 5:
		return []string{"-1", "1.5", "abc", "", "nan", "inf", "9007199254740992", "1e300", "0x", " ", "-inf"}[d.rng.IntN(11)]
	case r < 15:
		d.short = true
		return []string{"1", " 1", "1 ", "1.0", "0x1", "1e0", "1\x00z", "2", "2.000"}[d.rng.IntN(9)]
	case r < 35 && min == 0:
		return []string{"0", "-0", "0.0", "0x0"}[d.rng.IntN(4)]
	case r < 40:
		return []string{"5e8", "0x1DCD6500", " 500000000 "}[d.rng.IntN(3)]
	}
	return long
}

// count picks a count argument (limit, n, max_attempts).
func (d *diffRun) count(min, max int) string {
	r := d.rng.IntN(100)
	switch {
	case r < 4:
		return []string{"-1", "1.5", "x", "", "1e300"}[d.rng.IntN(5)]
	case r < 8:
		return strconv.Itoa(min+d.rng.IntN(max-min+1)) + ".0"
	}
	return strconv.Itoa(min + d.rng.IntN(max-min+1))
}

// remember records the jobs a claim reply answered ({id, payload,
// attempts, ...}).
func (d *diffRun) remember(q qk, jobs resp.Value) {
	if jobs.Type != resp.Array {
		return
	}
	for i := 0; i+2 < len(jobs.Elems); i += 3 {
		id := jobs.Elems[i].Text()
		tok := strconv.FormatInt(jobs.Elems[i+2].Int, 10)
		d.tokens[string(q)+id] = append(d.tokens[string(q)+id], tok)
		d.active[q] = append(d.active[q], id)
		if len(d.active[q]) > 200 {
			d.active[q] = d.active[q][100:]
		}
	}
}

func (d *diffRun) step() {
	q := d.queues[d.rng.IntN(len(d.queues))]
	p, a, dl, x := q.sets()
	switch r := d.rng.IntN(100); {
	case r < 11:
		id := d.id(q, 70)
		d.do("enqueue", []string{q.row(id), p}, []string{id, d.payload()})
	case r < 15:
		id := d.id(q, 70)
		d.do("enqueue_at", []string{q.row(id), dl}, []string{id, d.payload(), d.dur(0)})
	case r < 21:
		var args []string
		for k := d.rng.IntN(9); k > 0; k-- {
			args = append(args, d.id(q, 65), d.payload())
		}
		if d.rng.IntN(30) == 0 {
			args = append(args, "JOB0000000000Z")
		}
		d.do("enqueue_batch", []string{p, q.base()}, args)
	case r < 29:
		d.claim(q, "claim", []string{p, a, q.base()}, []string{d.dur(1)})
	case r < 35:
		d.claim(q, "claim_batch", []string{p, a, q.base()}, []string{d.dur(1), d.count(1, 10)})
	case r < 43:
		id := d.claimedID(q)
		d.do("complete", []string{a, q.row(id)}, []string{id, d.token(q, id), d.keep()})
	case r < 48:
		args := []string{d.keep()}
		for k := d.rng.IntN(6); k > 0; k-- {
			id := d.claimedID(q)
			args = append(args, id, d.token(q, id))
		}
		if d.rng.IntN(30) == 0 {
			args = args[:len(args)-1]
		}
		d.do("complete_batch", []string{a, q.base()}, args)
	case r < 56:
		id := d.claimedID(q)
		args := []string{id, d.token(q, id), d.dur(0), d.count(0, 4)}
		if d.rng.IntN(10) != 0 {
			args = append(args, d.payload())
		}
		d.do("retry", []string{a, q.row(id), p, dl, x}, args)
	case r < 60:
		id := d.claimedID(q)
		d.do("extend", []string{a, q.row(id)}, []string{id, d.token(q, id), d.dur(1)})
	case r < 65:
		d.do("promote", []string{dl, p, q.base()}, []string{d.count(0, 20)})
	case r < 69:
		d.do("reap", []string{a, p, x, q.base()}, []string{d.count(0, 20), d.count(0, 4)})
	case r < 84:
		d.settle(q)
	case r < 86:
		d.raw("HSET", q.meta(), "paused", []string{"1", "0", "0", "yes"}[d.rng.IntN(4)])
	case r < 87:
		if d.rng.IntN(2) == 0 {
			d.raw("ZADD", []string{p, dl}[d.rng.IntN(2)], "0", d.newID()) // a ghost: an id without a row
		} else {
			d.raw("ZADD", p, "0", d.claimedID(q)) // an id in two sets, as no transition leaves it
		}
	case r < 88:
		d.raw("HDEL", q.row(d.id(q, 0)), []string{"payload", "attempts", "state"}[d.rng.IntN(3)]) // a damaged row
	case r < 89:
		// attempts at a double's edge and beyond, every one an integer a
		// claim can count up from (2^63 - 1 would overflow the next claim)
		d.raw("HSET", q.row(d.claimedID(q)), "attempts", []string{"9007199254740991", "9007199254740992", "9007199254740993",
			"9223372036854774807", "-9007199254740993", "-3", "18014398509481985"}[d.rng.IntN(7)])
	default:
		d.claim(q, "claim_batch", []string{p, a, q.base()}, []string{long, d.count(1, 5)})
	}
}

func (d *diffRun) keep() string {
	switch r := d.rng.IntN(100); {
	case r < 50:
		return "0"
	case r < 55:
		d.short = true
		return "1"
	case r < 58:
		return "-1"
	}
	return long
}

// claim runs a claim-like transition and remembers what it answered.
func (d *diffRun) claim(q qk, name string, keys, args []string) {
	d.t.Helper()
	_, v := d.doV(name, keys, args)
	if name == "settle_claim" && v.Type == resp.Array && len(v.Elems) == 2 {
		v = v.Elems[1]
	}
	d.remember(q, v)
}

func (d *diffRun) settle(q qk) {
	p, a, dl, x := q.sets()
	nc, nr, nx := d.rng.IntN(4), d.rng.IntN(3), d.rng.IntN(2)
	args := []string{d.dur(1), d.count(0, 8), d.keep(), strconv.Itoa(nc), strconv.Itoa(nr), strconv.Itoa(nx)}
	for ; nc > 0; nc-- {
		id := d.claimedID(q)
		args = append(args, id, d.token(q, id))
	}
	for ; nr > 0; nr-- {
		id := d.claimedID(q)
		args = append(args, id, d.token(q, id), d.dur(0), d.count(0, 4), d.payload())
	}
	for ; nx > 0; nx-- {
		id := d.claimedID(q)
		args = append(args, id, d.token(q, id))
	}
	if d.rng.IntN(40) == 0 {
		args = args[:len(args)-1]
	}
	d.claim(q, "settle_claim", []string{p, a, dl, x, q.base()}, args)
}

// clockOrdered reports whether the operation what (as events names it)
// moves jobs in the order of their scores on the server's clock (promote:
// due times; reap: lease deadlines): two jobs due within a millisecond of
// each other on one server may be a millisecond apart the other way on
// the other, so the two servers may move the same jobs in another order.
func clockOrdered(what string) bool {
	return strings.HasSuffix(what, ", promote") || strings.HasSuffix(what, ", reap")
}

// jobGroups splits the events of a clock-ordered transition into one
// group per job moved (each opens with the ZREM of its id from the set it
// leaves), keeping the order within each group, and returns the groups
// sorted, with the del events (a set left empty, fired at the end of a
// group whichever job came last) counted apart.
func jobGroups(events []string) []string {
	var groups, dels []string
	for _, e := range events {
		switch {
		case strings.HasPrefix(e, "del "):
			dels = append(dels, e)
		case strings.HasPrefix(e, "zrem ") || len(groups) == 0:
			groups = append(groups, e)
		default:
			groups[len(groups)-1] += "\n" + e
		}
	}
	slices.Sort(groups)
	slices.Sort(dels)
	return append(groups, dels...)
}
