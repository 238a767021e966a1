package emq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWorkerTrimDefaults(t *testing.T) {
	c, err := WorkerConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, 90*24*time.Hour, c.DeadMaxAge)
	require.Equal(t, 10_000, c.DeadMaxCount)
	require.Equal(t, time.Minute, c.TrimInterval)

	c, err = WorkerConfig{DeadMaxAge: -1, DeadMaxCount: -1, TrimInterval: -1}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), c.DeadMaxAge)
	require.Equal(t, -1, c.DeadMaxCount)
	require.Equal(t, time.Duration(-1), c.TrimInterval)
}

// TestWorkerTrimsDead: the worker's trimmer keeps the newest
// DeadMaxCount dead jobs, MaintainLimit per call, and counts what it
// removed; the jobs it runs meanwhile are untouched.
func TestWorkerTrimsDead(t *testing.T) {
	q := fresh(t, "worker-trim")
	ids := fillDead(t, q, 25, func(i int) int64 { return int64(1000 + i) }, func(int) string { return "old" })
	done := make(chan string, 1)
	w := startWorker(t, q, HandlerFunc(func(_ context.Context, j *Job) error {
		done <- j.ID
		return nil
	}), WorkerConfig{DeadMaxCount: 5, DeadMaxAge: -1, TrimInterval: 5 * time.Millisecond, MaintainLimit: 7})
	waitFor(t, time.Second, "the trimmer", func() bool { return w.Stats().Trimmed == 20 })
	kept := do(t, "ZRANGE", q.keys.Dead, "0", "-1")
	require.Equal(t, ids[20], kept[:IDLen], "the newest five are kept")
	require.Equal(t, "dead", row(t, q, ids[24])["state"])
	require.Empty(t, row(t, q, ids[19]))

	id, err := q.Enqueue(tctx(t), nil)
	require.NoError(t, err)
	require.Equal(t, id, <-done)
	require.Equal(t, uint64(20), w.Stats().Trimmed, "nothing more to trim")
}

// TestWorkerTrimByAge: the default count bound aside, dead jobs older
// than DeadMaxAge go.
func TestWorkerTrimByAge(t *testing.T) {
	q := fresh(t, "worker-trim")
	now := serverMillis(t)
	ids := fillDead(t, q, 4, func(i int) int64 { return now - int64(4-i)*3_600_000 }, func(int) string { return "x" })
	w := startWorker(t, q, HandlerFunc(func(context.Context, *Job) error { return nil }),
		WorkerConfig{DeadMaxAge: 150 * time.Minute, TrimInterval: 5 * time.Millisecond})
	waitFor(t, time.Second, "the trimmer", func() bool { return w.Stats().Trimmed == 2 })
	for i, id := range ids {
		require.Equal(t, i >= 2, len(where(t, q, id)) == 1, "job %d", i)
	}
}
