package sentinel_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/sentinel"
)

// staleSentinel starts a sentinel that monitors a master set of the same
// name as set's but of other nodes (a primary and one replica of its
// own, that set's sentinels never hear of): a sentinel cut off from the
// others, whose answer is stale. Its quorum (2, of one sentinel) never
// lets it fail over. It returns that sentinel and its data nodes.
func staleSentinel(t *testing.T, set *servertest.SentinelSet) (*servertest.Server, *servertest.SentinelSet) {
	t.Helper()
	stale := startSet(t, servertest.SentinelOptions{MasterName: set.MasterName, Replicas: 1, Sentinels: 1})
	return stale.Sentinels[0], stale
}

// staleOpts are opts for set with the stale sentinel asked first.
func staleOpts(set *servertest.SentinelSet, stale *servertest.Server) sentinel.Options {
	o := opts(set, "", "")
	o.Sentinels = append([]string{stale.Addr}, o.Sentinels...)
	return o
}

// checkStale: a MasterSet whose first sentinel is stale settles on the
// primary the other sentinels name, New's resolution and the checker's
// alike, and writes go there.
func checkStale(t *testing.T, set *servertest.SentinelSet, stale *servertest.Server, wrong string) {
	t.Helper()
	primary, err := set.Primary()
	if err != nil {
		t.Fatal(err)
	}
	ctx := tctx(t)
	// A MasterSet alone (nothing dialed yet): New's resolution, then
	// the checker's.
	ms, err := sentinel.New(ctx, staleOpts(set, stale))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	if got := ms.Primary(); got != primary.Addr {
		t.Errorf("after New, Primary() = %s; the sentinels name %s (the stale one %s)", got, primary.Addr, wrong)
	}
	sentinel.CheckNow(ms)
	if got := ms.Primary(); got != primary.Addr {
		t.Errorf("after a check, Primary() = %s; the sentinels name %s (the stale one %s)", got, primary.Addr, wrong)
	}
	// A Client: its dials, then the checker again with a connection
	// open to the primary.
	cl := newClient(t, staleOpts(set, stale))
	ms = cl.MasterSet()
	before := primary.CommandCalls(t, "incr")
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cl.Do(dctx, "INCR", "counter"); err != nil {
		t.Fatalf("INCR with a stale sentinel first: %v", err)
	}
	if after := primary.CommandCalls(t, "incr"); after != before+1 {
		t.Errorf("the primary ran %d INCRs, want 1", after-before)
	}
	sentinel.CheckNow(ms)
	if got := ms.Primary(); got != primary.Addr {
		t.Errorf("after the checker, Primary() = %s; the sentinels name %s (the stale one %s)", got, primary.Addr, wrong)
	}
	if _, err := cl.Do(dctx, "INCR", "counter"); err != nil {
		t.Fatalf("INCR after the checker: %v", err)
	}
	if got, _ := primary.Do("GET", "counter"); got != "2" {
		t.Errorf("counter on the primary %q, want 2", got)
	}
}

// TestStaleSentinelNamesDeadNode: the first sentinel asked names a node
// that is down (it cannot fail it over). The MasterSet does not take it:
// it asks the other sentinels, and writes go to their primary.
func TestStaleSentinelNamesDeadNode(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1})
	stale, own := staleSentinel(t, set)
	dead := own.Data[0]
	dead.Kill()
	checkStale(t, set, stale, dead.Addr)
}

// TestStaleSentinelNamesReplica: the first sentinel asked names a node
// that is a replica. The MasterSet neither records it as the primary
// (New, the checker) nor ends the connections to the primary the other
// sentinels name.
func TestStaleSentinelNamesReplica(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1})
	stale, own := staleSentinel(t, set)
	replica := own.Data[1]
	for _, args := range [][]string{
		{"SENTINEL", "REMOVE", set.MasterName},
		{"SENTINEL", "MONITOR", set.MasterName, "127.0.0.1", strconv.Itoa(replica.Port), "2"},
	} {
		if _, err := stale.Do(args...); err != nil {
			t.Fatal(err)
		}
	}
	checkStale(t, set, stale, replica.Addr)
}

// TestStaleSentinelOlderEpoch: the first sentinel asked names a node
// that answers role master, but its configuration is older (config-epoch
// 0) than the other sentinels' (a failover made it 1 or more): a
// sentinel cut off from the others, with the node it still takes for the
// primary. Its answer is passed over; no write goes to its node.
func TestStaleSentinelOlderEpoch(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1})
	_, now := failover(t, set)
	stale, own := staleSentinel(t, set)
	checkStale(t, set, stale, own.Data[0].Addr)
	if n := own.Data[0].CommandCalls(t, "incr"); n != 0 {
		t.Errorf("the stale sentinel's node %s ran %d INCRs", own.Data[0].Addr, n)
	}
	if p, _ := set.Primary(); p != now {
		t.Errorf("the sentinels name %v, the failover made %s", p, now.Addr)
	}
}
