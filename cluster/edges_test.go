package cluster_test

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// privateCluster starts a cluster of the test's own, for tests that
// change the topology.
func privateCluster(t *testing.T, primaries, replicasPer int) *servertest.Cluster {
	t.Helper()
	c, err := servertest.StartCluster(primaries, replicasPer, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// tagOn returns a hashtag, "{prefix…}", whose slot p serves.
func tagOn(c *servertest.Cluster, p *servertest.Server, prefix string) string {
	for i := 0; ; i++ {
		tag := "{" + prefix + strconv.Itoa(i) + "}"
		if owner(c, int(emq.Slot(tag))) == p {
			return tag
		}
	}
}

// WAIT counts the replicas that acknowledged the writes made before it on
// its connection. In a batch it goes with the writes before it, on their
// primary's connection; alone, or after writes to several primaries, or
// before any write, it is refused with an error that says how.
func TestWaitCountsTheBatchWrites(t *testing.T) {
	c := privateCluster(t, 2, 1)
	cl := newClient(t, c, func(o *cluster.Options) { o.RefreshInterval = -1 })
	ctx := testCtx(t)
	a, b := c.Primaries[0], c.Primaries[1]
	ka, kb := tagOn(c, a, "wa")+"k", tagOn(c, b, "wb")+"k"
	// A slot of b's moves to a after the client read the map (while every
	// replica runs: Valkey replicates SETSLOT and waits for it).
	km := tagOn(c, b, "wm") + "k"
	sm := strconv.Itoa(int(emq.Slot(km)))
	for _, n := range []*servertest.Server{a, b} {
		_, err := n.Do("CLUSTER", "SETSLOT", sm, "NODE", c.IDs[a.Addr])
		require.NoError(t, err)
	}
	// Replicas[i] replicates Primaries[i]: stop a's replica, so that no
	// new write of a's is acknowledged while a WAIT on a connection
	// without writes would still count it (its offset, 0, is acked).
	stopped := c.Replicas[0]
	require.NoError(t, syscall.Kill(stopped.Pid(), syscall.SIGSTOP))
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			require.NoError(t, syscall.Kill(stopped.Pid(), syscall.SIGCONT))
		}
	}
	t.Cleanup(resume)

	wait := func(key, timeout string) int64 {
		t.Helper()
		var bt pipeline.Batch
		bt.Add("SET", key, "v")
		bt.Add("WAIT", "1", timeout)
		require.NoError(t, bt.Exec(ctx, cl))
		require.Equal(t, "OK", bt.Reply(0).Text())
		require.Equal(t, resp.Integer, bt.Reply(1).Type, bt.Reply(1).String())
		return bt.Reply(1).Int
	}
	require.EqualValues(t, 1, wait(kb, "30000"), "b's replica acknowledged b's write")
	require.EqualValues(t, 0, wait(ka, "200"), "a's replica is stopped: the WAIT counted a write not its batch's")
	// km's slot moved from b to a behind the client's back: the SET is
	// refused with MOVED and runs on a, and its WAIT is sent again after
	// it there, on the same connection (on b it would count 1).
	moved := cl.Stats().Moved
	require.EqualValues(t, 0, wait(km, "200"), "the WAIT did not follow its write to a")
	require.Greater(t, cl.Stats().Moved, moved, "the MOVED path was not taken")
	resume()
	require.EqualValues(t, 1, wait(ka, "30000"), "a's replica, resumed, acknowledged a's write")

	// Alone: refused, saying how.
	_, err := cl.Do(ctx, "WAIT", "1", "100")
	require.ErrorIs(t, err, cluster.ErrUnroutable)
	var re *cluster.RouteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "WAIT", re.Command)
	require.Contains(t, err.Error(), "batch")
	require.Contains(t, err.Error(), "Dedicated")
	// Before any write, or after writes to two primaries: refused, nothing sent.
	for _, s := range c.Primaries {
		_, err := s.Do("CONFIG", "RESETSTAT")
		require.NoError(t, err)
	}
	var bt pipeline.Batch
	bt.Add("WAIT", "1", "100")
	bt.Add("SET", ka, "v")
	require.ErrorIs(t, bt.Exec(ctx, cl), cluster.ErrUnroutable)
	bt.Reset()
	bt.Add("SET", ka, "v")
	bt.Add("SET", kb, "v")
	bt.Add("WAIT", "1", "100")
	err = bt.Exec(ctx, cl)
	require.ErrorIs(t, err, cluster.ErrUnroutable)
	require.Contains(t, err.Error(), "several primaries")
	for _, s := range c.Primaries {
		require.Zero(t, calls(t, s, "set"), s.Addr)
		require.Zero(t, calls(t, s, "wait"), s.Addr)
	}

	// Over several calls: on a connection lent at the key's primary.
	err = cl.Dedicated(ctx, kb, func(d *conn.Conn) error {
		if _, err := d.Do(ctx, "SET", kb, "w"); err != nil {
			return err
		}
		n, err := d.Do(ctx, "WAIT", "1", "30000")
		if err == nil && n.Int != 1 {
			err = errors.New("WAIT on the lent connection: " + n.String())
		}
		return err
	})
	require.NoError(t, err)
}

// A transaction refused by MOVED (a stale slot map) or by ASK (a slot
// being migrated) is sent again whole, to where the refusal says, never
// its refused command alone outside it: EXEC returns the results and the
// transaction ran once.
func TestTransactionRedirectedWhole(t *testing.T) {
	c := privateCluster(t, 2, 0)
	src, dst := c.Primaries[0], c.Primaries[1]
	cl := newClient(t, c, func(o *cluster.Options) { o.RefreshInterval = -1 })
	ctx := testCtx(t)
	tx := func(key string) *pipeline.Batch {
		t.Helper()
		var b pipeline.Batch
		b.Add("MULTI")
		b.Add("INCR", key)
		b.Add("INCR", key)
		b.Add("EXEC")
		require.NoError(t, b.Exec(ctx, cl))
		return &b
	}
	check := func(b *pipeline.Batch, want int64) {
		t.Helper()
		require.Equal(t, "OK", b.Reply(0).Text())
		require.Equal(t, "QUEUED", b.Reply(1).Text(), "INCR ran outside the transaction: %s", b.Reply(1))
		require.Equal(t, "QUEUED", b.Reply(2).Text(), b.Reply(2).String())
		exec := b.Reply(3)
		require.Equal(t, resp.Array, exec.Type, "EXEC: %s", exec)
		require.Len(t, exec.Elems, 2)
		require.Equal(t, want-1, exec.Elems[0].Int)
		require.Equal(t, want, exec.Elems[1].Int)
	}

	// ASK: the key already moved to the importing node.
	ka := tagOn(c, src, "ta") + "c"
	sa := strconv.Itoa(int(emq.Slot(ka)))
	_, err := cl.Do(ctx, "SET", ka, "5")
	require.NoError(t, err)
	_, err = dst.Do("CLUSTER", "SETSLOT", sa, "IMPORTING", c.IDs[src.Addr])
	require.NoError(t, err)
	_, err = src.Do("CLUSTER", "SETSLOT", sa, "MIGRATING", c.IDs[dst.Addr])
	require.NoError(t, err)
	_, err = src.Do("MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), ka, "0", "5000")
	require.NoError(t, err)
	check(tx(ka), 7)
	require.Positive(t, cl.Stats().Ask, "the ASK path was not taken")
	for _, n := range []*servertest.Server{dst, src} {
		_, err := n.Do("CLUSTER", "SETSLOT", sa, "NODE", c.IDs[dst.Addr])
		require.NoError(t, err)
	}
	v, err := dst.Do("GET", ka)
	require.NoError(t, err)
	require.Equal(t, "7", v, "the transaction ran once")

	// MOVED: the slot moved after the client read the map.
	km := tagOn(c, src, "tm") + "c"
	sm := strconv.Itoa(int(emq.Slot(km)))
	for _, n := range []*servertest.Server{dst, src} {
		_, err := n.Do("CLUSTER", "SETSLOT", sm, "NODE", c.IDs[dst.Addr])
		require.NoError(t, err)
	}
	check(tx(km), 2)
	require.Positive(t, cl.Stats().Moved, "the MOVED path was not taken")
	v, err = dst.Do("GET", km)
	require.NoError(t, err)
	require.Equal(t, "2", v, "the transaction ran once")
	require.Zero(t, calls(t, src, "incr"), "an INCR ran on the old owner")
}

// A transaction in a batch is one unit routed to its slot's primary; the
// batch's other commands route as usual. A command that goes to every
// primary is refused in a batch, with nothing sent.
func TestTransactionInMixedBatch(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	p0, p1, p2 := c.Primaries[0], c.Primaries[1], c.Primaries[2]
	kt, k1, k2 := tagOn(c, p0, "tx")+"a", tagOn(c, p1, "o")+"b", tagOn(c, p2, "o")+"c"
	var b pipeline.Batch
	b.Add("INCR", k1)
	b.Add("MULTI")
	b.Add("SET", kt, "1")
	b.Add("PING")
	b.Add("INCR", kt)
	b.Add("EXEC")
	b.Add("INCR", k2)
	b.Add("PING")
	b.Add("INCR", k1)
	require.NoError(t, b.Exec(ctx, cl))
	require.EqualValues(t, 1, b.Reply(0).Int)
	require.Equal(t, "OK", b.Reply(1).Text())
	for i := 2; i <= 4; i++ {
		require.Equal(t, "QUEUED", b.Reply(i).Text(), "reply %d", i)
	}
	exec := b.Reply(5)
	require.Equal(t, resp.Array, exec.Type, exec.String())
	require.Len(t, exec.Elems, 3)
	require.EqualValues(t, 2, exec.Elems[2].Int)
	require.EqualValues(t, 1, b.Reply(6).Int)
	require.Equal(t, "PONG", b.Reply(7).Text())
	require.EqualValues(t, 2, b.Reply(8).Int)
	require.EqualValues(t, 1, calls(t, p0, "multi"))
	require.EqualValues(t, 1, calls(t, p0, "exec"))

	// A transaction still stays on one slot.
	b.Reset()
	b.Add("INCR", k1)
	b.Add("MULTI")
	b.Add("INCR", kt)
	b.Add("INCR", k2)
	b.Add("EXEC")
	require.ErrorIs(t, b.Exec(ctx, cl), cluster.ErrCrossSlot)

	// Every-primary commands in a batch: refused, nothing sent.
	for _, s := range c.Primaries {
		_, err := s.Do("CONFIG", "RESETSTAT")
		require.NoError(t, err)
	}
	for _, cmds := range [][]string{{"SET " + kt + " x", "DBSIZE"}, {"MULTI", "FLUSHALL", "EXEC"}, {"FLUSHALL", "SET " + k1 + " y"}} {
		b.Reset()
		for _, cmd := range cmds {
			b.Add(strings.Fields(cmd)...)
		}
		err := b.Exec(ctx, cl)
		require.ErrorIs(t, err, cluster.ErrUnroutable, "%v", cmds)
		var re *cluster.RouteError
		require.ErrorAs(t, err, &re)
		require.Contains(t, []string{"DBSIZE", "FLUSHALL"}, re.Command)
		require.Contains(t, err.Error(), "alone")
	}
	for _, s := range c.Primaries {
		for _, name := range []string{"set", "dbsize", "flushall", "multi"} {
			require.Zero(t, calls(t, s, name), "%s ran %s", s.Addr, name)
		}
	}
	n, err := cl.Do(ctx, "DBSIZE")
	require.NoError(t, err)
	require.EqualValues(t, 3, n.Int, "DBSIZE alone sums every primary")
}

// While a slot has no owner, calls on it fail with ErrNoNode and read the
// topology at most once per minimum interval, not once per call; the
// topology is still read, so the slot is served again once it has an
// owner.
func TestUnownedSlotRefreshBounded(t *testing.T) {
	c := privateCluster(t, 1, 0)
	p := c.Primaries[0]
	key := "{unowned}k"
	s := strconv.Itoa(int(emq.Slot(key)))
	_, err := p.Do("CLUSTER", "DELSLOTS", s)
	require.NoError(t, err)
	cl := newClient(t, c, func(o *cluster.Options) { o.RefreshInterval = -1 })
	ctx := testCtx(t)
	_, err = p.Do("CONFIG", "RESETSTAT")
	require.NoError(t, err)
	// At least 1,000 calls, over at least a few minimum intervals.
	n := 0
	start := time.Now()
	for n < 1000 || time.Since(start) < 3*cluster.MinRefresh {
		_, err := cl.Do(ctx, "GET", key)
		require.ErrorIs(t, err, cluster.ErrNoNode)
		n++
	}
	elapsed := time.Since(start)
	reads := calls(t, p, "cluster|shards") + calls(t, p, "cluster|slots")
	bound := int64(elapsed/cluster.MinRefresh) + 2
	t.Logf("%d calls on an unowned slot in %v: %d topology reads (bound %d)", n, elapsed, reads, bound)
	require.LessOrEqual(t, reads, bound, "the topology was read per call")
	require.Positive(t, reads, "the topology was never read again")

	// The slot gets an owner: a later call finds it.
	_, err = p.Do("CLUSTER", "ADDSLOTS", s)
	require.NoError(t, err)
	eventually(t, "the slot's new owner found", func() bool {
		_, err := cl.Do(ctx, "SET", key, "v")
		if err != nil {
			require.ErrorIs(t, err, cluster.ErrNoNode)
		}
		return err == nil
	})
}
