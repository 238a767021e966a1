package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCancelCommand: cancel ends a pending and a delayed job as dead
// "cancelled"; a finished one fails the run, named, and stays as it was.
func TestCancelCommand(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	p, err := q.Enqueue(ctx, []byte("p"))
	require.NoError(t, err)
	d, err := q.EnqueueIn(ctx, time.Hour, []byte("d"))
	require.NoError(t, err)
	require.Equal(t, p+" was pending\n"+d+" was delayed\n", ok(t, "cancel", p, d))
	out := failsWith(t, exitFailed, "1 of 1 jobs not cancelled: "+p, "cancel", p)
	require.Equal(t, p+" finished (dead)\n", out)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, st.Dead)
	page, err := q.Browse(ctx, "dead", 0, 10)
	require.NoError(t, err)
	for _, j := range page {
		require.Equal(t, "cancelled", j.Error)
	}
	failsWith(t, exitUsage, "cancel needs job ids", "cancel")
}

// TestWorkersCommand: workers lists the registry's live entries.
func TestWorkersCommand(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	require.Equal(t, "workers 0\n", ok(t, "workers"))
	_, err := q.Heartbeat(ctx, "h:1:ab", time.Minute, "host", "h", "pid", "1")
	require.NoError(t, err)
	out := ok(t, "workers")
	require.True(t, strings.HasPrefix(out, "workers 1\nh:1:ab heartbeat="), out)
	require.Contains(t, out, " host=h pid=1\n")
}
