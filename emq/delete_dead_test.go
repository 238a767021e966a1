package emq

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeleteDead: the filter's jobs leave dead with their rows, over
// several bounded pages (three calls of at most 1,000 examined); the
// others stay dead, untouched; a job in dead whose row says another state
// (a peer's) is not deleted; a ghost (no row) is.
func TestDeleteDead(t *testing.T) {
	q := fresh(t, "ops-deldead")
	ctx := tctx(t)
	const n = 2*requeueScan + 500
	ids := fillDead(t, q, n, func(i int) int64 { return int64(1000 + i/7) }, func(i int) string {
		if i >= 2100 && i < 2110 {
			return "needle " + strconv.Itoa(i)
		}
		return "hay"
	})
	// ids[2100] is in dead but its row says pending: not still dead.
	do(t, "HSET", q.keys.Job(ids[2100]), "state", "pending")
	// ids[2101]: a ghost, in dead without its row.
	do(t, "DEL", q.keys.Job(ids[2101]))
	_, err := q.DeleteDead(ctx, DeadFilter{ErrorPrefix: "none", Before: time.UnixMilli(1)})
	require.NoError(t, err)
	srv.ResetStats(t)
	got, err := q.DeleteDead(ctx, DeadFilter{ErrorPrefix: "needle"})
	require.NoError(t, err)
	require.Equal(t, 8, got, "8 needles with rows in state dead")
	require.Equal(t, int64(3), srv.CommandCalls(t, "evalsha"), "three pages of at most 1,000")
	for i, id := range ids {
		switch {
		case i == 2100:
			require.Equal(t, []State{StateDead}, where(t, q, id))
			require.Equal(t, "pending", row(t, q, id)["state"], "not dead: left alone")
		case i > 2101 && i < 2110:
			require.Empty(t, where(t, q, id), "job %d", i)
			require.Empty(t, row(t, q, id), "job %d: row deleted", i)
		case i == 2101:
			require.Equal(t, []State{StateDead}, where(t, q, id), "the ghost has no error: no match")
		default:
			require.Equal(t, []State{StateDead}, where(t, q, id), "job %d", i)
			require.Equal(t, "hay", row(t, q, id)["error"])
		}
	}
	// The ghost goes with the empty prefix; Limit and the time range bound
	// the rest.
	got, err = q.DeleteDead(ctx, DeadFilter{Before: time.UnixMilli(1001), Limit: 3})
	require.NoError(t, err)
	require.Equal(t, 3, got)
	for _, id := range ids[:3] {
		require.Empty(t, where(t, q, id))
	}
	require.Equal(t, []State{StateDead}, where(t, q, ids[3]))
	got, err = q.DeleteDead(ctx, DeadFilter{})
	require.NoError(t, err)
	require.Equal(t, n-8-3-1, got, "every one still dead, the ghost too; the pending-row one stays")
	require.Equal(t, ids[2100], do(t, "ZRANGE", q.keys.Dead, "0", "-1"))

	_, err = q.DeleteDead(ctx, DeadFilter{Limit: -1})
	require.ErrorIs(t, err, ErrArg)
}

// TestPayloadHeads: each id's payload size and first n bytes, in order;
// a payload over maxSize is sized but not read; no row is -1; nothing is
// written; bad arguments are ErrArg before anything is sent.
func TestPayloadHeads(t *testing.T) {
	q := fresh(t, "ops-heads")
	ctx := tctx(t)
	small, err := q.Enqueue(ctx, []byte("EMQ1 t=a:b\nbody"))
	require.NoError(t, err)
	big, err := q.Enqueue(ctx, make([]byte, 5000))
	require.NoError(t, err)
	empty, err := q.Enqueue(ctx, nil)
	require.NoError(t, err)
	none := q.ids.Next()
	before := row(t, q, small)
	got, err := q.PayloadHeads(ctx, []string{small, big, none, empty, small}, 6, 4096)
	require.NoError(t, err)
	require.Equal(t, []PayloadHead{
		{Size: 15, Head: []byte("EMQ1 t")}, {Size: 5000, Head: nil}, {Size: -1, Head: nil},
		{Size: 0, Head: nil}, {Size: 15, Head: []byte("EMQ1 t")},
	}, got)
	require.Equal(t, before, row(t, q, small))
	require.Empty(t, row(t, q, none), "no row made")
	for _, bad := range []struct {
		n   int
		max int64
	}{{0, 1}, {65537, 1}, {1, -1}} {
		_, err := q.PayloadHeads(ctx, []string{small}, bad.n, bad.max)
		require.ErrorIs(t, err, ErrArg)
	}
	_, err = q.PayloadHeads(ctx, []string{"nope"}, 1, 1)
	require.ErrorIs(t, err, ErrInvalidID)
}
