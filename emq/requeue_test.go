package emq

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRequeueEveryState: a dead job goes back to pending with its
// attempts and error kept, and its next claim's token follows its
// attempts; a job in any other state, or none, is ErrNotDead and nothing
// changes.
func TestRequeueEveryState(t *testing.T) {
	q := fresh(t, "ops-requeue")
	ctx := tctx(t)
	for _, s := range []State{StatePending, StateActive, StateDelayed, StateCompleted} {
		id, _ := inState(t, q, s)
		before, sets := row(t, q, id), where(t, q, id)
		require.ErrorIs(t, q.Requeue(ctx, id), ErrNotDead, "requeue of a %s job", s)
		require.Equal(t, before, row(t, q, id), "requeue of a %s job changed its row", s)
		require.Equal(t, sets, where(t, q, id))
	}
	require.ErrorIs(t, q.Requeue(ctx, q.ids.Next()), ErrNotDead, "requeue of no job")

	// Empty pending, so the requeued job is the next claimed.
	do(t, "DEL", q.keys.Pending)
	id, token := inState(t, q, StateDead)
	dead := row(t, q, id)
	require.Equal(t, "boom: "+id, dead["error"])
	require.NoError(t, q.Requeue(ctx, id))
	got := row(t, q, id)
	require.Equal(t, "pending", got["state"])
	require.Equal(t, dead["attempts"], got["attempts"], "attempts are the fencing token: kept")
	require.Equal(t, dead["error"], got["error"])
	require.Equal(t, []State{StatePending}, where(t, q, id))
	require.Equal(t, "0", score(t, q.keys.Pending, id))

	job, ok, err := q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, id, job.ID)
	require.Equal(t, token+1, job.Token)
	require.ErrorIs(t, q.Requeue(ctx, id), ErrNotDead, "a second requeue of a claimed job")
}

func TestRequeueBatch(t *testing.T) {
	q := fresh(t, "ops-requeue")
	ctx := tctx(t)
	a, _ := inState(t, q, StateDead)
	b, _ := inState(t, q, StateDead)
	p, _ := inState(t, q, StatePending)
	done, err := q.RequeueBatch(ctx, []string{a, p, b, a})
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, false}, done)
	for _, id := range []string{a, b, p} {
		require.Equal(t, []State{StatePending}, where(t, q, id))
	}
	_, err = q.RequeueBatch(ctx, []string{a, "JOB0KHTOWnGLu"})
	require.ErrorIs(t, err, ErrInvalidID)
}

// TestRequeueDeadFilter: the filter selects by error prefix and by time
// of death, [Since, Before), up to Limit, oldest death first; the rest
// stay dead, untouched.
func TestRequeueDeadFilter(t *testing.T) {
	q := fresh(t, "ops-requeue")
	ctx := tctx(t)
	const base = int64(1_700_000_000_000)
	// Job i died at base+i*1000 with error "timeout" (even) or "refused" (odd).
	ids := fillDead(t, q, 10, func(i int) int64 { return base + int64(i)*1000 },
		func(i int) string { return []string{"timeout after 5s", "refused"}[i%2] })
	requeued := func(want ...int) {
		t.Helper()
		for i, id := range ids {
			in := where(t, q, id)
			if len(want) > 0 && want[0] == i {
				want = want[1:]
				require.Equal(t, []State{StatePending}, in, "job %d", i)
				require.Equal(t, "pending", row(t, q, id)["state"])
			}
		}
		require.Empty(t, want)
	}

	n, err := q.RequeueDead(ctx, DeadFilter{ErrorPrefix: "timeout", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	requeued(0, 2)

	n, err = q.RequeueDead(ctx, DeadFilter{ErrorPrefix: "timeout", Since: time.UnixMilli(base + 5000), Before: time.UnixMilli(base + 8000)})
	require.NoError(t, err)
	require.Equal(t, 1, n) // job 6; 5 and 7 are refused, 8 is at Before
	requeued(0, 2, 6)

	// Sub-millisecond bounds round up: Since 3.5 s selects from 4 s on,
	// Before 4.0005 s still selects the job dead at 4 s.
	n, err = q.RequeueDead(ctx, DeadFilter{Since: time.UnixMilli(base + 3000).Add(500 * time.Microsecond), Before: time.UnixMilli(base + 4000).Add(500 * time.Microsecond)})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	requeued(0, 2, 4, 6)

	n, err = q.RequeueDead(ctx, DeadFilter{ErrorPrefix: "nothing matches"})
	require.NoError(t, err)
	require.Zero(t, n)

	n, err = q.RequeueDead(ctx, DeadFilter{})
	require.NoError(t, err)
	require.Equal(t, 6, n)
	requeued(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	require.Empty(t, do(t, "ZRANGE", q.keys.Dead, "0", "-1"))

	_, err = q.RequeueDead(ctx, DeadFilter{Limit: -1})
	require.ErrorIs(t, err, ErrArg)
}

// TestRequeueDeadBoundedPages: a dead set larger than one page is
// examined 1,000 ids per call; a match past the first pages is found,
// and the unmatched ids stay dead.
func TestRequeueDeadBoundedPages(t *testing.T) {
	q := fresh(t, "ops-requeue")
	ctx := tctx(t)
	const n = 2*requeueScan + 500
	ids := fillDead(t, q, n, func(i int) int64 { return int64(1000 + i/7) }, // ties in time: id order
		func(i int) string {
			if i >= 2100 && i < 2110 {
				return "needle " + strconv.Itoa(i)
			}
			return "hay"
		})
	// Warm the script cache, then count the calls.
	_, err := q.RequeueDead(ctx, DeadFilter{ErrorPrefix: "none", Before: time.UnixMilli(1)})
	require.NoError(t, err)
	srv.ResetStats(t)
	moved, err := q.RequeueDead(ctx, DeadFilter{ErrorPrefix: "needle"})
	require.NoError(t, err)
	require.Equal(t, 10, moved)
	require.Equal(t, int64(3), srv.CommandCalls(t, "evalsha"), "three pages of at most 1,000")
	for i, id := range ids {
		want := StateDead
		if i >= 2100 && i < 2110 {
			want = StatePending
		}
		require.Equal(t, []State{want}, where(t, q, id), "job %d", i)
	}
	dead, err := q.Count(ctx, StateDead)
	require.NoError(t, err)
	require.Equal(t, int64(n-10), dead)
}

// TestRequeueDeadCursorGone: when the cursor id leaves dead between two
// calls, the next call restarts at its time of death: ids may be
// examined twice, none is skipped.
func TestRequeueDeadCursorGone(t *testing.T) {
	q := fresh(t, "ops-requeue")
	ctx := tctx(t)
	ids := fillDead(t, q, 6, func(i int) int64 { return int64(100 + i/2) }, func(i int) string {
		return []string{"keep", "keep", "keep", "x", "x", "x"}[i]
	})
	call := func(afterID string, afterMS int64) requeuePage {
		t.Helper()
		o := getOp("dead_filter")
		defer putOp(o, nil)
		o.args.Key(q.keys.Dead)
		o.args.Key(q.keys.Pending)
		o.args.Key(q.keys.Base)
		for _, a := range []string{"requeue", "0", strconv.Itoa(maxScriptInt), "x", "100", "2", afterID, strconv.FormatInt(afterMS, 10)} {
			o.args.Arg(a)
		}
		var p requeuePage
		require.NoError(t, q.reaper.Eval(ctx, scriptDeadFilter, &o.args, p.read))
		return p
	}
	p := call("", 0) // examines ids 0, 1 (both kept)
	require.Equal(t, requeuePage{moved: 0, cursor: requeueCursor{ids[1], 100}, more: true}, p)
	// The cursor (id 1, dead at 100) is deleted: the next call starts at
	// the first id dead at or after 100, id 0 again, and so on.
	_, err := q.Delete(ctx, ids[1])
	require.NoError(t, err)
	p = call(p.cursor.id, p.cursor.ms)
	require.Equal(t, requeuePage{moved: 0, cursor: requeueCursor{ids[2], 101}, more: true}, p)
	p = call(p.cursor.id, p.cursor.ms)
	require.Equal(t, requeuePage{moved: 2, cursor: requeueCursor{ids[2], 101}, more: true}, p)
	p = call(p.cursor.id, p.cursor.ms)
	require.Equal(t, requeuePage{moved: 1, cursor: requeueCursor{ids[2], 101}, more: false}, p)
	for i, id := range ids {
		switch {
		case i == 1:
			require.Empty(t, where(t, q, id))
		case i < 3:
			require.Equal(t, []State{StateDead}, where(t, q, id), "job %d", i)
		default:
			require.Equal(t, []State{StatePending}, where(t, q, id), "job %d", i)
		}
	}
}

// TestRequeueDeadArgs: the script refuses malformed numbers with EMQARG,
// byte for byte, and writes nothing.
func TestRequeueDeadArgs(t *testing.T) {
	q := fresh(t, "ops-requeue")
	ids := fillDead(t, q, 1, func(int) int64 { return 5 }, func(int) string { return "" })
	for _, bad := range []struct {
		pos int
		val string
	}{{0, "move"}, {1, "-1"}, {2, "x"}, {4, "0"}, {5, "0"}, {7, "1.5"}, {4, ""}} {
		args := []string{"requeue", "0", "10", "", "1", "1", "", "0"} // action, since, before, prefix, limit, scan, after_id, after_ms
		args[bad.pos] = bad.val
		o := getOp("dead_filter")
		o.args.Key(q.keys.Dead)
		o.args.Key(q.keys.Pending)
		o.args.Key(q.keys.Base)
		for _, a := range args {
			o.args.Arg(a)
		}
		err := wrapErr("dead_filter", q.reaper.Eval(tctx(t), scriptDeadFilter, &o.args, nil))
		require.ErrorIs(t, err, ErrArg, "args %q", args)
		require.True(t, strings.HasPrefix(err.Error(), "EMQARG "), err.Error())
	}
	require.Equal(t, []State{StateDead}, where(t, q, ids[0]))
}
