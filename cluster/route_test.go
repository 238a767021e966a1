package cluster_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
)

// owner returns the primary of shared that serves slot s (StartCluster
// spreads the slots evenly in order).
func owner(c *servertest.Cluster, s int) *servertest.Server { return c.SlotOwner(s) }

// Every slots.tsv vector is routed to the primary that serves its slot.
func TestRoutesSlotVectors(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	f, err := os.Open("../../shared/vectors/slots.tsv")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		require.Len(t, cols, 3, line)
		key := cols[0]
		if key == "<empty>" {
			key = ""
		}
		s, err := strconv.Atoi(cols[2])
		require.NoError(t, err)
		_, err = cl.Do(ctx, "SET", key, "v"+cols[2])
		require.NoError(t, err, key)
		// The owner has it: asked directly, it answers, no MOVED.
		got, err := owner(c, s).Do("GET", key)
		require.NoError(t, err, "key %q, slot %d", key, s)
		require.Equal(t, "v"+cols[2], got)
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 10)
	require.Zero(t, cl.Stats().Moved, "a vector was sent to the wrong primary first")
}

// A command whose keys hash to different slots is refused before
// anything is sent; so is a transaction spanning slots.
func TestCrossSlotRefused(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	_, err := cl.Do(ctx, "MSET", "a", "1", "b", "2")
	require.ErrorIs(t, err, cluster.ErrCrossSlot)
	var ce *cluster.CrossSlotError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "MSET", ce.Command)
	_, err = cl.Do(ctx, "MSET", "{u}a", "1", "{u}b", "2")
	require.NoError(t, err)
	var b pipeline.Batch
	b.Add("MULTI")
	b.Add("SET", "a", "1")
	b.Add("SET", "b", "1")
	b.Add("EXEC")
	require.ErrorIs(t, b.Exec(ctx, cl), cluster.ErrCrossSlot)
	for _, s := range c.Primaries {
		require.Zero(t, calls(t, s, "multi"), s.Addr)
		require.Zero(t, calls(t, s, "set"), s.Addr)
	}
	// The same transaction on one hashtag runs on its node.
	b.Reset()
	b.Add("MULTI")
	b.Add("SET", "{t}a", "1")
	b.Add("INCR", "{t}a")
	b.Add("EXEC")
	require.NoError(t, b.Exec(ctx, cl))
	require.EqualValues(t, 2, b.Reply(3).Elems[1].Int)
}

// A batch over every primary is split, sent to all at once, and its
// replies come back in the caller's order.
func TestBatchSplitInOrder(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	var b pipeline.Batch
	const n = 3000
	for i := range n {
		b.Add("INCRBY", "k"+strconv.Itoa(i%97), strconv.Itoa(i))
	}
	require.NoError(t, b.Exec(ctx, cl))
	sums := map[int]int64{}
	for i := range n {
		k := i % 97
		sums[k] += int64(i)
		require.Equal(t, sums[k], b.Reply(i).Int, "reply %d", i)
	}
	var used int
	for _, s := range c.Primaries {
		if calls(t, s, "incrby") > 0 {
			used++
		}
	}
	require.Equal(t, 3, used, "the batch did not reach every primary")
	// Keyless commands go with the keyed ones, or anywhere.
	v, err := cl.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Text())
	v, err = cl.Do(ctx, "DBSIZE")
	require.NoError(t, err)
	require.EqualValues(t, 97, v.Int, "DBSIZE summed over the primaries")
}

// WATCH and a transaction over several calls run on a connection lent at
// the key's primary.
func TestDedicatedTransaction(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	_, err := cl.Do(ctx, "SET", "{acct}balance", "10")
	require.NoError(t, err)
	err = cl.Dedicated(ctx, "{acct}balance", func(d *conn.Conn) error {
		if _, err := d.Do(ctx, "WATCH", "{acct}balance"); err != nil {
			return err
		}
		v, err := d.Do(ctx, "GET", "{acct}balance")
		if err != nil {
			return err
		}
		if _, err := d.Do(ctx, "MULTI"); err != nil {
			return err
		}
		if _, err := d.Do(ctx, "SET", "{acct}balance", v.Text()+"0"); err != nil {
			return err
		}
		_, err = d.Do(ctx, "EXEC")
		return err
	})
	require.NoError(t, err)
	v, err := cl.Do(ctx, "GET", "{acct}balance")
	require.NoError(t, err)
	require.Equal(t, "100", v.Text())
}
