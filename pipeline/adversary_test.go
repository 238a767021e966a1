package pipeline_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
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

// TestTypedRepliesOverLimits: replies over the connection's Limits are
// each their own handle's *resp.ReplyTooLargeError, whatever the
// decoder, under RESP2 and RESP3; the handles around them read their
// replies and the connection goes on. MaxAggregate counts a RESP2 flat
// array's elements and a RESP3 array's pairs: the same ZRANGE …
// WITHSCORES is over it under RESP2 only. (MaxAggregate stays above
// HELLO's 7 pairs: the handshake reads under the same Limits.)
func TestTypedRepliesOverLimits(t *testing.T) {
	for _, proto := range []int{2, 3} {
		c := setup(t, conn.Options{Protocol: proto, Limits: resp.Limits{MaxBulk: 64, MaxAggregate: 8}})
		big := strings.Repeat("x", 65)
		_, err := srv.Do("SET", "big", big)
		require.NoError(t, err)
		_, err = srv.Do("RPUSH", "long", "1", "2", "3", "4", "5", "6", "7", "8", "9")
		require.NoError(t, err)
		_, err = srv.Do("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
		require.NoError(t, err)
		var b pipeline.Batch
		cb := b.Builder()
		before := b.Int(cb.Strlen("big").Build())
		get := b.String(cb.Get("big").Build())
		lr := b.Strings(cb.Lrange("long", 0, -1).Build())
		sc := b.Scored(cb.Zrange("z", "0", "-1").Withscores().Build()) // 10 elements flat, 5 pairs
		after := b.Int(cb.Llen("long").Build())
		require.NoError(t, b.Exec(testCtx(t), c))
		n, err := before.Value()
		require.NoError(t, err)
		require.EqualValues(t, 65, n)
		_, _, err = get.Value()
		var tl *resp.ReplyTooLargeError
		require.ErrorAs(t, err, &tl, "RESP%d GET", proto)
		_, err = lr.Value()
		require.ErrorIs(t, err, resp.ErrReplyTooLarge, "RESP%d LRANGE", proto)
		_, err = sc.Value()
		if proto == 2 {
			require.ErrorIs(t, err, resp.ErrReplyTooLarge, "RESP2 ZRANGE WITHSCORES: 10 elements")
		} else {
			require.NoError(t, err, "RESP3 ZRANGE WITHSCORES: 5 pairs")
		}
		n, err = after.Value()
		require.NoError(t, err)
		require.EqualValues(t, 9, n)
	}
}
