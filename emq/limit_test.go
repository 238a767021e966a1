package emq

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// limited opens a fresh queue with n jobs under limits l.
func limited(t *testing.T, name string, n int, l Limits) *Queue {
	t.Helper()
	q := fresh(t, name)
	for range n {
		if _, err := q.Enqueue(tctx(t), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.SetLimits(tctx(t), l); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestLimitActive: with limit_active N, claims stop at N jobs in active
// however many are asked for, and resume as jobs leave active (completed
// by the core script).
func TestLimitActive(t *testing.T) {
	q := limited(t, "lq", 10, Limits{Active: 3})
	ctx := tctx(t)
	if l, err := q.Limits(ctx); err != nil || l != (Limits{Active: 3}) {
		t.Fatal(l, err)
	}
	jobs, wait, err := q.ClaimLimited(ctx, time.Minute, 5)
	if err != nil || len(jobs) != 3 || wait != 0 {
		t.Fatalf("%d jobs, wait %v, %v", len(jobs), wait, err)
	}
	if more, _, err := q.ClaimLimited(ctx, time.Minute, 5); err != nil || len(more) != 0 {
		t.Fatalf("past the limit: %d, %v", len(more), err)
	}
	j := jobs[0]
	if got := core(t, "complete", []string{q.keys.Active, q.keys.Job(j.ID)}, j.ID, strconv.FormatInt(j.Token, 10), "0"); got != "1" {
		t.Fatal(got)
	}
	if more, _, err := q.ClaimLimited(ctx, time.Minute, 5); err != nil || len(more) != 1 {
		t.Fatalf("after a completion: %d, %v", len(more), err)
	}
	// The claimed rows are ordinary: the core complete settles them.
	if err := q.Complete(ctx, jobs[1].ID, jobs[1].Token, 0); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, Limits{}); err != nil {
		t.Fatal(err)
	}
	if more, _, err := q.ClaimLimited(ctx, time.Minute, 100); err != nil || len(more) != 6 {
		t.Fatalf("no limit: %d, %v", len(more), err)
	}
}

// TestLimitRate: with rate_n N per rate_ms, a window holds at most N
// claims; the wait the claim reports is when the next is admitted, and
// then it is.
func TestLimitRate(t *testing.T) {
	q := limited(t, "lr", 20, Limits{Rate: 4, Per: 300 * time.Millisecond})
	ctx := tctx(t)
	jobs, wait, err := q.ClaimLimited(ctx, time.Minute, 10)
	if err != nil || len(jobs) != 4 || wait <= 0 || wait > 300*time.Millisecond {
		t.Fatalf("%d jobs, wait %v, %v", len(jobs), wait, err)
	}
	more, wait2, err := q.ClaimLimited(ctx, time.Minute, 10)
	if err != nil || len(more) != 0 || wait2 <= 0 || wait2 > wait {
		t.Fatalf("within the window: %d jobs, wait %v, %v", len(more), wait2, err)
	}
	time.Sleep(wait2) // the window's own length: what is under test
	more, _, err = q.ClaimLimited(ctx, time.Minute, 10)
	if err != nil || len(more) != 4 {
		t.Fatalf("after the wait: %d jobs, %v", len(more), err)
	}
	if n := do(t, "ZCARD", q.keys.Base+TypeRate); n != "4" {
		t.Fatalf("rate set holds %s", n)
	}
}

// TestLimitBadInput: malformed arguments and malformed meta limits are
// EMQARG before anything is written; the host refuses bad Limits before
// sending.
func TestLimitBadInput(t *testing.T) {
	q := fresh(t, "lb")
	ctx := tctx(t)
	id, _ := q.Enqueue(ctx, []byte("x"))
	for _, l := range []Limits{{Active: -1}, {Rate: 1}, {Per: time.Second}, {Rate: -1, Per: time.Second}} {
		if err := q.SetLimits(ctx, l); !errors.Is(err, ErrArg) {
			t.Fatalf("%+v: %v", l, err)
		}
	}
	for _, args := range [][]string{{"1", "0", "0", "9"}, {"x", "0", "0"}, {"0", "1", "0"}, {"-1", "0", "0"}} {
		_, err := srv.Do(append([]string{"EVAL", source("set_limits"), "1", q.keys.Meta}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "EMQARG") {
			t.Fatalf("set_limits %v: %v", args, err)
		}
	}
	if do(t, "EXISTS", q.keys.Meta) != "0" {
		t.Fatal("meta written by a refused call")
	}
	keys := []string{q.keys.Pending, q.keys.Active, q.keys.Base}
	for _, args := range [][]string{{"0", "1"}, {"1000", "0"}, {"1000", "1.5"}} {
		_, err := srv.Do(append(append([]string{"EVAL", source("claim_limited"), "3"}, keys...), args...)...)
		if err == nil || !strings.Contains(err.Error(), "EMQARG") {
			t.Fatalf("claim_limited %v: %v", args, err)
		}
	}
	do(t, "HSET", q.keys.Meta, MetaRateN, "lots")
	if _, _, err := q.ClaimLimited(ctx, time.Minute, 1); !errors.Is(err, ErrArg) {
		t.Fatalf("malformed meta: %v", err)
	}
	if score(t, q.keys.Pending, id) != "0" || row(t, q, id)["state"] != "pending" {
		t.Fatal("the job moved under a refused claim")
	}
	if _, _, err := q.ClaimLimited(ctx, 0, 1); !errors.Is(err, ErrArg) {
		t.Fatal(err)
	}
}

// TestSettleClaimLimited: a worker's round under limits — the outcomes
// settle first, so the jobs they free from active count for the claim in
// the same round trip; settle-only and claim-only rounds work too.
func TestSettleClaimLimited(t *testing.T) {
	q := limited(t, "lsc", 6, Limits{Active: 2})
	ctx := tctx(t)
	settled, jobs, wait, err := q.AppendSettleClaimLimited(ctx, nil, nil, nil, 0, time.Minute, 5)
	if err != nil || len(settled) != 0 || len(jobs) != 2 || wait != 0 {
		t.Fatalf("claim only: %v %d %v %v", settled, len(jobs), wait, err)
	}
	outcomes := []Outcome{{Kind: OutcomeComplete, ID: jobs[0].ID, Token: jobs[0].Token}, {Kind: OutcomeRetry, ID: jobs[1].ID, Token: jobs[1].Token, MaxAttempts: 1, Error: "x"}}
	settled, next, _, err := q.AppendSettleClaimLimited(ctx, nil, nil, outcomes, 0, time.Minute, 5)
	if err != nil || len(settled) != 2 || settled[0] != SettledCompleted || settled[1] != SettledDead || len(next) != 2 {
		t.Fatalf("round: %v %d %v", settled, len(next), err)
	}
	settled, none, _, err := q.AppendSettleClaimLimited(ctx, nil, nil, []Outcome{{Kind: OutcomeRelease, ID: next[0].ID, Token: next[0].Token}}, 0, time.Minute, 0)
	if err != nil || len(settled) != 1 || settled[0] != SettledReleased || len(none) != 0 {
		t.Fatalf("settle only: %v %d %v", settled, len(none), err)
	}
	if _, _, _, err := q.AppendSettleClaimLimited(ctx, nil, nil, nil, 0, time.Minute, -1); !errors.Is(err, ErrArg) {
		t.Fatal(err)
	}
}
