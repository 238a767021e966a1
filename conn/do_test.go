package conn_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
)

// TestDoValues: Do writes numbers, byte slices and blocking timeouts as
// the server reads them, without strconv at the call site; what it cannot
// write is refused with ErrBadArg and nothing is sent.
func TestDoValues(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	n, err := c.Do(ctx, "INCRBY", []byte("n"), 5)
	require.NoError(t, err)
	require.EqualValues(t, 5, n.Int)
	_, err = c.Do(ctx, "SET", "u", uint64(math.MaxUint64))
	require.NoError(t, err)
	v, err := c.Do(ctx, "GET", "u")
	require.NoError(t, err)
	require.Equal(t, "18446744073709551615", v.Text())

	_, err = c.Do(ctx, "ZADD", "board", 30.5, "ann", math.Inf(1), "top", 1e-7, "tiny")
	require.NoError(t, err)
	for member, want := range map[string]float64{"ann": 30.5, "top": math.Inf(1), "tiny": 1e-7} {
		v, err := c.Do(ctx, "ZSCORE", "board", member)
		require.NoError(t, err)
		f, err := v.AsFloat()
		require.NoError(t, err)
		require.Equal(t, want, f, member)
	}

	start := time.Now()
	v, err = c.Do(ctx, "BLPOP", "empty", 10*time.Millisecond)
	require.NoError(t, err)
	require.True(t, v.IsNull(), "BLPOP with a Duration timeout = %v", v)
	require.GreaterOrEqual(t, time.Since(start), 10*time.Millisecond, "the server waited the timeout (not 0: for ever)")

	srv.ResetStats(t)
	for _, args := range [][]any{
		{"EXPIRE", "n", time.Second},
		{"SET", "n", true},
		{"ZADD", "board", math.NaN(), "x"},
	} {
		_, err := c.Do(ctx, args...)
		require.ErrorIs(t, err, conn.ErrBadArg, "%v", args)
	}
	require.Zero(t, srv.CommandCalls(t, "expire"))
	require.Zero(t, srv.CommandCalls(t, "set"))
	require.Zero(t, srv.CommandCalls(t, "zadd"))
}
