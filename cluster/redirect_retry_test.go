package cluster_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// A producer enqueueing while its queue's slot is moved key by key,
// slowly: from MIGRATING on, every enqueue (a new row plus the pending
// set: some keys missing) is answered TRYAGAIN or ASK, for the whole
// window, which lasts far longer than MaxRedirects sends. Each call waits
// (backoff) and retries until SETSLOT NODE ends the move: no producer
// error, and every acknowledged job is on the final owner, in its
// pending set.
func TestEnqueueWaitsOutSlowMigration(t *testing.T) {
	c := privateCluster(t, 3, 0)
	cl := newClient(t, c)
	ctx := testCtx(t)

	const name = "slow"
	q, err := emq.Open(ctx, cl, name)
	require.NoError(t, err)
	keys := q.Keys()
	s := int(emq.Slot(keys.Pending))
	src := owner(c, s)
	dst := c.Primaries[0]
	if dst == src {
		dst = c.Primaries[1]
	}
	prefill := enqueueAll(t, ctx, q, 150) // 151 keys to move one by one

	// Producers, each reporting its first acknowledged job (so the move
	// starts under load) and, at the end, its ids or its error.
	const producers = 4
	stop := make(chan struct{})
	started := make(chan struct{}, producers)
	type result struct {
		ids []string
		err error
	}
	results := make(chan result, producers)
	var acks atomic.Int64 // every acknowledged enqueue
	for range producers {
		go func() {
			var r result
			defer func() { results <- r }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, err := q.Enqueue(ctx, []byte("p"))
				if err != nil {
					r.err = err
					return
				}
				acks.Add(1)
				if r.ids = append(r.ids, id); len(r.ids) == 1 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range producers {
		<-started
	}

	// The move, key by key; the window stays open until the producers
	// met TRYAGAIN more often than MaxRedirects (5) sends each.
	slot := strconv.Itoa(s)
	before := cl.Stats()
	_, err = dst.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", c.IDs[src.Addr])
	require.NoError(t, err)
	_, err = src.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", c.IDs[dst.Addr])
	require.NoError(t, err)
	begin := time.Now()
	for {
		out, err := src.Do("CLUSTER", "GETKEYSINSLOT", slot, "1")
		require.NoError(t, err)
		k := strings.TrimSpace(out)
		if k == "" {
			break
		}
		_, err = src.Do("MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "KEYS", k)
		require.NoError(t, err)
	}
	eventually(t, "TRYAGAIN met more often than MaxRedirects per producer", func() bool {
		select {
		case r := <-results:
			t.Fatalf("a producer ended during the move: %v", r.err)
		default:
		}
		return cl.Stats().TryAgain-before.TryAgain > producers*(5+1)
	})
	window := time.Since(begin)
	for _, n := range append([]*servertest.Server{dst, src}, c.Primaries...) {
		_, err := n.Do("CLUSTER", "SETSLOT", slot, "NODE", c.IDs[dst.Addr])
		require.NoError(t, err)
	}
	// Some enqueues after the move (each producer's call in the window
	// ends, by a MOVED or a topology refresh), then stop.
	afterAcks := acks.Load()
	eventually(t, "enqueues acknowledged after the move", func() bool {
		select {
		case r := <-results:
			t.Fatalf("a producer ended after the move: %v", r.err)
		default:
		}
		return acks.Load()-afterAcks >= 4*producers
	})
	close(stop)
	acked := len(prefill)
	var ids []string
	for range producers {
		r := <-results
		require.NoError(t, r.err, "a producer failed during the migration")
		ids = append(ids, r.ids...)
	}
	acked += len(ids)
	st := cl.Stats()
	t.Logf("window %v, %d enqueued during the run; %+v", window, len(ids), st)
	require.Positive(t, st.TryAgain, "the producers never met TRYAGAIN: the test tested nothing")

	// Every acknowledged job is on the final owner, nothing on the old.
	for _, id := range append(prefill, ids...) {
		v, err := dst.Do("ZSCORE", keys.Pending, id)
		require.NoError(t, err)
		require.NotEmpty(t, v, "job %s not pending on the final owner", id)
		v, err = dst.Do("EXISTS", keys.Job(id))
		require.NoError(t, err)
		require.Equal(t, "1", v, "row of %s", id)
	}
	n, err := dst.Do("ZCARD", keys.Pending)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(acked), n, "pending on the final owner: only the acknowledged jobs")
	n, err = src.Do("CLUSTER", "COUNTKEYSINSLOT", slot)
	require.NoError(t, err)
	require.Equal(t, "0", n, "keys of the slot left on the old owner")
}

// TRYAGAIN is waited out only for RetryTimeout: a slot left half-moved
// fails the call with ErrRedirectLimit, after more sends than
// MaxRedirects (TRYAGAIN is not a redirect), and ctx's end ends the wait
// sooner with ctx's error. Nothing ran.
func TestTryAgainBounds(t *testing.T) {
	c := privateCluster(t, 2, 0)
	a, b := c.Primaries[0], c.Primaries[1]
	ctx := testCtx(t)
	tag := tagOn(c, a, "tb")
	x, y := tag+"x", tag+"y"
	for _, k := range []string{x, y} {
		_, err := a.Do("SET", k, "0")
		require.NoError(t, err)
	}
	slot := halfMove(t, c, tag, a, b, x) // MSET x y: TRYAGAIN for ever

	cl := newClient(t, c, func(o *cluster.Options) {
		o.RetryBackoff = time.Millisecond
		o.MaxRedirects = 1
		o.RetryTimeout = 300 * time.Millisecond
	})
	_, err := cl.Do(ctx, "MSET", x, "1", y, "1")
	require.ErrorIs(t, err, cluster.ErrRedirectLimit)
	var re *cluster.RedirectError
	require.True(t, errors.As(err, &re))
	require.True(t, strings.HasPrefix(re.Last, "TRYAGAIN"), re.Last)
	require.Greater(t, re.Hops, 3, "TRYAGAIN counted as a redirect")

	cl2 := newClient(t, c, func(o *cluster.Options) { o.RetryBackoff = time.Millisecond; o.RetryTimeout = -1 })
	short, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cl2.Do(short, "MSET", x, "2", y, "2")
		done <- err
	}()
	for cl2.Stats().TryAgain < 3 {
		select {
		case err := <-done:
			t.Fatalf("ended before its ctx: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	finishMove(t, c, slot, a, b, y)
	for _, k := range []string{x, y} {
		v, err := b.Do("GET", k)
		require.NoError(t, err)
		require.Equal(t, "0", v, "%s: the refused MSET ran", k)
	}
}

// NOSCRIPT met through ASK: the importing node lacks the script. The
// client loads it there and sends the command again with ASKING, as the
// ASK said: no MOVED detour back to the source. The reload is not a
// redirect: with MaxRedirects 1 (one ASK) the call still succeeds.
func TestNoScriptThroughAsk(t *testing.T) {
	for _, max := range []int{1, 2} {
		t.Run("max"+strconv.Itoa(max), func(t *testing.T) {
			c := privateCluster(t, 2, 0)
			a, b := c.Primaries[0], c.Primaries[1]
			ctx := testCtx(t)
			tag := tagOn(c, a, "ns")
			k := tag + "k"
			_, err := a.Do("SET", k, "10")
			require.NoError(t, err)
			slot := halfMove(t, c, tag, a, b, k) // k on b; the slot still a's
			_, err = a.Do("SCRIPT", "LOAD", incrScript)
			require.NoError(t, err) // loaded on the source only

			cl := newClient(t, c, func(o *cluster.Options) { o.MaxRedirects = max })
			x := dispatch.NewScripted(cl)
			s := dispatch.NewScript("incr", incrScript)
			var args dispatch.Args
			args.Key(k)
			args.ArgInt(5)
			var got int64
			err = x.Eval(ctx, s, &args, func(v resp.Value) error {
				var err error
				got, err = v.AsInt()
				return err
			})
			require.NoError(t, err)
			require.Equal(t, int64(15), got)
			st := cl.Stats()
			require.Equal(t, uint64(1), st.Ask, "%+v", st)
			require.Zero(t, st.Moved, "the reload went without ASKING: %+v", st)
			require.Equal(t, int64(1), calls(t, b, "script|load"))
			require.Equal(t, int64(2), calls(t, b, "asking"), "ASKING before each send to b: NOSCRIPT, then the run")
			finishMove(t, c, slot, a, b)
			v, err := b.Do("GET", k)
			require.NoError(t, err)
			require.Equal(t, "15", v, "ran once, on the importing node")
		})
	}
}
