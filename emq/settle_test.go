package emq

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/resp"
)

// enqueueN enqueues n jobs with payloads "p0".."p<n-1>" and returns their
// ids, oldest first.
func enqueueN(t *testing.T, q *Queue, n int) []string {
	t.Helper()
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte("p" + strconv.Itoa(i))
	}
	res, err := q.EnqueueBulk(tctx(t), payloads)
	require.NoError(t, err)
	ids := make([]string, n)
	for i, r := range res {
		require.NoError(t, r.Err)
		ids[i] = r.ID
	}
	return ids
}

// TestSettleClaimTransitions walks every transition of settle_claim and
// reads each back with plain commands: a claim alone; then, in one call,
// a completion that deletes its row, a completion whose row is kept, a
// retry to pending, to delayed and to dead, a release, a stale token, an
// id completed twice; and the claim of that same call, which takes the
// oldest pending first (the requeued and released jobs among them).
func TestSettleClaimTransitions(t *testing.T) {
	q := fresh(t, "settle")
	ctx := tctx(t)
	ids := enqueueN(t, q, 10)

	before := serverMillis(t)
	settled, jobs, err := q.SettleClaim(ctx, nil, 0, time.Minute, 8)
	require.NoError(t, err)
	require.Empty(t, settled)
	require.Len(t, jobs, 8)
	for i, j := range jobs {
		require.Equal(t, ids[i], j.ID)
		require.Equal(t, "p"+strconv.Itoa(i), string(j.Payload))
		require.EqualValues(t, 1, j.Token)
		require.Equal(t, map[string]string{"state": "active", "attempts": "1", "payload": "p" + strconv.Itoa(i)}, row(t, q, j.ID))
		dl := scoreInt(t, q.keys.Active, j.ID)
		require.True(t, dl >= before+60000 && dl <= serverMillis(t)+60000, "deadline %d", dl)
	}
	require.Equal(t, "2", do(t, "ZCARD", q.keys.Pending))
	require.Equal(t, "8", do(t, "ZCARD", q.keys.Active))

	do(t, "HSET", q.keys.Job(ids[4]), "attempts", "3") // so that max_attempts 3 kills it
	outcomes := []Outcome{
		{Kind: OutcomeRetry, ID: ids[2], Token: 1, MaxAttempts: 5, Error: "to pending"},
		{Kind: OutcomeComplete, ID: ids[0], Token: 1},
		{Kind: OutcomeRelease, ID: ids[5], Token: 1},
		{Kind: OutcomeComplete, ID: ids[1], Token: 1},
		{Kind: OutcomeRetry, ID: ids[3], Token: 1, Delay: time.Hour, MaxAttempts: 5, Error: "to delayed"},
		{Kind: OutcomeRetry, ID: ids[4], Token: 3, MaxAttempts: 3, Error: "to dead"},
		{Kind: OutcomeComplete, ID: ids[6], Token: 2},  // stale: its token is 1
		{Kind: OutcomeComplete, ID: ids[0], Token: 1},  // the second completion of ids[0]
		{Kind: OutcomeRelease, ID: ids[9], Token: 1},   // stale: never claimed
		{Kind: OutcomeRetry, ID: ids[7], Token: 0},     // stale
		{Kind: OutcomeComplete, ID: ids[7], Token: 1},  // completes
		{Kind: OutcomeRelease, ID: ids[7], Token: 1},   // stale: completed above
		{Kind: OutcomeRetry, ID: ids[1], Token: 1},     // stale: completed above
		{Kind: OutcomeRelease, ID: ids[2], Token: 1},   // stale: retried above
		{Kind: OutcomeComplete, ID: ids[8], Token: 10}, // stale
	}
	do(t, "ZADD", q.keys.Pending, "0", "JOB000000000Gh") // a ghost, oldest of all: dropped by the claim
	now := serverMillis(t)
	settled, jobs, err = q.SettleClaim(ctx, outcomes, 0, time.Minute, 3)
	require.NoError(t, err)
	require.Equal(t, []Settled{
		SettledRequeued, SettledCompleted, SettledReleased, SettledCompleted, SettledDelayed, SettledDead,
		SettledStale, SettledStale, SettledStale, SettledStale, SettledCompleted, SettledStale, SettledStale,
		SettledStale, SettledStale,
	}, settled)

	// Completed with retention 0: the rows are gone, the ids out of active.
	for _, id := range []string{ids[0], ids[1], ids[7]} {
		require.Equal(t, "0", do(t, "EXISTS", q.keys.Job(id)), id)
		require.Empty(t, score(t, q.keys.Active, id), id)
	}
	// Retried to pending (and claimed again by the same call, below),
	// delayed and dead, each with its error; attempts as they were.
	require.Equal(t, map[string]string{"state": "active", "attempts": "2", "payload": "p2", "error": "to pending"}, row(t, q, ids[2]))
	require.Equal(t, map[string]string{"state": "active", "attempts": "2", "payload": "p5"}, row(t, q, ids[5]))
	require.Equal(t, map[string]string{"state": "delayed", "attempts": "1", "payload": "p3", "error": "to delayed"}, row(t, q, ids[3]))
	due := scoreInt(t, q.keys.Delayed, ids[3])
	require.True(t, due >= now+3600000 && due <= serverMillis(t)+3600000, "due %d", due)
	require.Equal(t, map[string]string{"state": "dead", "attempts": "3", "payload": "p4", "error": "to dead"}, row(t, q, ids[4]))
	died := scoreInt(t, q.keys.Dead, ids[4])
	require.True(t, died >= now && died <= serverMillis(t), "died %d", died)
	// Stale: untouched, still leased.
	require.Equal(t, "active", row(t, q, ids[6])["state"])
	require.NotEmpty(t, score(t, q.keys.Active, ids[6]))
	require.Equal(t, "pending", row(t, q, ids[9])["state"])

	// The claim of the same call: the ghost dropped, then the oldest
	// pending, ids[2] (requeued: token 2) and ids[5] (released: attempts
	// kept at 1, so token 2), then ids[8], never claimed before.
	require.Len(t, jobs, 3)
	for i, want := range []struct {
		id    string
		token int64
	}{{ids[2], 2}, {ids[5], 2}, {ids[8], 1}} {
		require.Equal(t, want.id, jobs[i].ID)
		require.Equal(t, want.token, jobs[i].Token)
		require.Equal(t, "active", row(t, q, want.id)["state"])
		require.Equal(t, strconv.FormatInt(want.token, 10), row(t, q, want.id)["attempts"])
		require.NotEmpty(t, score(t, q.keys.Active, want.id))
	}
	require.Equal(t, []string{ids[9]}, strings.Fields(do(t, "ZRANGE", q.keys.Pending, "0", "-1")))
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Job("JOB000000000Gh")), "no row minted for the ghost")

	// A completion with retention keeps the row, completed, expiring.
	settled, jobs, err = q.SettleClaim(ctx, []Outcome{{Kind: OutcomeComplete, ID: ids[6], Token: 1}}, time.Hour, time.Minute, 0)
	require.NoError(t, err)
	require.Equal(t, []Settled{SettledCompleted}, settled)
	require.Empty(t, jobs, "n = 0 claims nothing")
	require.Equal(t, "completed", row(t, q, ids[6])["state"])
	pttl, _ := strconv.ParseInt(do(t, "PTTL", q.keys.Job(ids[6])), 10, 64)
	require.True(t, pttl > 3500000 && pttl <= 3600000, "pttl %d", pttl)
	require.Empty(t, score(t, q.keys.Active, ids[6]))
}

// TestSettleClaimPaused: a paused queue settles but claims nothing.
func TestSettleClaimPaused(t *testing.T) {
	q := fresh(t, "settle")
	ctx := tctx(t)
	ids := enqueueN(t, q, 3)
	_, jobs, err := q.SettleClaim(ctx, nil, 0, time.Minute, 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.NoError(t, q.Pause(ctx))
	settled, jobs, err := q.SettleClaim(ctx, []Outcome{{Kind: OutcomeComplete, ID: ids[0], Token: 1}}, 0, time.Minute, 2)
	require.NoError(t, err)
	require.Equal(t, []Settled{SettledCompleted}, settled)
	require.Empty(t, jobs)
	require.Equal(t, "2", do(t, "ZCARD", q.keys.Pending))
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Job(ids[0])))
}

// TestSettleClaimArgs: malformed arguments are refused, host-side before
// anything is sent, or by the script (EMQARG) before anything is written.
func TestSettleClaimArgs(t *testing.T) {
	q := fresh(t, "settle")
	ctx := tctx(t)
	ids := enqueueN(t, q, 1)
	for _, c := range []struct {
		outcomes       []Outcome
		retention      time.Duration
		lease          time.Duration
		n              int
		wantInvalidID  bool
		wantArgMessage string
	}{
		{outcomes: []Outcome{{Kind: OutcomeComplete, ID: "nope"}}, lease: time.Second, wantInvalidID: true},
		{outcomes: []Outcome{{Kind: 9, ID: ids[0]}}, lease: time.Second, wantArgMessage: "Outcome.Kind"},
		{outcomes: []Outcome{{Kind: OutcomeRetry, ID: ids[0], MaxAttempts: -1}}, lease: time.Second, wantArgMessage: "Outcome.MaxAttempts"},
		{lease: time.Second, n: -1, wantArgMessage: "n"},
		{lease: time.Second, retention: -1, wantArgMessage: "retention"},
		{lease: time.Microsecond, wantArgMessage: "lease"},
	} {
		_, _, err := q.SettleClaim(ctx, c.outcomes, c.retention, c.lease, c.n)
		if c.wantInvalidID {
			require.ErrorIs(t, err, ErrInvalidID)
			continue
		}
		var ae *ArgError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, c.wantArgMessage, ae.Arg)
	}

	// The script's own checks, with arguments the verb would never send.
	keys := []string{q.keys.Pending, q.keys.Active, q.keys.Delayed, q.keys.Dead, q.keys.Base}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"0", "1", "0", "0", "0", "0"}, "EMQARG lease_ms must be an integer >= 1"},
		{[]string{"1000", "-1", "0", "0", "0", "0"}, "EMQARG n must be an integer >= 0"},
		{[]string{"1000", "1", "1.5", "0", "0", "0"}, "EMQARG retention_ms must be an integer >= 0"},
		{[]string{"1000", "1", "0", "x", "0", "0"}, "EMQARG nc must be an integer >= 0"},
		{[]string{"1000", "1", "0", "0", "-2", "0"}, "EMQARG nr must be an integer >= 0"},
		{[]string{"1000", "1", "0", "0", "0", ""}, "EMQARG nx must be an integer >= 0"},
		{[]string{"1000", "1", "0", "1", "0", "0", ids[0]}, "EMQARG settle_claim takes 6 + 2*nc + 5*nr + 2*nx arguments"},
		{[]string{"1000", "1", "0", "1", "0", "0", ids[0], "1", "extra"}, "EMQARG settle_claim takes 6 + 2*nc + 5*nr + 2*nx arguments"},
		{[]string{"1000", "1", "0", "0", "1", "0", ids[0], "1", "-1", "3", "e"}, "EMQARG delay_ms must be an integer >= 0"},
		{[]string{"1000", "1", "0", "0", "1", "0", ids[0], "1", "0", "1e99", "e"}, "EMQARG max_attempts must be an integer >= 0"},
	} {
		o := getOp("settle_claim")
		for _, k := range keys {
			o.args.Key(k)
		}
		for _, a := range c.args {
			o.args.Arg(a)
		}
		err := wrapErr("settle_claim", q.exec.Eval(ctx, scriptSettleClaim, &o.args, func(resp.Value) error { return nil }))
		require.ErrorIs(t, err, ErrArg, "%v", c.args)
		require.EqualError(t, err, c.want, "%v", c.args)
	}
	// Nothing was written: the one job is still pending, unclaimed.
	require.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "p0"}, row(t, q, ids[0]))
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Active))
}

// TestSettleClaimTokenText: as every fenced transition, the token holds
// only as the exact decimal text of attempts.
func TestSettleClaimTokenText(t *testing.T) {
	q := fresh(t, "settle")
	ctx := tctx(t)
	ids := enqueueN(t, q, 1)
	_, jobs, err := q.SettleClaim(ctx, nil, 0, time.Minute, 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	keys := []string{q.keys.Pending, q.keys.Active, q.keys.Delayed, q.keys.Dead, q.keys.Base}
	for _, tok := range []string{"01", "1.0", " 1", "1e0", "+1", "0x1", ""} {
		o := getOp("settle_claim")
		for _, k := range keys {
			o.args.Key(k)
		}
		for _, a := range []string{"1000", "0", "0", "1", "0", "0", ids[0], tok} {
			o.args.Arg(a)
		}
		var got string
		err := q.exec.Eval(ctx, scriptSettleClaim, &o.args, func(v resp.Value) error { got = v.String(); return nil })
		require.NoError(t, err)
		require.Contains(t, got, "0", "token %q", tok)
		require.Equal(t, "active", row(t, q, ids[0])["state"], "token %q completed the job", tok)
	}
	// A row whose attempts is not canonical text holds no token written
	// as that text, but does hold the canonical one, as complete's rule.
	do(t, "HSET", q.keys.Job(ids[0]), "attempts", "01")
	settled, _, err := q.SettleClaim(ctx, []Outcome{{Kind: OutcomeRelease, ID: ids[0], Token: 1}}, 0, time.Minute, 0)
	require.NoError(t, err)
	require.Equal(t, []Settled{SettledReleased}, settled)
	require.Equal(t, "pending", row(t, q, ids[0])["state"])
}

// TestSettleClaimMatchesCoreVerbs runs the same outcomes through the core
// verbs (complete, retry) and through settle_claim on two queues, and
// compares the rows and sets they leave.
func TestSettleClaimMatchesCoreVerbs(t *testing.T) {
	q := fresh(t, "core")
	q2, err := Open(tctx(t), q.sender, "ext")
	require.NoError(t, err)
	ctx := tctx(t)
	for _, qq := range []*Queue{q, q2} {
		enqueueN(t, qq, 6)
		jobs, err := qq.ClaimBatch(ctx, time.Minute, 6)
		require.NoError(t, err)
		require.Len(t, jobs, 6)
		outcomes := []Outcome{
			{Kind: OutcomeComplete, ID: jobs[0].ID, Token: 1},
			{Kind: OutcomeComplete, ID: jobs[1].ID, Token: 2},
			{Kind: OutcomeRetry, ID: jobs[2].ID, Token: 1, MaxAttempts: 1, Error: "dead"},
			{Kind: OutcomeRetry, ID: jobs[3].ID, Token: 1, MaxAttempts: 2, Error: "again"},
			{Kind: OutcomeRetry, ID: jobs[4].ID, Token: 1, MaxAttempts: 2, Delay: time.Minute, Error: "later"},
		}
		if qq == q {
			for _, c := range outcomes {
				if c.Kind == OutcomeComplete {
					err := q.Complete(ctx, c.ID, c.Token, 0)
					require.True(t, err == nil || errors.Is(err, ErrStale), "%v", err)
					continue
				}
				_, err := q.Retry(ctx, c.ID, c.Token, c.Delay, c.MaxAttempts, c.Error)
				require.NoError(t, err)
			}
			continue
		}
		settled, _, err := q2.SettleClaim(ctx, outcomes, 0, time.Minute, 0)
		require.NoError(t, err)
		require.Equal(t, []Settled{SettledCompleted, SettledStale, SettledDead, SettledRequeued, SettledDelayed}, settled)
	}
	// What each queue holds, by payload: ids and times differ.
	dump := func(qq *Queue) string {
		s := ""
		for _, st := range []State{StatePending, StateActive, StateDelayed, StateDead} {
			page, err := qq.Browse(ctx, st, 0, 10)
			require.NoError(t, err)
			for _, e := range page {
				s += fmt.Sprintf("%s %s state=%s attempts=%d error=%q;", st, e.Payload, e.State, e.Attempts, e.Error)
			}
		}
		return s + do(t, "EVAL", "return #redis.call('KEYS', ARGV[1])", "0", qq.keys.JobPrefix+"*") + " rows"
	}
	require.Equal(t, dump(q), dump(q2))
	t.Log(dump(q2))
}

// TestSettleClaimCompletedThenClaimed: an id completed (its row kept) and,
// the invariant broken by hand, also pending, is claimed again by the same
// call and stays in active, as if it had left active first.
func TestSettleClaimCompletedThenClaimed(t *testing.T) {
	q := fresh(t, "settle")
	ctx := tctx(t)
	ids := enqueueN(t, q, 2)
	_, jobs, err := q.SettleClaim(ctx, nil, 0, time.Minute, 2)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	do(t, "ZADD", q.keys.Pending, "0", ids[0])
	settled, jobs, err := q.SettleClaim(ctx, []Outcome{
		{Kind: OutcomeComplete, ID: ids[0], Token: 1},
		{Kind: OutcomeComplete, ID: ids[1], Token: 1},
	}, time.Hour, time.Minute, 5)
	require.NoError(t, err)
	require.Equal(t, []Settled{SettledCompleted, SettledCompleted}, settled)
	require.Len(t, jobs, 1)
	require.Equal(t, ids[0], jobs[0].ID)
	require.EqualValues(t, 2, jobs[0].Token)
	require.Equal(t, "active", row(t, q, ids[0])["state"])
	require.NotEmpty(t, score(t, q.keys.Active, ids[0]), "claimed again: in active")
	require.Empty(t, score(t, q.keys.Active, ids[1]))
	require.Equal(t, "completed", row(t, q, ids[1])["state"])
}
