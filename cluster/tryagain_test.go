package cluster_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// halfMove starts moving the slot of tag from src to dst and migrates
// the keys given, leaving the others on src: a multi-key command on the
// slot's keys is then answered TRYAGAIN by src.
func halfMove(t *testing.T, c *servertest.Cluster, tag string, src, dst *servertest.Server, keys ...string) string {
	t.Helper()
	slot := strconv.Itoa(int(emq.Slot(tag)))
	_, err := dst.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", c.IDs[src.Addr])
	require.NoError(t, err)
	_, err = src.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", c.IDs[dst.Addr])
	require.NoError(t, err)
	for _, k := range keys {
		_, err = src.Do("MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), k, "0", "5000")
		require.NoError(t, err)
	}
	return slot
}

// finishMove migrates the slot's remaining keys and gives it to dst.
func finishMove(t *testing.T, c *servertest.Cluster, slot string, src, dst *servertest.Server, keys ...string) {
	t.Helper()
	for _, k := range keys {
		_, err := src.Do("MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), k, "0", "5000")
		require.NoError(t, err)
	}
	for _, n := range append([]*servertest.Server{dst, src}, c.Primaries...) {
		_, err := n.Do("CLUSTER", "SETSLOT", slot, "NODE", c.IDs[dst.Addr])
		require.NoError(t, err)
	}
}

// A transaction whose slot is half-moved: its multi-key command is
// queued with TRYAGAIN, so its EXEC answers EXECABORT and nothing of it
// ran. The client sends the whole transaction again after its backoff
// (never the EXEC alone, never a part): once the slot has moved, it runs
// exactly once on the new owner. When the slot stays half-moved past
// RetryTimeout, the call fails with ErrRedirectLimit, and nothing of it
// was applied.
func TestTransactionTryAgain(t *testing.T) {
	c := privateCluster(t, 2, 0)
	a, b := c.Primaries[0], c.Primaries[1]
	ctx := testCtx(t)

	t.Run("moved meanwhile", func(t *testing.T) {
		tag := tagOn(c, a, "ta")
		x, y, n := tag+"x", tag+"y", tag+"n"
		for _, k := range []string{x, y} {
			_, err := a.Do("SET", k, "0")
			require.NoError(t, err)
		}
		cl := newClient(t, c, func(o *cluster.Options) { o.RetryBackoff = 200 * time.Millisecond })
		slot := halfMove(t, c, tag, a, b, x) // x on b, y still on a

		var bt pipeline.Batch
		bt.Add("MULTI")
		bt.Add("MSET", x, "1", y, "1")
		bt.Add("INCR", n)
		bt.Add("EXEC")
		done := make(chan error, 1)
		go func() { done <- bt.Exec(ctx, cl) }()
		// The first answer was TRYAGAIN: the client waits its backoff,
		// during which the move is finished.
		for cl.Stats().TryAgain == 0 {
			select {
			case err := <-done:
				t.Fatalf("the transaction ended before any TRYAGAIN: %v, EXEC %s", err, bt.Reply(3))
			case <-time.After(time.Millisecond):
			}
		}
		finishMove(t, c, slot, a, b, y)
		require.NoError(t, <-done)
		exec := bt.Reply(3)
		require.Equal(t, resp.Array, exec.Type, "EXEC: %s", exec)
		require.Len(t, exec.Elems, 2)
		require.Equal(t, "OK", exec.Elems[0].Text())
		require.Equal(t, int64(1), exec.Elems[1].Int, "INCR ran once")
		for k, want := range map[string]string{x: "1", y: "1", n: "1"} {
			got, err := b.Do("GET", k)
			require.NoError(t, err)
			require.Equal(t, want, got, "%s on the new owner", k)
		}
		got, err := a.Do("DBSIZE")
		require.NoError(t, err)
		require.Equal(t, "0", got, "nothing left or applied on the old owner")
	})

	t.Run("never moved", func(t *testing.T) {
		tag := tagOn(c, a, "tb")
		x, y, n := tag+"x", tag+"y", tag+"n"
		for _, k := range []string{x, y} {
			_, err := a.Do("SET", k, "0")
			require.NoError(t, err)
		}
		cl := newClient(t, c, func(o *cluster.Options) {
			o.RetryBackoff = time.Millisecond
			o.RetryTimeout = 100 * time.Millisecond
		})
		slot := halfMove(t, c, tag, a, b, x)

		var bt pipeline.Batch
		bt.Add("MULTI")
		bt.Add("MSET", x, "1", y, "1")
		bt.Add("INCR", n)
		bt.Add("EXEC")
		err := bt.Exec(ctx, cl)
		if err == nil {
			// The batch ran; the transaction's own reply carries the
			// failure.
			err = bt.Reply(3).Err()
		}
		require.True(t, errors.Is(err, cluster.ErrRedirectLimit), "%v", err)
		require.GreaterOrEqual(t, cl.Stats().TryAgain, uint64(1))
		// Finish the move, and read every key at its one owner.
		finishMove(t, c, slot, a, b, y)
		for k, want := range map[string]string{x: "0", y: "0"} {
			got, err := b.Do("GET", k)
			require.NoError(t, err)
			require.Equal(t, want, got, "MSET half-applied: %s", k)
		}
		v, err := b.Do("EXISTS", n)
		require.NoError(t, err)
		require.Equal(t, "0", v, "INCR applied")
	})
}
