package emq

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/internal/servertest"
)

func TestShardNames(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8, 64} {
		names, err := ShardNames("orders", n)
		require.NoError(t, err)
		require.Len(t, names, n)
		seen := map[string]bool{}
		for i, m := range names {
			require.False(t, seen[m])
			seen[m] = true
			require.Equal(t, i, int(Slot(m))*n/SlotCount, "%s in range %d", m, i)
		}
		again, _ := ShardNames("orders", n)
		require.Equal(t, names, again, "deterministic")
	}
	_, err := ShardNames("orders", 0)
	require.Error(t, err)
	_, err = ShardNames("a{b", 2)
	require.Error(t, err)
}

// A sharded queue spreads jobs over its members; a sharded worker runs
// every job once, serving every member.
func TestShardedQueue(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := tctx(t)
	c := dial(t)
	sh, err := OpenSharded(ctx, c, "sharded", 4)
	require.NoError(t, err)
	require.Len(t, sh.Members(), 4)
	const jobs = 4000
	payloads := make([][]byte, jobs)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	res, err := sh.EnqueueBulk(ctx, payloads)
	require.NoError(t, err)
	for i := range 10 {
		id, err := sh.Enqueue(ctx, []byte("one-"+strconv.Itoa(i)))
		require.NoError(t, err)
		res = append(res, EnqueueResult{ID: id})
	}
	for _, q := range sh.Members() {
		n, err := q.Count(ctx, StatePending)
		require.NoError(t, err)
		require.InDelta(t, (jobs+10)/4, n, 10, "member %s", q.Name())
	}
	var mu sync.Mutex
	runs := map[string]int{}
	sw, err := NewShardedWorker(sh, HandlerFunc(func(_ context.Context, j *Job) error {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		return nil
	}), WorkerConfig{Concurrency: 16})
	require.NoError(t, err)
	require.NoError(t, sw.Start())
	waitFor(t, hangGuard, "every job", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == len(res)
	})
	require.NoError(t, sw.Shutdown(ctx))
	for _, r := range res {
		require.NoError(t, r.Err)
		require.Equal(t, 1, runs[r.ID], r.ID)
	}
	n, err := sh.Count(ctx, StatePending)
	require.NoError(t, err)
	require.Zero(t, n)
	require.EqualValues(t, len(res), sw.Stats().Completed)
}

// TestShardedWorkerStats: the sharded worker's Stats sums every counter
// of its members' (and the Hung gauge).
func TestShardedWorkerStats(t *testing.T) {
	sw := &ShardedWorker{}
	for i := range 2 {
		w, err := NewWorker(&Queue{}, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{})
		require.NoError(t, err)
		s := &w.stats
		for j, c := range []*atomic.Uint64{
			&s.rounds, &s.claims, &s.ackBatches, &s.claimed, &s.completed, &s.retried, &s.dead, &s.stale,
			&s.abandoned, &s.released, &s.panics, &s.leaseLost, &s.errors, &s.promoted, &s.reaped,
			&s.trimmed, &s.timedOut,
		} {
			c.Add(uint64(1 + i + j))
		}
		s.hung.Add(int64(3 + i))
		sw.workers = append(sw.workers, w)
	}
	sum := reflect.ValueOf(sw.Stats())
	a, b := reflect.ValueOf(sw.workers[0].Stats()), reflect.ValueOf(sw.workers[1].Stats())
	for i := range sum.NumField() {
		name := sum.Type().Field(i).Name
		require.NotZero(t, a.Field(i).Uint(), name)
		require.Equal(t, a.Field(i).Uint()+b.Field(i).Uint(), sum.Field(i).Uint(), name)
	}
}
