package cache_test

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// owner returns the cluster node that serves key (the one that does not
// answer MOVED).
func owner(t *testing.T, cl *servertest.Cluster, key string) *servertest.Server {
	t.Helper()
	for _, s := range cl.Primaries {
		if _, err := s.Do("EXISTS", key); err == nil {
			return s
		}
	}
	t.Fatalf("no node serves %s", key)
	return nil
}

// A cache per primary: reads routed by slot, invalidations per node, no
// reply of a missing key kept, and a slot migration followed.
func TestCluster(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		cl, cc := clusterCache(t, 3, proto)
		ctx := testCtx(t)
		get := func(key string) string {
			t.Helper()
			v, ok, err := cc.GetInto(ctx, nil, key, time.Hour)
			if err != nil {
				t.Fatalf("Get %s: %v", key, err)
			}
			if !ok {
				return "<none>"
			}
			return string(v)
		}
		for i := range 30 {
			k := "k" + strconv.Itoa(i)
			if _, err := cc.Do(ctx, k, "SET", k, "v"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if v := get(k); v != "v"+strconv.Itoa(i) {
					t.Fatalf("%s = %s", k, v)
				}
			}
		}
		if s := cc.Stats(); s.Hits != 30 || s.Misses != 30 {
			t.Fatalf("%+v: want 30 hits and 30 misses", s)
		}
		// Another client's write invalidates, on its node.
		a := owner(t, cl, "k1")
		must(t, a, "SET", "k1", "other")
		if err := cc.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if v := get("k1"); v != "other" {
			t.Fatalf("k1 = %s after another client's write", v)
		}
		// MGet: the keys of every node, in order, from memory where they
		// are kept; then another client's write is seen through it.
		keys := make([]string, 30)
		want := make([]string, 30)
		for i := range keys {
			keys[i], want[i] = "k"+strconv.Itoa(i), "v"+strconv.Itoa(i)
		}
		want[1] = "other"
		before := cc.Stats()
		vals, err := cc.MGet(ctx, time.Hour, keys...)
		if err != nil {
			t.Fatal(err)
		}
		if got := mgetText(vals); got != strings.Join(want, " ") {
			t.Fatalf("MGet = %s", got)
		}
		// Served from memory, unless a node's cache was emptied meanwhile
		// (a health check that went unanswered on a loaded machine).
		if s := cc.Stats(); s.Hits != before.Hits+30 && s.Flushes == before.Flushes && s.Reconnects == before.Reconnects {
			t.Fatalf("%+v: MGet of 30 kept keys was not served from memory (before: %+v)", s, before)
		}
		must(t, owner(t, cl, "k7"), "SET", "k7", "changed")
		if err := cc.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if vals, err = cc.MGet(ctx, time.Hour, "k7", "k8"); err != nil || mgetText(vals) != "changed v8" {
			t.Fatalf("MGet after another client's write = %s, %v", mgetText(vals), err)
		}
		if _, err := cc.MGet(ctx, 0, "k7"); !errors.Is(err, cache.ErrTTL) {
			t.Fatalf("MGet with no TTL: %v", err)
		}
		// A missing key is not kept.
		misses := cc.Stats().Misses
		get("missing")
		get("missing")
		if s := cc.Stats(); s.Misses != misses+2 {
			t.Fatalf("a missing key was served from memory")
		}
		// Migrate k1's slot from a to b; the new owner is learnt from
		// MOVED, and it tracks k1 from then on.
		get("k1")
		var b *servertest.Server
		for _, s := range cl.Primaries {
			if s != a {
				b = s
				break
			}
		}
		sl := must(t, a, "CLUSTER", "KEYSLOT", "k1")
		must(t, b, "CLUSTER", "SETSLOT", sl, "IMPORTING", cl.IDs[a.Addr])
		must(t, a, "CLUSTER", "SETSLOT", sl, "MIGRATING", cl.IDs[b.Addr])
		host, port, _ := net.SplitHostPort(b.Addr)
		for {
			keys, err := a.Do("CLUSTER", "GETKEYSINSLOT", sl, "100")
			if err != nil {
				t.Fatal(err)
			}
			if keys == "" {
				break
			}
			// servertest returns an array as lines; migrate them one by one.
			for _, k := range splitLines(keys) {
				must(t, a, "MIGRATE", host, port, k, "0", "5000")
			}
		}
		for _, s := range append([]*servertest.Server{b, a}, cl.Primaries...) {
			must(t, s, "CLUSTER", "SETSLOT", sl, "NODE", cl.IDs[b.Addr])
		}
		must(t, b, "SET", "k1", "on-b")
		if err := cc.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		// MGet across the nodes, k1 among them: its group is answered
		// MOVED by a, and read again at b.
		vals, err = cc.MGet(ctx, time.Hour, "k0", "k1", "missing", "k2", "k3")
		if err != nil {
			t.Fatalf("MGet after the slot moved: %v", err)
		}
		if got := mgetText(vals); got != "v0 on-b <nil> v2 v3" {
			t.Fatalf("MGet after the slot moved = %s", got)
		}
		if v := get("k1"); v != "on-b" {
			t.Fatalf("k1 = %s after its slot moved", v)
		}
		get("k1")
		must(t, b, "SET", "k1", "on-b-2")
		if err := cc.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if v := get("k1"); v != "on-b-2" {
			t.Fatalf("k1 = %s: the new owner does not track it", v)
		}
		err = cc.DoCached(ctx, time.Hour, func(v resp.Value) error { return nil }, "TTL", "k1")
		if !errors.Is(err, cache.ErrNotCacheable) {
			t.Fatalf("TTL: %v", err)
		}
	})
}

// mgetText renders MGet's values, <nil> for a missing key.
func mgetText(vals [][]byte) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			parts[i] = "<nil>"
		} else {
			parts[i] = string(v)
		}
	}
	return strings.Join(parts, " ")
}

// clusterCache starts a cluster of primaries (no replicas) and a
// ClusterCache over it, seeded with one node and refreshed only when a
// node says so (MOVED).
func clusterCache(t *testing.T, primaries, proto int) (*servertest.Cluster, *cache.ClusterCache) {
	t.Helper()
	servertest.Need(t, srv)
	cl, err := servertest.StartCluster(primaries, 0, servertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	o := cache.ClusterOptions{Addrs: cl.Addrs()[:1], RefreshInterval: time.Hour}
	o.Protocol = proto
	cc, err := cache.NewCluster(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cl, cc
}

// splitLines splits servertest's rendering of an array.
func splitLines(s string) []string { return strings.Split(s, "\n") }

// A manual failover, then the new primary killed: the cache follows the
// slot to each new owner and never serves what the failovers made stale.
func TestClusterFailover(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		servertest.Need(t, srv)
		cl, err := servertest.StartCluster(3, 1, servertest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Stop)
		o := cache.ClusterOptions{Addrs: cl.Addrs(), RefreshInterval: 100 * time.Millisecond}
		o.Protocol = proto
		o.MinBackoff, o.MaxBackoff = time.Millisecond, 50*time.Millisecond
		cc, err := cache.NewCluster(testCtx(t), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		ctx := testCtx(t)
		// read returns k's value once reads work (they fail while no
		// node serves the slot).
		read := func() string {
			t.Helper()
			var v []byte
			waitFor(t, "reads to come back", func() bool {
				var err error
				v, _, err = cc.GetInto(ctx, nil, "k", time.Hour)
				if err != nil && ctx.Err() != nil {
					t.Fatalf("reads never came back: %v", err)
				}
				return err == nil
			})
			return string(v)
		}
		if _, err := cc.Do(ctx, "k", "SET", "k", "v1"); err != nil {
			t.Fatal(err)
		}
		if v := read(); v != "v1" {
			t.Fatal(v)
		}
		p := owner(t, cl, "k")
		var r *servertest.Server
		for i, s := range cl.Primaries {
			if s == p {
				r = cl.Replicas[i]
			}
		}
		must(t, r, "CLUSTER", "FAILOVER")
		waitFor(t, "the manual failover", func() bool {
			info, err := r.Do("INFO", "replication")
			return err == nil && strings.Contains(info, "role:master")
		})
		must(t, r, "SET", "k", "v2")
		// The old primary serves its entries until the write reaches it
		// by replication (an invalidation) or the slot map refresh shows
		// the move (RefreshInterval): then v2, and never v1 again.
		waitFor(t, "v2", func() bool { return read() == "v2" })
		for range 10 {
			if v := read(); v != "v2" {
				t.Fatalf("after v2 was read: %s", v)
			}
		}
		must(t, r, "SET", "k", "v3")
		waitReplicated(t, r, p) // v3 survives r's death
		r.Kill()
		if v := read(); v != "v3" {
			t.Fatalf("after the new primary died: %s, want v3", v)
		}
	})
}

// waitReplicated waits until replica has applied everything primary sent.
func waitReplicated(t *testing.T, primary, replica *servertest.Server) {
	t.Helper()
	field := func(s *servertest.Server, name string) int64 {
		info, err := s.Do("INFO", "replication")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return -1
	}
	want := field(primary, "master_repl_offset")
	waitFor(t, "replication", func() bool { return field(replica, "slave_repl_offset") >= want })
}

// A write to a key of a slot half-moved: the old owner answers ASK for a
// key it no longer has (the command did not run), and Do sends it to the
// importing node after ASKING, on that node's tracked connection; reads
// of such a key (GetInto, DoCached, MGet) are answered there too, not
// kept; the value is there once the move is done, and a read through the
// cache sees it.
func TestClusterDoFollowsAsk(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		facts := watchFacts(t) // ASKING and the command after it carry their facts
		cl, cc := clusterCache(t, 2, proto)
		ctx := testCtx(t)
		a, b := cl.Primaries[0], cl.Primaries[1]
		// Two keys of one slot on a: {t}stay stays there, {t}gone moves.
		var tag string
		for i := 0; ; i++ {
			tag = "{t" + strconv.Itoa(i) + "}"
			if owner(t, cl, tag) == a {
				break
			}
		}
		stay, gone := tag+"stay", tag+"gone"
		must(t, a, "SET", stay, "0")
		must(t, a, "SET", gone, "0")
		sl := must(t, a, "CLUSTER", "KEYSLOT", tag)
		must(t, b, "CLUSTER", "SETSLOT", sl, "IMPORTING", cl.IDs[a.Addr])
		must(t, a, "CLUSTER", "SETSLOT", sl, "MIGRATING", cl.IDs[b.Addr])
		host, port, _ := net.SplitHostPort(b.Addr)
		must(t, a, "MIGRATE", host, port, gone, "0", "5000")

		if _, err := cc.Do(ctx, gone, "SET", gone, "written-at-b"); err != nil {
			t.Fatalf("SET of a key moved during the migration: %v", err)
		}
		if _, err := cc.Do(ctx, stay, "SET", stay, "written-at-a"); err != nil {
			t.Fatalf("SET of a key not moved yet: %v", err)
		}
		// Reads of the half-moved slot: the key already at b is read
		// there after ASKING (not kept), the other from a.
		if v, ok, err := cc.GetInto(ctx, nil, gone, time.Hour); err != nil || !ok || string(v) != "written-at-b" {
			t.Fatalf("read of a key moved during the migration = %q, %t, %v", v, ok, err)
		}
		if v, ok, err := cc.GetInto(ctx, nil, tag+"never", time.Hour); err != nil || ok {
			t.Fatalf("read of a missing key during the migration = %q, %t, %v", v, ok, err)
		}
		var n int64
		if err := cc.DoCached(ctx, time.Hour, func(v resp.Value) error { n = v.Int; return nil }, "STRLEN", gone); err != nil || n != int64(len("written-at-b")) {
			t.Fatalf("STRLEN of a key moved during the migration = %d, %v", n, err)
		}
		vals, err := cc.MGet(ctx, time.Hour, stay, gone, tag+"never")
		if err != nil || mgetText(vals) != "written-at-a written-at-b <nil>" {
			t.Fatalf("MGet during the migration = %s, %v", mgetText(vals), err)
		}
		must(t, a, "MIGRATE", host, port, stay, "0", "5000")
		for _, s := range append([]*servertest.Server{b, a}, cl.Primaries...) {
			must(t, s, "CLUSTER", "SETSLOT", sl, "NODE", cl.IDs[b.Addr])
		}
		for k, want := range map[string]string{gone: "written-at-b", stay: "written-at-a"} {
			if got := must(t, b, "GET", k); got != want {
				t.Fatalf("%s = %q at the new owner, want %q", k, got, want)
			}
			v, ok, err := cc.GetInto(ctx, nil, k, time.Hour)
			if err != nil || !ok || string(v) != want {
				t.Fatalf("read of %s through the cache = %q, %t, %v", k, v, ok, err)
			}
		}
		sent, faults := facts.result()
		for _, f := range faults {
			t.Error(f)
		}
		if asking := slices.Index(sent, "ASKING"); asking < 0 || asking+1 == len(sent) || sent[asking+1] != "SET "+gone+" written-at-b" {
			t.Errorf("the SET after ASK was not sent after ASKING: %q", sent)
		}
	})
}
