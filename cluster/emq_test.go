package cluster_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/emq"
)

// jobLog records which jobs a worker ran, and how often.
type jobLog struct {
	mu   sync.Mutex
	runs map[string]int
	grew chan struct{} // told (without blocking) when a job first runs
}

func (l *jobLog) handler() emq.Handler {
	return emq.HandlerFunc(func(_ context.Context, j *emq.Job) error {
		l.mu.Lock()
		l.runs[j.ID]++
		first := l.runs[j.ID] == 1
		ch := l.grewLocked()
		l.mu.Unlock()
		if first {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		return nil
	})
}

// grewLocked returns the channel told of first runs; called with mu held.
func (l *jobLog) grewLocked() chan struct{} {
	if l.grew == nil {
		l.grew = make(chan struct{}, 1)
	}
	return l.grew
}

// waitCount waits until n jobs ran, or d passed; it reports whether
// they did.
func (l *jobLog) waitCount(n int, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		got, ch := len(l.runs), l.grewLocked()
		l.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// missing returns the ids never run, and how many ran more than once.
func (l *jobLog) missing(ids []string) (missing []string, dups int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		switch n := l.runs[id]; {
		case n == 0:
			missing = append(missing, id)
		case n > 1:
			dups += n - 1
		}
	}
	return missing, dups
}

// enqueueAll enqueues n jobs in batches and returns their ids.
func enqueueAll(t *testing.T, ctx context.Context, q *emq.Queue, n int) []string {
	t.Helper()
	var ids []string
	payloads := make([][]byte, 0, 500)
	for i := 0; i < n; i += cap(payloads) {
		payloads = payloads[:0]
		for j := i; j < min(n, i+cap(payloads)); j++ {
			payloads = append(payloads, []byte(strconv.Itoa(j)))
		}
		res, err := q.EnqueueBatch(ctx, payloads)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// The queue verbs and the worker run over a cluster unchanged: the fence
// lives on {emq}'s node, every transition of a queue on its slot's node.
func TestQueueOverCluster(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	var qs []*emq.Queue
	for _, name := range []string{"a", "b", "c"} { // one queue per primary
		q, err := emq.Open(ctx, cl, name)
		require.NoError(t, err)
		qs = append(qs, q)
	}
	v, err := owner(c, int(emq.Slot(emq.VersionKey))).Do("GET", emq.VersionKey)
	require.NoError(t, err)
	require.Equal(t, emq.Version, v)

	var all []string
	for _, q := range qs {
		all = append(all, enqueueAll(t, ctx, q, 3000)...)
	}
	log := &jobLog{runs: map[string]int{}}
	var ws []*emq.Worker
	for _, q := range qs {
		w, err := emq.NewWorker(q, log.handler(), emq.WorkerConfig{Concurrency: 16})
		require.NoError(t, err)
		require.NoError(t, w.Start())
		ws = append(ws, w)
	}
	log.waitCount(len(all), waitLong)
	for _, w := range ws {
		require.NoError(t, w.Shutdown(ctx))
	}
	missing, dups := log.missing(all)
	require.Empty(t, missing)
	require.Zero(t, dups)
	for _, q := range qs {
		for _, s := range []emq.State{emq.StatePending, emq.StateActive, emq.StateDelayed, emq.StateDead} {
			n, err := q.Count(ctx, s)
			require.NoError(t, err)
			require.Zero(t, n, "%s left in %s", q.Name(), s)
		}
	}
	st := cl.Stats()
	require.Zero(t, st.Moved)
	require.EqualValues(t, 0, st.Ask)
}
