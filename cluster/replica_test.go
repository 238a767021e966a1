package cluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
)

// withReads turns replica reads on, probing often, the periodic
// topology read off (the tests ask for the reads they want).
func withReads(r replica.Options) func(*cluster.Options) {
	return func(o *cluster.Options) {
		if r.ProbeInterval == 0 {
			r.ProbeInterval = 50 * time.Millisecond
		}
		o.Reads = r
		o.RefreshInterval = -1
	}
}

// replicaOf returns the replica of primary p (one per primary).
func replicaOf(c *servertest.Cluster, p *servertest.Server) *servertest.Server {
	for i, s := range c.Primaries {
		if s == p {
			return c.Replicas[i]
		}
	}
	return nil
}

// eventually polls cond every 10 ms until it holds, or fails the test
// at the deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitLong)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

// replicasUp reads the topology again (a replica just attached is
// "loading" in it until its first sync) until n replicas take reads.
func replicasUp(t *testing.T, cl *cluster.Client, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d replicas taking reads", n), func() bool {
		require.NoError(t, cl.Refresh(testCtx(t)))
		return len(cl.Replicas()) == n
	})
}

// setWait writes key=val through cl with a WAIT for the shard's replica
// in the same batch, so that a replica read sees it.
func setWait(t *testing.T, cl *cluster.Client, key, val string) {
	t.Helper()
	var b pipeline.Batch
	b.Add("SET", key, val)
	b.Add("WAIT", "1", "5000")
	require.NoError(t, b.Exec(testCtx(t), cl))
	require.Equal(t, int64(1), b.Reply(1).Int, "WAIT 1 after SET %s", key)
}

// TestReplicaReadsSkipPrimaries: on a cluster of 3 primaries with a
// replica each, every read (one GET, a batch of GETs split over the
// shards) goes to the replica of its slot's shard, never to a primary
// (each node's INFO commandstats); writes go to the primaries.
func TestReplicaReadsSkipPrimaries(t *testing.T) {
	c := privateCluster(t, 3, 1)
	cl := newClient(t, c, withReads(replica.Options{Route: replica.Random}))
	replicasUp(t, cl, 3)
	const n = 60
	for i := range n {
		setWait(t, cl, fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	for _, s := range c.Nodes() {
		s.ResetStats(t)
	}
	ctx := testCtx(t)
	for i := range n {
		v, err := cl.Do(ctx, "GET", fmt.Sprint("k", i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint("v", i), v.Text())
	}
	var b pipeline.Batch
	for i := range n {
		b.Add("GET", fmt.Sprint("k", i))
	}
	require.NoError(t, b.Exec(ctx, cl))
	for i := range n {
		require.Equal(t, fmt.Sprint("v", i), b.Reply(i).Text())
	}
	_, err := cl.Do(ctx, "SET", "w", "1")
	require.NoError(t, err)
	var sets, gets int64
	for _, p := range c.Primaries {
		require.Zero(t, p.CommandCalls(t, "get"), "primary %s ran GETs with its replica up", p.Addr)
		sets += p.CommandCalls(t, "set")
		r := replicaOf(c, p)
		g := r.CommandCalls(t, "get")
		require.Positive(t, g, "replica %s took none of the reads of its shard", r.Addr)
		gets += g
	}
	require.Equal(t, int64(2*n), gets)
	require.Equal(t, int64(1), sets)
}

// TestReplicaReadsFallBackCluster: with every replica down, reads go to
// the primaries; with Strict they fail with an error matching
// replica.ErrNoReplica (nothing sent).
func TestReplicaReadsFallBackCluster(t *testing.T) {
	c := privateCluster(t, 2, 1)
	cl := newClient(t, c, withReads(replica.Options{Route: replica.Latency}))
	strict := newClient(t, c, withReads(replica.Options{Route: replica.Random, Strict: true}))
	for _, x := range []*cluster.Client{cl, strict} {
		replicasUp(t, x, 2)
	}
	for _, r := range c.Replicas {
		require.NoError(t, r.Stop())
	}
	for _, x := range []*cluster.Client{cl, strict} {
		eventually(t, "the replicas seen down", func() bool { return len(x.Replicas()) == 0 })
	}
	for _, p := range c.Primaries {
		p.ResetStats(t)
	}
	ctx := testCtx(t)
	const n = 20
	for i := range n {
		_, err := cl.Do(ctx, "GET", fmt.Sprint("k", i))
		require.NoError(t, err, "a read with every replica down")
		_, err = strict.Do(ctx, "GET", fmt.Sprint("k", i))
		require.True(t, errors.Is(err, replica.ErrNoReplica), "a Strict read with every replica down: %v", err)
	}
	var gets int64
	for _, p := range c.Primaries {
		gets += p.CommandCalls(t, "get")
	}
	require.Equal(t, int64(n), gets, "the primaries ran the non-strict client's reads, none of the strict one's")
	_, err := strict.Do(ctx, "SET", "k", "v")
	require.NoError(t, err, "a Strict client's write")
}

// slotOwnerSeen reports whether node s's view of the cluster (CLUSTER
// NODES) gives slot sl to the node whose id is id.
func slotOwnerSeen(t *testing.T, s *servertest.Server, sl int, id string) bool {
	out, err := s.Do("CLUSTER", "NODES")
	require.NoError(t, err)
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != id {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, _ := strings.Cut(r, "-")
			if hi == "" {
				hi = lo
			}
			var a, b int
			if _, err := fmt.Sscan(lo, &a); err != nil {
				continue
			}
			if _, err := fmt.Sscan(hi, &b); err != nil {
				continue
			}
			if a <= sl && sl <= b {
				return true
			}
		}
	}
	return false
}

// TestReplicaReadFollowsMoved: after a slot moves, a read sent to the
// old shard's replica (the Client's topology is stale) is answered MOVED
// by it and followed to the new owner, with the right value; the next
// read goes to the new shard's replica.
func TestReplicaReadFollowsMoved(t *testing.T) {
	c := privateCluster(t, 2, 1)
	cl := newClient(t, c, withReads(replica.Options{Route: replica.Random}))
	replicasUp(t, cl, 2)
	const key = "{mv}k"
	sl := int(emq.Slot(key))
	src := owner(c, sl)
	dst := c.Primaries[0]
	if dst == src {
		dst = c.Primaries[1]
	}
	srcRep, dstRep := replicaOf(c, src), replicaOf(c, dst)
	setWait(t, cl, key, "v")
	ctx := testCtx(t)
	srcRep.ResetStats(t)
	v, err := cl.Do(ctx, "GET", key)
	require.NoError(t, err)
	require.Equal(t, "v", v.Text())
	require.Equal(t, int64(1), srcRep.CommandCalls(t, "get"), "the read before the move went to the source's replica")

	migrateSlot(t, c, sl, src, dst, func() {})
	eventually(t, "the source's replica sees the slot moved", func() bool {
		return slotOwnerSeen(t, srcRep, sl, c.IDs[dst.Addr])
	})
	eventually(t, "the key on the destination's replica", func() bool {
		info, err := dstRep.Do("INFO", "keyspace")
		require.NoError(t, err)
		return strings.Contains(info, "db0:keys=1,")
	})
	for _, s := range c.Nodes() {
		s.ResetStats(t)
	}
	moved := cl.Stats().Moved
	v, err = cl.Do(ctx, "GET", key)
	require.NoError(t, err)
	require.Equal(t, "v", v.Text(), "the read after the move")
	require.Equal(t, moved+1, cl.Stats().Moved, "the source's replica answered MOVED, followed")
	require.Equal(t, int64(1), dst.CommandCalls(t, "get"), "the MOVED read ran on the new owner")
	require.Zero(t, srcRep.CommandCalls(t, "get"))

	v, err = cl.Do(ctx, "GET", key)
	require.NoError(t, err)
	require.Equal(t, "v", v.Text())
	require.Equal(t, int64(1), dstRep.CommandCalls(t, "get"), "the next read went to the new shard's replica")
	require.Equal(t, int64(1), dst.CommandCalls(t, "get"))
}

// TestReplicaPromotedKeepsServingCluster: a replica promoted by CLUSTER
// FAILOVER keeps answering the reads routed to it; writes follow MOVED to
// it; once the topology is read again the demoted primary takes the
// reads.
func TestReplicaPromotedKeepsServingCluster(t *testing.T) {
	c := privateCluster(t, 1, 1)
	p, r := c.Primaries[0], c.Replicas[0]
	cl := newClient(t, c, withReads(replica.Options{Route: replica.Random}))
	replicasUp(t, cl, 1)
	setWait(t, cl, "k", "v")
	ctx := testCtx(t)
	_, err := r.Do("CLUSTER", "FAILOVER")
	require.NoError(t, err)
	eventually(t, "the replica promoted", func() bool {
		info, err := r.Do("INFO", "replication")
		require.NoError(t, err)
		return strings.Contains(info, "role:master")
	})
	r.ResetStats(t)
	for range 10 {
		v, err := cl.Do(ctx, "GET", "k")
		require.NoError(t, err, "a read on the promoted replica")
		require.Equal(t, "v", v.Text())
	}
	require.Equal(t, int64(10), r.CommandCalls(t, "get"), "the promoted replica kept serving its reads")
	_, err = cl.Do(ctx, "SET", "k", "v2")
	require.NoError(t, err, "a write after the failover")
	eventually(t, "the demoted primary listed as the replica", func() bool {
		require.NoError(t, cl.Refresh(ctx))
		rs := cl.Replicas()
		return len(rs) == 1 && rs[0] == p.Addr
	})
	eventually(t, "the demoted primary has the write", func() bool {
		v, err := cl.Do(ctx, "GET", "k")
		require.NoError(t, err)
		return v.Text() == "v2"
	})
	r.ResetStats(t)
	p.ResetStats(t)
	_, err = cl.Do(ctx, "GET", "k")
	require.NoError(t, err)
	require.Equal(t, int64(1), p.CommandCalls(t, "get"), "the demoted primary took the read")
	require.Zero(t, r.CommandCalls(t, "get"))
}

// TestReplicaReadAllocs: a read routed to a replica allocates what the
// same read to the primary does (replica reads off), and a write with
// replica reads on what it does with them off: the routing adds no
// allocation to a call.
func TestReplicaReadAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	c := privateCluster(t, 1, 1)
	off := newClient(t, c)
	on := newClient(t, c, withReads(replica.Options{Route: replica.Random}))
	replicasUp(t, on, 1)
	ctx := testCtx(t)
	allocs := func(cl *cluster.Client, cmd resp.Cmd) float64 {
		run := func() {
			if err := cl.DoFunc(ctx, cmd, func(resp.Value) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 {
			run()
		}
		return testing.AllocsPerRun(1000, run)
	}
	get, set := resp.Command(nil, "GET", "k"), resp.Command(nil, "SET", "k", "v")
	c.Replicas[0].ResetStats(t)
	if a, b := allocs(off, get), allocs(on, get); a != b {
		t.Errorf("GET: %v allocations per call to a replica, %v to the primary", b, a)
	}
	require.Positive(t, c.Replicas[0].CommandCalls(t, "get"), "the reads went to the replica")
	if a, b := allocs(off, set), allocs(on, set); a != b {
		t.Errorf("SET: %v allocations per call with replica reads on, %v off", b, a)
	}
}
