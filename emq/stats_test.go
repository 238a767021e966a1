package emq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStatsEveryState: the counts of every set, the due delayed jobs, the
// expired leases, the paused flag, and the lag of the oldest pending job
// on the server's clock.
func TestStatsEveryState(t *testing.T) {
	q := fresh(t, "ops-stats")
	ctx := tctx(t)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, QueueStats{Time: st.Time}, st, "an empty queue")
	require.False(t, st.Time.IsZero())

	// The oldest pending job was minted 5 s before the server's now.
	sf, err := ComposeSnowflake(time.UnixMilli(serverMillis(t)-5000), 1, 0)
	require.NoError(t, err)
	oldest, err := FormatID(JobNamespace, sf)
	require.NoError(t, err)
	ok, err := q.EnqueueID(ctx, oldest, nil)
	require.NoError(t, err)
	require.True(t, ok)
	inState(t, q, StatePending)
	expired, _ := inState(t, q, StateActive)
	do(t, "ZADD", q.keys.Active, "XX", "1", expired) // its lease ran out
	inState(t, q, StateActive)
	inState(t, q, StateDelayed)
	_, err = q.EnqueueIn(ctx, 0, nil) // due at once
	require.NoError(t, err)
	inState(t, q, StateDead)
	inState(t, q, StateCompleted)
	require.NoError(t, q.Pause(ctx))

	before := serverMillis(t)
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, [4]int64{2, 2, 2, 1}, [4]int64{st.Pending, st.Active, st.Delayed, st.Dead})
	require.Equal(t, int64(1), st.Due)
	require.Equal(t, int64(1), st.Expired)
	require.True(t, st.Paused)
	require.Equal(t, oldest, st.Oldest)
	require.GreaterOrEqual(t, st.Time.UnixMilli(), before, "the server's clock, read after the last write")
	require.GreaterOrEqual(t, st.Lag, 5*time.Second)
	require.Equal(t, st.Time.Sub(SnowflakeTime(sf)), st.Lag)

	require.NoError(t, q.Resume(ctx))
	st, err = q.Stats(ctx)
	require.NoError(t, err)
	require.False(t, st.Paused)
}

// TestStatsForeignOldest: a pending id that is not a branded id shows as
// Oldest with no lag.
func TestStatsForeignOldest(t *testing.T) {
	q := fresh(t, "ops-stats")
	do(t, "ZADD", q.keys.Pending, "0", "0-not-an-id")
	st, err := q.Stats(tctx(t))
	require.NoError(t, err)
	require.Equal(t, "0-not-an-id", st.Oldest)
	require.Zero(t, st.Lag)
	require.Equal(t, int64(1), st.Pending)
}
