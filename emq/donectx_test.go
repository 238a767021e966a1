package emq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
)

// Finding 4: a context already done still sent: 200 Enqueue with a
// cancelled ctx created 200 jobs, and a cancelled Claim leased jobs to no
// one. Now every verb with a done ctx sends nothing.
func TestDoneContextVerbsSendNothing(t *testing.T) {
	q := fresh(t, "donectx")
	ctx := tctx(t)
	_, err := q.Enqueue(ctx, []byte("live"))
	require.NoError(t, err)
	srv.ResetStats(t)

	done, cancel := context.WithCancel(context.Background())
	cancel()
	for range 200 {
		_, err := q.Enqueue(done, []byte("x"))
		require.ErrorIs(t, err, context.Canceled)
	}
	_, err = q.EnqueueBatch(done, [][]byte{[]byte("a"), []byte("b")})
	require.ErrorIs(t, err, context.Canceled)
	_, err = q.EnqueueBulk(done, [][]byte{[]byte("a"), []byte("b")})
	require.ErrorIs(t, err, context.Canceled)
	_, _, err = q.Claim(done, time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	_, err = q.ClaimBatch(done, time.Minute, 10)
	require.ErrorIs(t, err, context.Canceled)
	_, err = q.Promote(done, 10)
	require.ErrorIs(t, err, context.Canceled)
	_, err = q.Reap(done, 10, 5)
	require.ErrorIs(t, err, context.Canceled)
	_, err = q.Count(done, StatePending)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, q.Pause(done), context.Canceled)

	x := dispatch.NewScripted(dial(t))
	var a dispatch.Args
	a.Key("k")
	require.ErrorIs(t, x.Eval(done, dispatch.NewScript("one", "return 1"), &a, nil), context.Canceled)

	require.Zero(t, srv.CommandCalls(t, "evalsha"), "a done ctx sent a transition")
	require.Zero(t, srv.CommandCalls(t, "zcard"))
	n, err := q.Count(ctx, StatePending)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the live job is pending")
	n, err = q.Count(ctx, StateActive)
	require.NoError(t, err)
	require.Zero(t, n, "a cancelled claim leased a job")
}
