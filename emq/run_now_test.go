package emq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunNowEveryState: a delayed job moves to pending before its due
// time with its attempts and error kept, and is the next claimed; a job
// in any other state, or none, is ErrNotDelayed and nothing changes.
func TestRunNowEveryState(t *testing.T) {
	q := fresh(t, "ops-run-now")
	ctx := tctx(t)
	for _, s := range []State{StatePending, StateActive, StateDead, StateCompleted} {
		id, _ := inState(t, q, s)
		before, sets := row(t, q, id), where(t, q, id)
		require.ErrorIs(t, q.RunNow(ctx, id), ErrNotDelayed, "run now of a %s job", s)
		require.Equal(t, before, row(t, q, id), "run now of a %s job changed its row", s)
		require.Equal(t, sets, where(t, q, id))
	}
	require.ErrorIs(t, q.RunNow(ctx, q.ids.Next()), ErrNotDelayed, "run now of no job")

	do(t, "DEL", q.keys.Pending)
	id, _ := inState(t, q, StateDelayed)
	before := row(t, q, id)
	require.NoError(t, q.RunNow(ctx, id))
	got := row(t, q, id)
	require.Equal(t, "pending", got["state"])
	require.Equal(t, before["attempts"], got["attempts"])
	require.Equal(t, before["error"], got["error"])
	require.Equal(t, []State{StatePending}, where(t, q, id))
	require.Equal(t, "0", score(t, q.keys.Pending, id))
	j, ok, err := q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, id, j.ID)

	done, err := q.RunNowBatch(ctx, []string{id, id})
	require.NoError(t, err)
	require.Equal(t, []bool{false, false}, done)
	_, err = q.RunNowBatch(ctx, []string{"nope"})
	require.ErrorIs(t, err, ErrInvalidID)
}
