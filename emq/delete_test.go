package emq

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var everyState = []State{StatePending, StateActive, StateDelayed, StateDead, StateCompleted}

// TestDeleteEveryState: Delete takes a job out of whichever set holds it
// and deletes its row, answering the state it was in; a second Delete is
// ErrNotFound. The other jobs are untouched.
func TestDeleteEveryState(t *testing.T) {
	q := fresh(t, "ops-delete")
	ctx := tctx(t)
	ids := map[State]string{}
	for _, s := range everyState {
		ids[s], _ = inState(t, q, s)
	}
	for _, s := range everyState {
		id := ids[s]
		require.Equal(t, string(s), row(t, q, id)["state"])
		was, err := q.Delete(ctx, id)
		require.NoError(t, err)
		require.Equal(t, s, was)
		require.Empty(t, row(t, q, id), "row of a deleted %s job", s)
		require.Empty(t, where(t, q, id), "sets holding a deleted %s job", s)

		_, err = q.Delete(ctx, id)
		require.ErrorIs(t, err, ErrNotFound)
	}
	require.Empty(t, do(t, "KEYS", "emq:{ops-delete}:*"), "keys left")
}

// TestDeleteActiveLosesLease: the worker that held a deleted job finds
// its token stale on complete, retry and extend.
func TestDeleteActiveLosesLease(t *testing.T) {
	q := fresh(t, "ops-delete")
	ctx := tctx(t)
	id, token := inState(t, q, StateActive)
	was, err := q.Delete(ctx, id)
	require.NoError(t, err)
	require.Equal(t, StateActive, was)
	require.ErrorIs(t, q.Extend(ctx, id, token, time.Minute), ErrStale)
	require.ErrorIs(t, q.Complete(ctx, id, token, 0), ErrStale)
	_, err = q.Retry(ctx, id, token, 0, 5, "late")
	require.ErrorIs(t, err, ErrStale)
	require.Empty(t, row(t, q, id), "a stale verb re-created the row")
	require.Empty(t, where(t, q, id))
}

func TestDeleteBatch(t *testing.T) {
	q := fresh(t, "ops-delete")
	ctx := tctx(t)
	pending, _ := inState(t, q, StatePending)
	dead, _ := inState(t, q, StateDead)
	missing := q.ids.Next()
	was, err := q.DeleteBatch(ctx, []string{pending, missing, dead, pending})
	require.NoError(t, err)
	require.Equal(t, []State{StatePending, "", StateDead, ""}, was)

	// An invalid id anywhere: nothing is sent, nothing deleted.
	keep, _ := inState(t, q, StateDelayed)
	_, err = q.DeleteBatch(ctx, []string{keep, "not-an-id"})
	var ie *IDError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, ErrInvalidID)
	require.Equal(t, []State{StateDelayed}, where(t, q, keep))

	was, err = q.DeleteBatch(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, was)
}

// TestDeleteChunks: more ids than one call carries are deleted in
// several atomic calls, each answer in place.
func TestDeleteChunks(t *testing.T) {
	q := fresh(t, "ops-delete")
	ctx := tctx(t)
	res, err := q.EnqueueBulk(ctx, make([][]byte, 2*idChunk+5))
	require.NoError(t, err)
	ids := make([]string, 0, len(res)+1)
	for _, r := range res {
		require.NoError(t, r.Err)
		ids = append(ids, r.ID)
	}
	ids = append(ids, q.ids.Next())         // no such job, last
	_, err = q.Delete(ctx, ids[len(ids)-1]) // loads the script
	require.ErrorIs(t, err, ErrNotFound)
	srv.ResetStats(t)
	was, err := q.DeleteBatch(ctx, ids)
	require.NoError(t, err)
	require.Len(t, was, len(ids))
	for _, s := range was[:len(res)] {
		require.Equal(t, StatePending, s)
	}
	require.Equal(t, State(""), was[len(res)])
	require.Equal(t, int64(3), srv.CommandCalls(t, "evalsha"))
	n, err := q.PendingSize(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestDeleteErrorsMatch(t *testing.T) {
	require.True(t, errors.Is(ErrNotFound, ErrNotFound))
	q := fresh(t, "ops-delete")
	_, err := q.Delete(tctx(t), "JOB0KHTOWnGLuC")
	require.ErrorIs(t, err, ErrNotFound)
	require.NotErrorIs(t, err, ErrNotDead)
}
