package emq

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTrimDeadByAgeAndCount: by age, then by count, then all, oldest
// death first; rows go with their ids; the other states are untouched.
func TestTrimDeadByAgeAndCount(t *testing.T) {
	q := fresh(t, "ops-trim")
	ctx := tctx(t)
	others := map[State]string{}
	for _, s := range []State{StatePending, StateActive, StateDelayed, StateCompleted} {
		others[s], _ = inState(t, q, s)
	}
	now := serverMillis(t)
	day := int64(24 * time.Hour / time.Millisecond)
	// Died 10, 8, 6, 4 and 2 days ago, then an hour ago, twice.
	ages := []int64{10 * day, 8 * day, 6 * day, 4 * day, 2 * day, day / 24, day / 24}
	ids := fillDead(t, q, len(ages), func(i int) int64 { return now - ages[i] }, func(int) string { return "x" })
	gone := func(n int) {
		t.Helper()
		for i, id := range ids {
			if i < n {
				require.Empty(t, where(t, q, id), "job %d", i)
				require.Empty(t, row(t, q, id), "row of job %d", i)
			} else {
				require.Equal(t, []State{StateDead}, where(t, q, id), "job %d", i)
				require.Equal(t, "dead", row(t, q, id)["state"], "job %d", i)
			}
		}
	}

	n, err := q.TrimDead(ctx, -1, -1)
	require.NoError(t, err)
	require.Zero(t, n, "no bound: nothing to trim")
	gone(0)

	n, err = q.TrimDead(ctx, 7*24*time.Hour, -1)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	gone(2)

	n, err = q.TrimDead(ctx, -1, 3)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	gone(4)

	// Both bounds: 3 days removes one, count 1 one more.
	n, err = q.TrimDead(ctx, 3*24*time.Hour, 1)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	gone(6)

	n, err = q.TrimDead(ctx, 0, -1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	gone(7)

	for s, id := range others {
		require.Equal(t, string(s), row(t, q, id)["state"])
	}
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, [4]int64{1, 1, 1, 0}, [4]int64{st.Pending, st.Active, st.Delayed, st.Dead})
}

// TestTrimDeadBounded: a dead set larger than one call's limit is trimmed
// 1,000 jobs per call.
func TestTrimDeadBounded(t *testing.T) {
	q := fresh(t, "ops-trim")
	ctx := tctx(t)
	ids := fillDead(t, q, 2*trimChunk+400, func(i int) int64 { return int64(i) }, func(int) string { return "x" })
	_, err := q.TrimDead(ctx, -1, len(ids)) // loads the script, trims nothing
	require.NoError(t, err)
	srv.ResetStats(t)
	n, err := q.TrimDead(ctx, -1, 100)
	require.NoError(t, err)
	require.Equal(t, len(ids)-100, n)
	require.Equal(t, int64(3), srv.CommandCalls(t, "evalsha"))
	kept := do(t, "ZRANGE", q.keys.Dead, "0", "-1")
	require.Equal(t, ids[len(ids)-100], kept[:IDLen], "the newest are kept")
	require.Equal(t, "dead", row(t, q, ids[len(ids)-1])["state"])
	require.Empty(t, row(t, q, ids[len(ids)-101]))
	require.Equal(t, strconv.Itoa(100+2), do(t, "DBSIZE"), "100 rows, the dead set and the fence")
}

func TestTrimDeadArgs(t *testing.T) {
	q := fresh(t, "ops-trim")
	for _, args := range [][]string{{"-2", "1", "1"}, {"1", "-2", "1"}, {"1", "1", "0"}, {"x", "1", "1"}} {
		_, err := q.sender.Do(tctx(t), "EVAL", scriptTrimDead.Source(), "2", q.keys.Dead, q.keys.Base, args[0], args[1], args[2])
		require.Error(t, err, "%v", args)
		require.Contains(t, err.Error(), "EMQARG ", "%v", args)
	}
}
