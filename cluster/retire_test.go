package cluster_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// debugCluster is haCluster with DEBUG on.
func debugCluster(t *testing.T, tag string) (c *servertest.Cluster, primary, replica *servertest.Server) {
	t.Helper()
	return haClusterWith(t, tag, servertest.Options{Debug: true})
}

// heldOpts are the options of a client whose calls a sleeping node
// holds: seeded by a primary other than the one the test demotes (a seed
// is never retired), no periodic refresh, a read timeout beyond the
// test's.
func heldOpts(c *servertest.Cluster, demoted *servertest.Server) func(*cluster.Options) {
	seed := c.Primaries[0]
	if seed == demoted {
		seed = c.Primaries[1]
	}
	return func(o *cluster.Options) {
		o.Seeds, o.RefreshInterval, o.Node.ReadTimeout = []string{seed.Addr}, -1, 2*waitLong
	}
}

// watched is the Handler of a submission the test watches: done gets
// its end.
type watched struct {
	mu      sync.Mutex
	replies []string // each reply's text, or its error
	done    chan error
}

func newWatched() *watched { return &watched{done: make(chan error, 1)} }

func (w *watched) Waits() bool { return false }
func (w *watched) Reply(_ int, v resp.Value) {
	w.mu.Lock()
	w.replies = append(w.replies, v.Text())
	w.mu.Unlock()
}
func (w *watched) Done(err error) { w.done <- err }

// pending fails the test when h has already ended: what follows would
// not be about a call in flight.
func (w *watched) pending(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-w.done:
		t.Fatalf("%s ended before the server woke: %v", what, err)
	default:
	}
}

// sleepy sends DEBUG SLEEP secs then GET key through cl, one pipeline to
// key's primary (DEBUG goes with the keyed command), without waiting:
// the node sleeps, and both calls are in flight until it wakes (a node
// writes its replies once it has run what it read).
func sleepy(t *testing.T, ctx context.Context, cl *cluster.Client, key, secs string) *watched {
	t.Helper()
	var b resp.Cmds
	b.Add("DEBUG", "SLEEP", secs)
	b.Add("GET", key)
	w, err := conn.CmdsOfBatch(&b)
	require.NoError(t, err)
	h := newWatched()
	require.NoError(t, cl.Send(ctx, w, h))
	return h
}

// takeover promotes replica at once (CLUSTER FAILOVER TAKEOVER: the old
// primary is asleep and cannot agree) and reads the topology from it
// until cl sees the old primary gone: cl retires its node.
func takeover(t *testing.T, ctx context.Context, replica, old *servertest.Server, cls ...*cluster.Client) {
	t.Helper()
	_, err := replica.Do("CLUSTER", "FAILOVER", "TAKEOVER")
	require.NoError(t, err)
	waitRole(t, replica, "master")
	for _, cl := range cls {
		eventually(t, "the client reading the takeover", func() bool {
			// From the new primary: a read from the sleeping one would
			// wait behind the pipeline on its connection.
			return cl.RefreshFrom(ctx, replica.Addr) == nil && !slices.Contains(cl.Primaries(), old.Addr)
		})
	}
}

// Calls written to a primary that then leaves the topology end with
// their real replies when the client reads the new topology: its node
// gets no new call, but its connection stays open until the calls on it
// have ended. Here the primary sleeps (DEBUG SLEEP) with a GET in flight
// behind the sleep while its replica takes over and the client reads the
// new topology; the pipeline then ends with the old primary's replies. (Before, the refresh closed the old primary's connection at
// once and the calls in flight on it ended with conn: closed, never
// re-sent: the producer error of TestE2ENativeOnClusterUnderFaults.) Its
// drained connection is closed after.
func TestRetiredNodeDrainsCallsInFlight(t *testing.T) {
	const tag = "drain"
	c, primary, replica := debugCluster(t, tag)
	cl := newClient(t, c, heldOpts(c, primary))
	ctx := testCtx(t)
	key := "{" + tag + "}k"
	_, err := cl.Do(ctx, "SET", key, "v")
	require.NoError(t, err)
	h := sleepy(t, ctx, cl, key, "5")
	takeover(t, ctx, replica, primary, cl)
	h.pending(t, "the pipeline")
	require.NoError(t, <-h.done, "the pipeline in flight on the retired primary")
	require.Equal(t, []string{"OK", "v"}, h.replies)
	eventually(t, "the retired primary's connection closed once drained", func() bool {
		return connsRunning(t, primary, "get") == 0
	})
}

// connsRunning counts the connections of s whose last command is name.
func connsRunning(t *testing.T, s *servertest.Server, name string) int {
	t.Helper()
	list, err := s.Do("CLIENT", "LIST")
	require.NoError(t, err)
	return strings.Count(list, " cmd="+name+" ")
}

// A retired node whose calls do not end is closed after the grace, or
// at Close, whichever comes first: its calls end with conn.ErrClosed (as
// any call Close cuts), and Close does not wait for the grace. Two
// clients have calls in flight on the sleeping primary when its replica
// takes over: the one with a short grace sees them end when it passes,
// long before the sleep ends; the other's (grace an hour) are still in
// flight then, and end at its Close.
func TestRetiredNodeClosedAfterGraceOrAtClose(t *testing.T) {
	const tag = "grace"
	c, primary, replica := debugCluster(t, tag)
	ctx := testCtx(t)
	key := "{" + tag + "}k"
	cluster.SetRetireGrace(t, 200*time.Millisecond)
	short := newClient(t, c, heldOpts(c, primary))
	cluster.SetRetireGrace(t, time.Hour)
	long := newClient(t, c, heldOpts(c, primary))
	for _, cl := range []*cluster.Client{short, long} {
		_, err := cl.Do(ctx, "SET", key, "v")
		require.NoError(t, err)
	}
	hs := sleepy(t, ctx, short, key, "10")
	// long's GET, behind short's sleep on the server: in flight, unanswered.
	hl := newWatched()
	w, err := conn.CmdsOf(resp.Command(nil, "GET", key))
	require.NoError(t, err)
	require.NoError(t, long.Send(ctx, w, hl))
	takeover(t, ctx, replica, primary, short, long)
	require.ErrorIs(t, <-hs.done, conn.ErrClosed, "short's pipeline, cut by its grace")
	hl.pending(t, "long's call")
	require.NoError(t, long.Close())
	require.ErrorIs(t, <-hl.done, conn.ErrClosed, "long's call, cut by Close")
}
