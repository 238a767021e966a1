package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
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

// TestSchedulesCommand: schedules lists each schedule of the queue with
// its last fired slot, by name.
func TestSchedulesCommand(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	require.Equal(t, "schedules 0\n", ok(t, "schedules"))
	slot := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli()).UTC()
	_, err := q.CronFire(ctx, "nightly", []byte("p"), time.Minute, []time.Time{slot})
	require.NoError(t, err)
	_, err = q.CronStart(ctx, "a-first", slot.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, "schedules 2\na-first last="+slot.Add(-time.Hour).Format(time.RFC3339Nano)+
		"\nnightly last="+slot.Format(time.RFC3339Nano)+"\n", ok(t, "schedules"))
	require.Contains(t, ok(t, "-json", "schedules"), `{"name":"nightly","last_ms":`+strconv.FormatInt(slot.UnixMilli(), 10)+`}`)
}

// TestUniqueCommand: unique names the job holding a key and its state; a
// free key (none, or its owner completed) fails the run.
func TestUniqueCommand(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	failsWith(t, exitFailed, "the key is free", "unique", "-key", "k")
	r, err := q.EnqueueUnique(ctx, emq.UniqueJob{Key: "k", Payload: []byte("p")})
	require.NoError(t, err)
	require.Equal(t, r.ID+" pending\n", ok(t, "unique", "-key", "k"))
	_, err = q.Delete(ctx, r.ID)
	require.NoError(t, err)
	failsWith(t, exitFailed, "the key is free", "unique", "-key", "k")
	failsWith(t, exitUsage, "unique needs -key", "unique")
}

// TestLimitsCommand: limits shows the queue's limits; -active, -rate and
// -per set those given and keep the others; a rate without a window is
// refused and changes nothing.
func TestLimitsCommand(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	require.Equal(t, "active 0\nrate 0\nper 0s\n", ok(t, "limits"))
	require.Equal(t, "active 5\nrate 0\nper 0s\n", ok(t, "limits", "-active", "5"))
	require.Equal(t, "active 5\nrate 10\nper 1s\n", ok(t, "limits", "-rate", "10", "-per", "1s"))
	l, err := q.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, emq.Limits{Active: 5, Rate: 10, Per: time.Second}, l)
	failsWith(t, exitFailed, "Rate and Per", "limits", "-per", "0")
	require.Equal(t, "active 5\nrate 10\nper 1s\n", ok(t, "limits"))
	require.Equal(t, `{"queue":"ops","active":0,"rate":10,"per_ms":1000}`+"\n", ok(t, "-json", "limits", "-active", "0"))
	failsWith(t, exitUsage, "cannot be negative", "limits", "-active", "-1")
	failsWith(t, exitUsage, "workers does not take -active", "workers", "-active", "1")
}
