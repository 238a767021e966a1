package cluster_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// An oversized reply from a node (LRANGE of 120,000 elements over a reduced
// MaxReplyBytes of 100,000 Values; the topology's replies fit) fails that call alone with
// resp.ErrReplyTooLarge: calls on the same node and on others made at the
// same time get their own replies, a batch across the nodes holding the
// big command gets every other reply, and the node's connection is not
// replaced. (Before the fix the decoder's protocol error broke the node's
// connection, failing every call in flight on it.)
func TestOversizedReplyFromNodeFailsAlone(t *testing.T) {
	c := needCluster(t)
	lim := resp.Limits{MaxReplyBytes: 100000 * int(unsafe.Sizeof(resp.Value{}))}
	cl := newClient(t, c, func(o *cluster.Options) { o.Node.Limits = lim })
	ctx := testCtx(t)

	const key = "{big}list"
	args := []any{"RPUSH", key}
	for i := range 120000 {
		args = append(args, "e"+strconv.Itoa(i))
	}
	_, err := cl.Do(ctx, args...)
	require.NoError(t, err)
	node, err := cl.Node(ctx, cl.Owner(key))
	require.NoError(t, err)
	idOf := func() int64 {
		v, err := node.Do(ctx, "CLIENT", "ID")
		require.NoError(t, err)
		return v.Int
	}
	id := idOf()

	// Keys on every node, one per goroutine.
	const workers = 40
	for g := range workers {
		_, err := cl.Do(ctx, "SET", "k"+strconv.Itoa(g), "v"+strconv.Itoa(g))
		require.NoError(t, err)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, workers*10)
	for g := range workers {
		wg.Go(func() {
			<-start
			for range 10 {
				v, err := cl.Do(ctx, "GET", "k"+strconv.Itoa(g))
				if err != nil || v.Text() != "v"+strconv.Itoa(g) {
					errs <- errors.New("GET k" + strconv.Itoa(g) + " = " + v.Text())
				}
			}
		})
	}
	var bigErr error
	wg.Go(func() {
		<-start
		_, bigErr = cl.Do(ctx, "LRANGE", key, "0", "-1")
	})
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var e *resp.ReplyTooLargeError
	require.ErrorAs(t, bigErr, &e)
	require.ErrorIs(t, bigErr, resp.ErrReplyTooLarge)
	require.False(t, errors.Is(bigErr, conn.ErrBroken))
	require.Equal(t, "MaxReplyBytes", e.Limit)

	// A batch over the nodes, the big command among the others.
	var b pipeline.Batch
	for g := range 6 {
		b.Add("GET", "k"+strconv.Itoa(g))
		if g == 2 {
			b.Add("LRANGE", key, "0", "-1")
		}
	}
	require.NoError(t, b.Exec(ctx, cl))
	for i, v := range b.Replies() {
		if i == 3 {
			require.ErrorIs(t, b.Err(i), resp.ErrReplyTooLarge)
			continue
		}
		g := i
		if i > 3 {
			g--
		}
		require.NoError(t, b.Err(i))
		require.Equal(t, "v"+strconv.Itoa(g), v.Text(), "reply %d", i)
	}
	v, err := cl.Do(ctx, "LRANGE", key, "0", "9")
	require.NoError(t, err)
	require.Len(t, v.Elems, 10)
	require.Equal(t, id, idOf(), "the node's connection was replaced")
}
