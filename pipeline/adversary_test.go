package pipeline_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

// TestTypedBatchBuiltWrongIndex: a command built wrong (NaN, missing
// arguments, stale) is not in the batch: its handle's Index is -1, not
// the index of the next command (which it used to share), its Value is
// the build error, Exec sends nothing, and the batch works again after
// Reset.
func TestTypedBatchBuiltWrongIndex(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	cb := b.Builder()
	first := b.Int(cb.Incr("n").Build())
	nan := b.Int(cb.Zadd("z", cmds.ScoreMember{Score: math.NaN(), Member: "m"}).Build())
	stale := cb.Get("k").Build()
	cb.Get("other").Build()
	old := b.String(stale)
	next := b.Int(cb.Incr("n").Build())
	require.Equal(t, 0, first.Index())
	require.Equal(t, -1, nan.Index())
	require.Equal(t, -1, old.Index())
	require.Equal(t, 1, next.Index())
	require.Equal(t, 2, b.Len())

	err := b.Exec(testCtx(t), c)
	require.ErrorIs(t, err, cmds.ErrNaN, "the first build error")
	for _, h := range []pipeline.Reply[int64]{first, nan, next} {
		_, err := h.Value()
		require.ErrorIs(t, err, cmds.ErrNaN)
	}
	_, _, err = old.Value()
	require.ErrorIs(t, err, cmds.ErrNaN)
	got, err := srv.Do("EXISTS", "n")
	require.NoError(t, err)
	require.Equal(t, "0", got, "nothing was sent")

	b.Reset()
	n := b.Int(b.Builder().Incr("n").Build())
	require.NoError(t, b.Exec(testCtx(t), c))
	v, err := n.Value()
	require.NoError(t, err)
	require.EqualValues(t, 1, v)
	_, err = nan.Value()
	require.True(t, errors.Is(err, pipeline.ErrStale), "a handle from before Reset: %v", err)
}

// TestTypedHandleQueuedAfterExec: a handle queued after an Exec, in a
// batch not Reset, read before the next Exec is ErrNotExecuted (it used
// to panic: "pipeline: Reply(1) of 1 replies"), and the next Exec gives
// it its reply; a command built wrong after a successful Exec is its
// build error, not ErrNotExecuted nor the old replies.
func TestTypedHandleQueuedAfterExec(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	first := b.Int(b.Builder().Incr("n").Build())
	require.NoError(t, b.Exec(testCtx(t), c))
	late := b.Int(b.Builder().Incr("n").Build())
	_, err := late.Value()
	require.ErrorIs(t, err, pipeline.ErrNotExecuted)
	v, err := first.Value()
	require.NoError(t, err)
	require.EqualValues(t, 1, v, "the first Exec's reply is still there")

	require.NoError(t, b.Exec(testCtx(t), c))
	v, err = late.Value()
	require.NoError(t, err)
	require.EqualValues(t, 3, v, "the second Exec sent both INCRs")

	bad := b.Int(b.Builder().Del().Build())
	_, err = bad.Value()
	require.ErrorIs(t, err, cmds.ErrMissing)
	require.ErrorIs(t, b.Exec(testCtx(t), c), cmds.ErrMissing)
}
