package emq

import (
	"context"
	"testing"
	"time"
)

// TestAllocBudgets holds the hot verbs to their allocation budgets, in
// steady state, against the real server: Enqueue allocates the id string;
// Claim the job's id and payload; Complete nothing; a SettleClaim round
// nothing to settle and two to claim (the ids, the payloads).
func TestAllocBudgets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are not meaningful under -race or -short")
	}
	q := fresh(t, "allocs")
	// A context that cannot end: a cancellable one costs the connection
	// layer allocations of its own (context.AfterFunc), not this package's.
	ctx := context.Background()
	payload := []byte("a payload of a few bytes")
	for range 100 { // warm the pools and the script cache
		if _, err := q.Enqueue(ctx, payload); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, budget float64, f func()) {
		t.Helper()
		allocBudget(t, name, 200, budget, f)
	}
	check("Enqueue", 1, func() {
		if _, err := q.Enqueue(ctx, payload); err != nil {
			t.Fatal(err)
		}
	})
	var job Job
	check("Claim", 2, func() {
		var err error
		if job, _, err = q.Claim(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	})
	// One job per Complete measured (AllocsPerRun calls f once more than
	// its runs), so that each Complete completes.
	if _, err := q.EnqueueBulk(ctx, make([][]byte, 300)); err != nil {
		t.Fatal(err)
	}
	jobs, err := q.ClaimBatch(ctx, time.Minute, 500)
	if err != nil || len(jobs) < 201 {
		t.Fatalf("ClaimBatch: %d jobs, %v", len(jobs), err)
	}
	i := 0
	check("Complete", 0, func() {
		j := jobs[i]
		i++
		if err := q.Complete(ctx, j.ID, j.Token, 0); err != nil {
			t.Fatal(err)
		}
	})
	_ = job

	// A worker's round: settling costs nothing; claiming costs the claimed
	// ids' one string and their payloads' one slab, into a reused slice.
	if _, err := q.EnqueueBulk(ctx, make([][]byte, 600)); err != nil {
		t.Fatal(err)
	}
	jobs, err = q.ClaimBatch(ctx, time.Minute, 250)
	if err != nil || len(jobs) < 201 {
		t.Fatalf("ClaimBatch: %d jobs, %v", len(jobs), err)
	}
	outcomes := make([]Outcome, 1)
	var settled []Settled
	var got []Job
	i = 0
	check("SettleClaim, settling", 0, func() {
		outcomes[0] = Outcome{Kind: OutcomeComplete, ID: jobs[i].ID, Token: jobs[i].Token}
		i++
		if settled, got, err = q.AppendSettleClaim(ctx, settled[:0], got[:0], outcomes, 0, time.Minute, 0); err != nil || settled[0] != SettledCompleted {
			t.Fatal(settled, err)
		}
	})
	check("SettleClaim, claiming one", 2, func() {
		if settled, got, err = q.AppendSettleClaim(ctx, settled[:0], got[:0], nil, 0, time.Minute, 1); err != nil || len(got) != 1 {
			t.Fatal(got, err)
		}
	})
}

// allocBudget fails t when f allocates more than budget per call,
// averaged over runs calls (testing.AllocsPerRun), and logs the count.
func allocBudget(t *testing.T, name string, runs int, budget float64, f func()) {
	t.Helper()
	got := testing.AllocsPerRun(runs, f)
	t.Logf("%s: %.1f allocs per call", name, got)
	if got > budget {
		t.Errorf("%s: %.1f allocs per call, budget %.0f", name, got, budget)
	}
}
