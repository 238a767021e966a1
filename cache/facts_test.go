package cache_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// factsSeen is a Sender between a Cache and its connection that checks
// each submission's facts against the commands its bytes hold, before
// passing it on.
type factsSeen struct {
	next wire.Sender
	log  *factsLog
}

// factsLog is what the factsSeen of a test saw: every command sent (its
// words, "GET k"), and every fault of the facts found.
type factsLog struct {
	mu     sync.Mutex
	sent   []string
	faults []string
}

func (s *factsSeen) Send(ctx context.Context, w wire.Cmds, h wire.Handler) error {
	s.log.check(w)
	return s.next.Send(ctx, w, h)
}

// check compares w's facts with what the table's inspector finds in
// each command of its bytes: one fact per command, sizes adding up to
// len(B), each the command's Info, kind, size, name, second argument and
// keys.
func (l *factsLog) check(w wire.Cmds) {
	var names []string
	var faults []string
	rest := w.Bytes()
	var args [][]string
	for len(rest) > 0 {
		v, n, err := resp.Parse(rest, resp.Limits{})
		if err != nil {
			faults = append(faults, "bytes: "+err.Error())
			break
		}
		var a []string
		for _, e := range v.Elems {
			a = append(a, string(e.Str))
		}
		args = append(args, a)
		names = append(names, strings.Join(a, " "))
		rest = rest[n:]
	}
	what := strings.Join(names, "; ")
	sum := 0
	for i := range w.Facts() {
		sum += int(w.Facts()[i].Size)
	}
	switch {
	case w.Facts() == nil:
		faults = append(faults, what+": sent without facts")
	case len(w.Facts()) != w.Len() || len(args) != w.Len():
		faults = append(faults, what+": facts of "+itoa(len(w.Facts()))+" commands, N "+itoa(w.Len()))
	case sum != len(w.Bytes()):
		faults = append(faults, what+": the facts' sizes add up to "+itoa(sum)+", not len(B) "+itoa(len(w.Bytes())))
	default:
		at := 0
		for i, a := range args {
			bs := make([][]byte, len(a))
			for j := range a {
				bs[j] = []byte(a[j])
			}
			want, _ := cmds.Inspect(bs, nil)
			got := w.Facts()[i]
			cmd := w.Bytes()[at : at+int(got.Size)]
			if got.Info != want.Info || got.Kind != want.Kind || got.Size != want.Size || got.Name != want.Name ||
				got.Arg1 != want.Arg1 || !slices.Equal(got.Keys, want.Keys) {
				faults = append(faults, names[i]+": fact "+fmtFact(got)+", the command's is "+fmtFact(want))
			} else if string(got.Name.Of(cmd)) != a[0] {
				faults = append(faults, names[i]+": the fact's name is "+string(got.Name.Of(cmd)))
			}
			at += int(got.Size)
		}
	}
	l.mu.Lock()
	l.sent = append(l.sent, names...)
	l.faults = append(l.faults, faults...)
	l.mu.Unlock()
}

func fmtFact(f cmds.Fact) string {
	name := "<unknown>"
	if f.Info != nil {
		name = f.Info.Name
	}
	return name + " size " + itoa(int(f.Size)) + " keys " + itoa(len(f.Keys))
}

func itoa(i int) string { return strconv.Itoa(i) }

// watchFacts has every connection a Cache dials from now on check the
// facts of what the Cache sends.
func watchFacts(t *testing.T) *factsLog {
	l := &factsLog{}
	cache.WrapSenders(t, func(s wire.Sender) wire.Sender { return &factsSeen{next: s, log: l} })
	return l
}

// result returns what was sent and the faults found.
func (l *factsLog) result() (sent, faults []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent), slices.Clone(l.faults)
}

// Every submission the Cache makes carries the facts of its commands,
// made where the Cache encodes them, so that its connection does not
// read the bytes back: the tracking setup, a load (GET and PTTL, and
// CLIENT CACHING yes before them in OptIn mode), a DoCached, the loads of
// a MGet, a write and its PING, Sync. Each fact is checked against the
// command in the bytes.
func TestSubmissionsCarryFacts(t *testing.T) {
	for _, mode := range []cache.Mode{cache.Default, cache.OptIn, cache.Broadcast} {
		t.Run(mode.String(), func(t *testing.T) {
			protocols(t, func(t *testing.T, proto int) {
				l := watchFacts(t)
				o := opts(proto)
				o.Mode = mode
				c := newCache(t, o)
				ctx := testCtx(t)
				must(t, srv, "SET", "k1", "v1")
				must(t, srv, "HSET", "h", "f", "1")
				wantGet(t, c, "k1", "v1")
				if err := c.DoCached(ctx, time.Hour, nil, "HGET", "h", "f"); err != nil {
					t.Fatal(err)
				}
				if _, err := c.MGet(ctx, time.Hour, "k1", "k2", "k3"); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Do(ctx, "SET", "k2", "v2"); err != nil {
					t.Fatal(err)
				}
				if err := c.DoFunc(ctx, resp.Command(nil, "DEL", "k3"), nil); err != nil {
					t.Fatal(err)
				}
				if err := c.Sync(ctx); err != nil {
					t.Fatal(err)
				}
				sent, faults := l.result()
				for _, f := range faults {
					t.Error(f)
				}
				want := []string{"CLIENT TRACKING ON", "GET k1", "PTTL k1", "HGET h f", "GET k2", "GET k3", "SET k2 v2", "DEL k3"}
				if mode == cache.OptIn {
					want = append(want, "CLIENT CACHING yes")
				}
				if proto == 3 {
					want = append(want, "PING") // after a write, and Sync, on the tracked connection (RESP2: on the invalidation connection)
				}
				for _, w := range want {
					if !slices.ContainsFunc(sent, func(s string) bool { return strings.HasPrefix(s, w) }) {
						t.Errorf("no %q among the commands sent: %q", w, sent)
					}
				}
			})
		})
	}
}

// A ClusterCache's submissions carry their facts too: the slot map's
// read (CLUSTER SLOTS), each node's tracking setup and loads, a MGet
// over several nodes.
func TestClusterSubmissionsCarryFacts(t *testing.T) {
	l := watchFacts(t)
	_, cc := clusterCache(t, 3, 3)
	ctx := testCtx(t)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		if _, err := cc.Do(ctx, k, "SET", k, "v"+k); err != nil {
			t.Fatal(err)
		}
	}
	vals, err := cc.MGet(ctx, time.Hour, keys...)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if string(v) != "v"+keys[i] {
			t.Fatalf("MGet %s = %q", keys[i], v)
		}
	}
	sent, faults := l.result()
	for _, f := range faults {
		t.Error(f)
	}
	for _, w := range []string{"CLUSTER SLOTS", "CLIENT TRACKING ON", "SET a va", "GET f", "PTTL f"} {
		if !slices.Contains(sent, w) && !slices.ContainsFunc(sent, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no %q among the commands sent: %q", w, sent)
		}
	}
}
