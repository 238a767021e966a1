package sentinel_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/sentinel"
)

// readOpts are opts with replica reads on.
func readOpts(set *servertest.SentinelSet, r replica.Options) sentinel.Options {
	o := opts(set, "", "")
	if r.ProbeInterval == 0 {
		r.ProbeInterval = 50 * time.Millisecond
	}
	o.Reads = r
	return o
}

// writeAndWait sets keys k0..k(n-1) through cl, each batch closed by a
// WAIT for every replica, and fails unless both replicas acknowledged.
func writeAndWait(t *testing.T, cl *sentinel.Client, n, replicas int) {
	t.Helper()
	var b pipeline.Batch
	for i := range n {
		b.Add("SET", fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	b.Add("WAIT", fmt.Sprint(replicas), "5000")
	if err := b.Exec(tctx(t), cl); err != nil {
		t.Fatal(err)
	}
	if got := b.Reply(n).Int; got != int64(replicas) {
		t.Fatalf("WAIT %d: %d replicas acknowledged", replicas, got)
	}
}

// TestReplicaReadsSkipPrimary: with two replicas up, every read-only
// command (Do, and a batch of reads) goes to a replica, never to the
// primary (each node's INFO commandstats), and both replicas take some;
// writes go to the primary; a WAIT in the write's batch makes the reads
// that follow see the writes.
func TestReplicaReadsSkipPrimary(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{})
	cl := newClient(t, readOpts(set, replica.Options{Route: replica.Random}))
	waitFor(t, tctx(t), "both replicas taking reads", func() bool { return len(cl.Replicas()) == 2 })
	const n = 100
	writeAndWait(t, cl, n, 2)
	for _, d := range set.Data {
		d.ResetStats(t)
	}
	for i := range n {
		v, err := cl.Do(tctx(t), "GET", fmt.Sprint("k", i))
		if err != nil {
			t.Fatal(err)
		}
		if v.Text() != fmt.Sprint("v", i) {
			t.Fatalf("GET k%d after WAIT 2: %q", i, v.Text())
		}
	}
	var b pipeline.Batch
	for i := range n {
		b.Add("GET", fmt.Sprint("k", i))
	}
	if err := b.Exec(tctx(t), cl); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Do(tctx(t), "SET", "w", "1"); err != nil {
		t.Fatal(err)
	}
	primary, replicas := set.Data[0], set.Data[1:]
	if got := primary.CommandCalls(t, "get"); got != 0 {
		t.Errorf("the primary ran %d GETs with both replicas up", got)
	}
	if got := primary.CommandCalls(t, "set"); got != 1 {
		t.Errorf("the primary ran %d SETs, want the 1 write", got)
	}
	var sum int64
	for _, r := range replicas {
		got := r.CommandCalls(t, "get")
		if got == 0 {
			t.Errorf("replica %s took no read of %d at random", r.Addr, 2*n)
		}
		sum += got
	}
	if sum != 2*n {
		t.Errorf("the replicas ran %d GETs, want %d", sum, 2*n)
	}
}

// TestReplicaReadsLatencyAndZone: Latency picks one replica (the
// lowest round trip) for every read; Zone picks the replica in the
// client's zone (as Valkey 8.1's availability_zone would report it: here
// given by a test hook, since 8.0 and Redis report none), and falls back
// to a replica when none is in the zone.
func TestReplicaReadsLatencyAndZone(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{})
	primary, replicas := set.Data[0], set.Data[1:]
	zoned := replicas[1].Addr
	sentinel.SetZoneOf(t, func(addr string) string {
		if addr == zoned {
			return "eu-west-1b"
		}
		return "eu-west-1a"
	})
	for _, tc := range []struct {
		name string
		r    replica.Options
		want string // the replica every read goes to; "" any one replica
	}{
		{"latency", replica.Options{Route: replica.Latency}, ""},
		{"zone", replica.Options{Route: replica.Zone, Zone: "eu-west-1b"}, zoned},
		{"no replica in zone", replica.Options{Route: replica.Zone, Zone: "us-east-1a"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newClient(t, readOpts(set, tc.r))
			waitFor(t, tctx(t), "both replicas taking reads", func() bool { return len(cl.Replicas()) == 2 })
			for _, d := range set.Data {
				d.ResetStats(t)
			}
			const n = 50
			for range n {
				if _, err := cl.Do(tctx(t), "GET", "k"); err != nil {
					t.Fatal(err)
				}
			}
			if got := primary.CommandCalls(t, "get"); got != 0 {
				t.Errorf("the primary ran %d GETs", got)
			}
			var sum int64
			for _, r := range replicas {
				got := r.CommandCalls(t, "get")
				sum += got
				if tc.want == r.Addr && got != n {
					t.Errorf("%s (in the zone) ran %d of %d GETs", r.Addr, got, n)
				}
			}
			if sum != n {
				t.Errorf("the replicas ran %d GETs, want %d", sum, n)
			}
		})
	}
}

// TestReplicaReadsFallBack: with every replica down, reads go to the
// primary; with Strict, they fail with an error matching
// replica.ErrNoReplica, and nothing is sent anywhere.
func TestReplicaReadsFallBack(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{})
	primary := set.Data[0]
	cl := newClient(t, readOpts(set, replica.Options{Route: replica.Random}))
	strict := newClient(t, readOpts(set, replica.Options{Route: replica.Random, Strict: true}))
	for _, c := range []*sentinel.Client{cl, strict} {
		waitFor(t, tctx(t), "both replicas taking reads", func() bool { return len(c.Replicas()) == 2 })
	}
	for _, r := range set.Data[1:] {
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*sentinel.Client{cl, strict} {
		waitFor(t, tctx(t), "the replicas seen down", func() bool { return len(c.Replicas()) == 0 })
	}
	primary.ResetStats(t)
	const n = 20
	for range n {
		if _, err := cl.Do(tctx(t), "GET", "k"); err != nil {
			t.Fatalf("a read with every replica down: %v", err)
		}
	}
	for range n {
		_, err := strict.Do(tctx(t), "GET", "k")
		if !errors.Is(err, replica.ErrNoReplica) {
			t.Fatalf("a Strict read with every replica down: %v, want ErrNoReplica", err)
		}
	}
	if got := primary.CommandCalls(t, "get"); got != n {
		t.Errorf("the primary ran %d GETs, want the %d of the non-strict client", got, n)
	}
	if _, err := strict.Do(tctx(t), "SET", "k", "v"); err != nil {
		t.Errorf("a Strict client's write with every replica down: %v", err)
	}
}

// TestReplicaPromotedKeepsServing: reads go on through a failover (a
// replica promoted to primary keeps answering the reads routed to it);
// the only failures are reads in flight when a sentinel reconfigured
// their node, which ends its clients' connections (CLIENT KILL TYPE
// normal): conn.ErrBroken, never sent again. Writes go to the new
// primary, and once the sentinels list the replicas again the promoted
// node takes no more reads.
func TestReplicaPromotedKeepsServing(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{})
	cl := newClient(t, readOpts(set, replica.Options{Route: replica.Random}))
	waitFor(t, tctx(t), "both replicas taking reads", func() bool { return len(cl.Replicas()) == 2 })
	writeAndWait(t, cl, 1, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	reads := 0
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := cl.Do(tctx(t), "GET", "k0")
				mu.Lock()
				reads++
				if err == nil && v.Text() != "v0" {
					err = fmt.Errorf("GET k0: %q", v.Text())
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	old, now := failover(t, set)
	if err := set.WaitRole(old, "slave"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tctx(t), "the replicas listed again", func() bool {
		r := cl.Replicas()
		return len(r) == 2 && slices.Contains(r, old.Addr) && !slices.Contains(r, now.Addr)
	})
	close(stop)
	wg.Wait()
	for _, err := range errs {
		if !errors.Is(err, conn.ErrBroken) {
			t.Fatalf("a read through the failover: %v (of %d failed, %d reads)", err, len(errs), reads)
		}
	}
	t.Logf("%d reads through the failover, %d in flight on a connection a sentinel ended", reads, len(errs))
	for _, d := range set.Data {
		d.ResetStats(t)
	}
	for range 20 {
		if _, err := cl.Do(tctx(t), "GET", "k0"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Do(tctx(t), "SET", "k0", "v1"); err != nil {
		t.Fatal(err)
	}
	if got := now.CommandCalls(t, "get"); got != 0 {
		t.Errorf("the new primary ran %d GETs once the replicas were listed again", got)
	}
	if got := now.CommandCalls(t, "set"); got != 1 {
		t.Errorf("the new primary ran %d SETs, want 1", got)
	}
	if got := old.CommandCalls(t, "get"); got == 0 {
		t.Logf("the demoted primary took none of 20 reads at random (possible, rare)")
	}
}

// The URL options replica_reads, replica_zone and replica_strict set
// Options.Reads; a route by another name is refused.
func TestReplicaURLOptions(t *testing.T) {
	o, err := sentinel.ParseURL("redis+sentinel://s1,s2/m?replica_reads=zone&replica_zone=eu-1b&replica_strict=true")
	if err != nil {
		t.Fatal(err)
	}
	if want := (replica.Options{Route: replica.Zone, Zone: "eu-1b", Strict: true}); o.Reads != want {
		t.Errorf("Reads %+v, want %+v", o.Reads, want)
	}
	if o, err := sentinel.ParseURL("redis+sentinel://s1/m"); err != nil || o.Reads.On() {
		t.Errorf("without the options: %+v, %v: want replica reads off", o.Reads, err)
	}
	if _, err := sentinel.ParseURL("redis+sentinel://s1/m?replica_reads=nearest"); !errors.Is(err, sentinel.ErrBadOptions) {
		t.Errorf("replica_reads=nearest: %v, want ErrBadOptions", err)
	}
}
